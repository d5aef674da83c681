#include "start_gate.h"

void (*_Atomic d9a_start_gate)(void);
