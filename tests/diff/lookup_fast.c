/* handle_lookup of the base build (workload.h). */
#include "workload.h"

uint64_t handle_lookup(uint64_t state) { return workload_work(state, 2000); }
