/* Task dumps: the stack of a task at its suspension point (to be implemented). */
#include "dial9/dial9.h"

void d9__task_suspend(uint64_t task_id) { (void)task_id; }
