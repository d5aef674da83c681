/* --instructions N: the workload bench/callgrind.sh runs twice under callgrind. Everything
 * but the N pairs is the same in both runs, so the difference in instructions divided by
 * the difference in events is the cost of one event. Pairs go in chunks with a flush between,
 * so no event is dropped (callgrind runs the threads one at a time, and slowly). The pairs are
 * polls, or park/unpark pairs with D9_BENCH_PAIRS=park (at the default schedstat resolution
 * nearly all of them unread, the common case of a busy loop), or span begin/end pairs with
 * D9_BENCH_PAIRS=span, or a poll's end and the next one's begin in one call with
 * D9_BENCH_PAIRS=fused (d9_poll_end_begin: a nested callback's entry or exit), or a task's
 * spawn with its object and its terminate with D9_BENCH_PAIRS=spawn (three events a pair: a
 * libuv request's, as the adapter records a write), or the libuv demo server's request with
 * D9_BENCH_PAIRS=request (examples/uv-server: 9 events a pair, see request_events; 14 as the
 * adapter made them on 2026-12-06 with request_split), or a park,
 * then its unpark with the readiness wake of one task its poller returned: in one call
 * (d9_unpark_wake_ready) with D9_BENCH_PAIRS=unparkwake, as two (d9_unpark, d9_wake_ready)
 * with D9_BENCH_PAIRS=unparkwake_split; three events each; or a memcached request's loop
 * thread as the shim and the libevent adapter record it with D9_BENCH_PAIRS=mcrequest, its poll's
 * end and the park after it in one call (d9__poll_end_park), as two with mcrequest_split (five
 * events each, see mc_request_events). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define PAIRS_PER_FLUSH 8192
#define REQUEST_EVENTS 9
#define REQUEST_EVENTS_SPLIT 14

/* What the libuv adapter and examples/uv-server record for one request on their loop (its
 * trace: `dial9 dump`): the loop wakes (unpark, the ready wake), the connection's alloc and read
 * callbacks, one poll, begin the request's span and submit the answer's write; the loop's next
 * iteration runs the write's callback, a poll of the connection (the write completed before the
 * loop parked: its spawn, deferred to the park, never comes), which ends the span, and the loop
 * parks. In the adapter's calls (thread_state.h): the unpark and the one ready wake are owed to
 * the first callback's poll, one call with it (d9__unpark_wake_ready_poll_begin); the alloc
 * callback's poll goes on into the read's (d9a_poll_exit_into); the read's end is owed to the
 * write callback's begin; the write callback's end is owed to the park, one call with it
 * (d9__poll_end_park). 9 events in 5 hook calls. `split`: the calls of 2026-12-06 (the unpark
 * apart from the poll, the alloc callback a poll of its own, the write a task of its own:
 * spawned with its object, its end and its terminate apart at the callback's return, then the
 * park), 14 events in 10. */
static void request_events(uint64_t i, const d9_loc *where, const d9_loc *span, void *write_req, bool split) {
    uint64_t conn = 1;
    if (!split) {
        d9__unpark_wake_ready_poll_begin(conn, conn, where); /* recording: the adapter tests it */
        d9_span_begin(span, i + 1);
        d9_poll_end_begin(conn, where); /* the write's callback, a poll of the connection */
        d9_span_end(span, i + 1);
        d9__poll_end_park();
        return;
    }
    uint64_t write = d9_task_id_new();
    d9_unpark_wake_ready(conn);
    d9_poll_begin(conn, where);
    d9_poll_end_begin(conn, where); /* the read callback's poll after the alloc's */
    d9_span_begin(span, i + 1);
    d9_task_spawn_object(write, where, write_req);
    d9_poll_end_begin(write, where);
    d9_span_end(span, i + 1);
    d9_poll_end();
    d9_task_terminate(write);
    d9_park();
}

/* What the shim and the libevent adapter record for one memcached `get` on its worker's loop:
 * the poller returns the connection ready (unpark and its wake, owed to the callback's poll: one
 * call with its begin), the connection's callback is its poll, and the loop parks again, the
 * poll's end owed to that park (thread_state.h); `split`: the calls of 2026-12-06 and before
 * (the unpark with its wake, the begin, the end and the park apart). */
static void mc_request_events(uint64_t conn, const d9_loc *where, bool split) {
    if (split) {
        d9_unpark_wake_ready(conn);
        d9_poll_begin(conn, where);
        d9_poll_end();
        d9_park();
    } else { /* recording: the adapters test it before */
        d9__unpark_wake_ready_poll_begin(conn, conn, where);
        d9__poll_end_park();
    }
}

int bench_instructions(const bench_opts *o, uint64_t pairs) {
    char *dir = bench_make_dir(o->scratch, "instructions");
    if (!dir || bench_start(dir, BENCH_SCHEDSTAT_DEFAULT) != 0) return 1;
    d9_worker_begin("bench", 0);
    const d9_loc *where = D9_HERE;
    const char *kind = getenv("D9_BENCH_PAIRS");
    bool parks = kind && strcmp(kind, "park") == 0;
    bool spans = kind && strcmp(kind, "span") == 0;
    bool fused = kind && strcmp(kind, "fused") == 0;
    bool spawns = kind && strcmp(kind, "spawn") == 0;
    bool requests_split = kind && strcmp(kind, "request_split") == 0;
    bool requests = requests_split || (kind && strcmp(kind, "request") == 0);
    bool unpark_wake = kind && strcmp(kind, "unparkwake") == 0;
    bool unpark_wake_split = kind && strcmp(kind, "unparkwake_split") == 0;
    bool mc_split = kind && strcmp(kind, "mcrequest_split") == 0;
    bool mc = mc_split || (kind && strcmp(kind, "mcrequest") == 0);
    uint64_t per_pair = spawns || unpark_wake || unpark_wake_split ? 3 : requests_split ? REQUEST_EVENTS_SPLIT : requests ? REQUEST_EVENTS : mc ? 5 : 2;
    void *object = spawns || requests ? malloc(64) : NULL; /* a request's address, from the heap as the adapters' */
    if (fused) d9_poll_begin(1, where);
    if (mc || requests) d9_park(); /* each request begins with the unpark of the park before */
    const d9_loc *span = D9_SPAN_NAME("bench_span");
    for (uint64_t i = 0; i < pairs; i++) {
        if (i > 0 && i % (PAIRS_PER_FLUSH * 2 / per_pair) == 0) d9_flush(); /* as many events a flush */
        if (parks) {
            d9_park();
            d9_unpark();
        } else if (unpark_wake) {
            d9_park();
            d9_unpark_wake_ready((i & 63) + 1);
        } else if (unpark_wake_split) {
            d9_park();
            d9_unpark();
            d9_wake_ready((i & 63) + 1);
        } else if (spans) {
            d9_span_begin(span, i);
            d9_span_end(span, i);
        } else if (fused) {
            d9_poll_end_begin((i & 63) + 1, where);
        } else if (requests) {
            request_events(i, where, span, object, requests_split);
        } else if (mc) {
            mc_request_events((i & 63) + 1, where, mc_split);
        } else if (spawns) {
            uint64_t task = d9_task_id_new();
            d9_task_spawn_object(task, where, object);
            d9_task_terminate(task);
        } else {
            d9_poll_begin((i & 63) + 1, where);
            d9_poll_end();
        }
    }
    /* Drained by the background thread, so d9_stop on this thread finds nothing left: the
     * recording thread's count then holds the hooks and the loop, not the encoding. */
    if (fused) d9_poll_end();
    if (mc || requests) d9_unpark();
    d9_flush();
    d9_stop();
    d9_stats st;
    d9_get_stats(&st);
    free(object);
    bench_remove_tree(dir);
    free(dir);
    printf("events %" PRIu64 " recorded %" PRIu64 " dropped %" PRIu64 " written %" PRIu64 "\n",
           per_pair * pairs, st.events_recorded, st.events_dropped, st.events_written);
    /* The trace must hold what was recorded, or the count of instructions means nothing. */
    return st.events_dropped == 0 && st.events_recorded >= per_pair * pairs ? 0 : 1;
}
