/* Story 2: a global mutex in the request path.
 *
 * Four libuv loops serve requests; each request updates a shared table under one
 * process-wide pthread mutex, holding it for 200 us. Four loops but one lock: at any moment
 * at most one loop makes progress, the others sleep in futex() inside their polls. The first
 * quarter of the run uses one lock per loop instead (the fix), for comparison.
 *
 * The trace shows polls far longer than the CPU they use: SchedSwitchEvents (switch-outs
 * that are not preemptions) inside the polls and, with context-switch stacks, futex_wait
 * under pthread_mutex_lock called from update_shared_table. Both come from the kernel sources,
 * on by default (DIAL9_SCHEDULE_PROFILE_ENABLED).
 *
 * See docs/stories/2-global-mutex.md.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "story_kit.h"

#define LOOPS 4
#define HOLD_NS (200 * 1000ull)

typedef struct shared_table {
    pthread_mutex_t global_lock;
    pthread_mutex_t loop_lock[LOOPS];
    atomic_bool use_global;
    uint64_t hits[LOOPS];
} shared_table;

static shared_table table = {.global_lock = PTHREAD_MUTEX_INITIALIZER};

/* The request's critical section: 200 us of work on shared state. */
__attribute__((noinline)) static void update_shared_table(unsigned loop_index) {
    pthread_mutex_t *lock = atomic_load(&table.use_global) ? &table.global_lock
                                                           : &table.loop_lock[loop_index];
    pthread_mutex_lock(lock);
    story_spin_ns(HOLD_NS);
    table.hits[loop_index]++;
    pthread_mutex_unlock(lock);
}

static void handle_request(unsigned loop_index, void *arg) { update_shared_table(loop_index); }

int main(int argc, char **argv) {
    story_options opt;
    story_begin(argc, argv, "story 2: a global mutex in the request path", 3, &opt);
    for (int i = 0; i < LOOPS; i++) pthread_mutex_init(&table.loop_lock[i], NULL);

    story_server *srv = story_server_start(LOOPS, "api", handle_request, NULL, NULL);
    story_load load = {.clients = 8, .seconds = opt.seconds / 4, .pause_ms = 1};
    story_latency sharded, global;
    printf("story 2: %d loops, 8 clients; a 200 us critical section per request:\n"
           "         %.2f s with one lock per loop, then %.2f s with one global lock\n",
           LOOPS, load.seconds, opt.seconds - load.seconds);
    story_load_run(story_server_port(srv), &load, &sharded);
    atomic_store(&table.use_global, true);
    load.seconds = opt.seconds - load.seconds;
    story_load_run(story_server_port(srv), &load, &global);
    story_server_stop(srv);

    story_latency_print("per-loop", &sharded);
    story_latency_print("global", &global);
    printf("          (requests per second: %.0f with per-loop locks, %.0f with the global lock)\n",
           (double)sharded.requests / (opt.seconds / 4), (double)global.requests / (opt.seconds * 3 / 4));
    story_end();
    return global.requests > 0 ? 0 : 1;
}
