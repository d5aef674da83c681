/* The program `dial9 diff`'s recorded test records (tests/scripts/test_diff_recorded.sh): four
 * request handlers polled in rounds on one worker, each under a spawn location named after it.
 * handle_lookup comes from one of two files, so the program is built twice: lookup_fast.c
 * (the base) and lookup_slow.c (the same work plus 2 ms of CPU per call). */
#ifndef D9_TESTS_DIFF_WORKLOAD_H
#define D9_TESTS_DIFF_WORKLOAD_H

#include <stdint.h>

/* A few microseconds of work that the compiler cannot drop: `state` carries it on. */
uint64_t workload_work(uint64_t state, unsigned iterations);

/* The handler whose cost differs between the two builds. */
uint64_t handle_lookup(uint64_t state);

#endif
