/* handle_lookup of the slower build (workload.h): the base's work, then 2 ms more of this
 * thread's CPU time, counted on its CPU clock so a busy machine makes it longer, never shorter. */
#include <time.h>

#include "workload.h"

static uint64_t thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t handle_lookup(uint64_t state) {
    state = workload_work(state, 2000);
    uint64_t until = thread_cpu_ns() + 2000000;
    while (thread_cpu_ns() < until) state = workload_work(state, 100);
    return state;
}
