/* A thread moves to another ring (grows, shrinks) inside a blocking call that TSan intercepts,
 * while the collector drains every millisecond (run under TSan: the `concurrent` label). This
 * is where the adapters record a loop's park: TSan's epoll_wait interceptor calls dial9's
 * wrapper as the "real" epoll_wait, and inside it TSan ignores the thread's atomics, so the
 * release store that publishes the new ring was invisible to it; the collector's read of the
 * ring's start (d9_ring_for in the merge, d9_thread_release_consumed in the hand-over) then
 * looked unordered with the ring's calloc (thread_buffer.c, move_to_ring, says how it is kept
 * visible). blocking_call_interposer.c stands in for the wrapper: it runs the move, then
 * blocks for a millisecond, in which the collector drains. The thread registers there too, as
 * a loop thread whose first event is a park does (TSan did not see the registry's lock either:
 * the collector's next list of threads was reported against the registration).
 *
 * The move is the slow path's own (d9_thread_make_room after a drain's request), without a
 * record: the records, poll pairs written after each call, are published outside, so the only
 * thing published inside is the ring. The moves are counted, not timed, and the trace must
 * hold every poll once, in order: what is pending stays under a quarter of the smallest ring
 * (the thread waits for a drain, d9_flush, before a move otherwise), so no move fails and
 * nothing is dropped, however slow the collector. Optional argument: the number of moves (default 600). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "check.h"
#include "core/thread_buffer.h"
#include "dial9/dial9.h"
#include "quiet_recorder.h"
#include "trace_files_util.h"
#include "unit/blocking_call_interposer.h"

#define BUFFER_KB 64 /* the largest ring: 8192 words, four sizes above the first (512) */
#define PAIRS_PER_MOVE 4

typedef struct seen {
    uint64_t polls, next_task, out_of_order, dropped;
} seen;

static void on_event(const d9_event *ev, void *ctx) {
    seen *s = ctx;
    if (d9t_is(ev, "PollStartEvent")) {
        uint64_t task = d9t_field_u(ev, "task_id");
        if (task != s->next_task) s->out_of_order++;
        s->next_task = task + 1;
        s->polls++;
    } else if (d9t_is(ev, "DroppedEventsEvent")) {
        s->dropped += d9t_field_u(ev, "count");
    }
}

static uint8_t g_move; /* D9_RING_GROW or D9_RING_SHRINK */

/* Inside the interceptor: what a drain's request makes the thread's next slow path do. */
static void move_inside(void) {
    d9_thread *t = d9_thread_peek();
    atomic_store_explicit(&t->resize_wanted, g_move, memory_order_relaxed);
    CHECK(d9_thread_make_room(t, 4));
}

/* Inside the interceptor: the thread registers (its buffer, its first ring, the registry). */
static void register_inside(void) { CHECK(d9_thread_current() != NULL); }

int main(int argc, char **argv) {
    int moves_wanted = argc > 1 ? atoi(argv[1]) : 600;
    char *dir = d9t_mkdtemp("ring-move-in-interceptor");
    d9_config cfg;
    d9t_quiet_config(&cfg, dir);
    cfg.flush_ms = 1;
    cfg.buffer_kb = BUFFER_KB;
    atomic_store(&d9_ring_shrink_after_ns, 3600ull * 1000000000ull); /* the moves are this test's */
    CHECK(d9_start(&cfg) == 0);
    int ep = epoll_create1(0);
    CHECK(ep >= 0);

    d9t_inside_epoll_wait = register_inside; /* an adapter's thread whose first event is a park */
    struct epoll_event first;
    CHECK(epoll_wait(ep, &first, 1, 1) == 0);
    uint64_t task = 1;
    d9_poll_begin(task++, D9_HERE);
    d9_poll_end();
    d9_thread *t = d9_thread_peek();
    CHECK(t != NULL);
    if (!t || ep < 0) return d9t_summary("test_mt_ring_move_in_interceptor");
    uint64_t max_words = (uint64_t)BUFFER_KB * 1024 / 8, moves = 0, grows = 0, shrinks = 0, waits = 0;
    bool growing = true;
    d9t_inside_epoll_wait = move_inside;
    for (int m = 0; m < moves_wanted; m++) {
        uint64_t words = t->mask + 1;
        if (growing && words >= max_words) growing = false;
        if (!growing && words <= D9_RING_FIRST_WORDS) growing = true;
        g_move = growing ? D9_RING_GROW : D9_RING_SHRINK;
        /* Little pending, so that the smallest ring holds it and the move never fails, however
         * late the collector is (it drains in the call's millisecond, unless the host is busy) */
        if (t->head - atomic_load(&t->tail) > D9_RING_FIRST_WORDS / 4) {
            d9_flush();
            waits++;
        }
        const d9_ring *before = t->w_ring;
        struct epoll_event ev;
        CHECK(epoll_wait(ep, &ev, 1, 1) == 0); /* nothing to wait for: a millisecond */
        moves += t->w_ring != before;
        grows += t->mask + 1 > words;
        shrinks += t->mask + 1 < words;
        for (int i = 0; i < PAIRS_PER_MOVE; i++) {
            d9_poll_begin(task++, D9_HERE);
            d9_poll_end();
        }
    }
    d9t_inside_epoll_wait = NULL;
    d9_stop();
    close(ep);
    printf("%d calls: %llu moves (%llu to a larger ring, %llu to a smaller one), %llu waits for a drain\n",
           moves_wanted, (unsigned long long)moves, (unsigned long long)grows, (unsigned long long)shrinks,
           (unsigned long long)waits);
    CHECK_EQ_U64(moves, (uint64_t)moves_wanted); /* each call moved the thread once */
    CHECK(grows > 0 && shrinks > 0);

    seen s = {.next_task = 1};
    CHECK_EQ_U64(d9t_decode_run(d9_run_dir(), on_event, &s), 0);
    CHECK_EQ_U64(s.polls, task - 1);
    CHECK_EQ_U64(s.out_of_order, 0);
    CHECK_EQ_U64(s.dropped, 0);
    if (d9t_failed == 0) d9t_rm_rf(dir);
    else printf("kept %s\n", dir);
    free(dir);
    return d9t_summary("test_mt_ring_move_in_interceptor");
}
