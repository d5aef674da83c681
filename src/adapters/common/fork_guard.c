/* fork() while another thread registers a handle, resolves a callback's name or instruments a
 * loop would leave the child a lock no thread of it will release (and perhaps a half-moved
 * side-table shard): the child's first registration on its loop would hang. A program that
 * forks without exec and keeps its loop (pre-fork servers) must never pay for being recorded
 * with that. The prepare handler takes every lock of this adapter library, in the order the
 * code nests them: side-table shards (whose bulk walks call back into the others), the loop
 * registry, the callback-name cache (which interns names in the core's registry, whose
 * guard, src/core/fork_guard.c, is registered first so that its prepare runs last). */
#include <pthread.h>
#include <stdbool.h>

#include "callback_names.h"
#include "loop_registry.h"
#include "object_table.h"

static void hold_all(void) {
    d9a_table_fork_prepare();
    d9a_loops_fork_hold(true);
    d9a_names_fork_hold(true);
}

static void release_all(void) {
    d9a_names_fork_hold(false);
    d9a_loops_fork_hold(false);
    d9a_table_fork_release();
}

/* 160: after the core's guard (150), see above */
__attribute__((constructor(160))) static void install_fork_guard(void) {
    pthread_atfork(hold_all, release_all, release_all);
}
