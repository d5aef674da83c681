/* A span's in-poll part by cause (model/spans.h, d9m_span.poll_parts) on hand-built inputs:
 * the per-poll attribution of the polls inside the span, clipped to it, exactly: off-CPU
 * intervals by cause, blocked stacks listed for the reader, gaps of the switch records
 * unknown, two tasks' overlapping polls counted once (the first task's first), a broken
 * (overlapping) interval making its poll unknown, and drops inside the span's window making
 * it unknown up to the last of them. */
#include <string.h>

#include "check.h"
#include "model/spans.h"

#define MAXS 8
typedef struct got {
    d9m_span s[MAXS];
    d9m_span_stack stk[MAXS][4];
    size_t n;
} got;

static void on_span(void *ctx, const d9m_span *s) {
    got *g = ctx;
    if (g->n == MAXS) return;
    g->s[g->n] = *s;
    for (size_t i = 0; i < s->npoll_stacks && i < 4; i++) g->stk[g->n][i] = s->poll_stacks[i];
    g->n++;
}

/* The split is a split of the poll part, and the parts add up to the elapsed time. */
static void check_adds_up(const d9m_span *s) {
    CHECK_EQ_U64(d9m_parts_total(&s->poll_parts), s->parts.poll_ns);
    CHECK_EQ_U64(s->parts.poll_ns + s->parts.queued_ns + s->parts.wait_ns + s->parts.unknown_ns,
                 s->end_ts - s->begin_ts);
}

/* One task, the span inside one poll: its off-CPU intervals clipped to the span. */
static void one_poll(void) {
    got g = {0};
    d9m_spans *m = d9m_spans_new(on_span, &g);
    CHECK(m != NULL);
    CHECK_EQ_U64(d9m_spans_poll(m, 1, 100, 300), 0);
    CHECK_EQ_U64(d9m_spans_poll_off(m, 1, 105, 115, D9M_PART_RUNNABLE, D9M_SPAN_NO_STACK), 0);
    CHECK_EQ_U64(d9m_spans_begin(m, 110, 7, 1, 1, 0, 11), 0);
    CHECK_EQ_U64(d9m_spans_poll_off(m, 1, 120, 150, D9M_PART_BLOCKED_OTHER, 7), 0);
    CHECK_EQ_U64(d9m_spans_poll_off(m, 1, 200, 220, D9M_PART_RUNNABLE, D9M_SPAN_NO_STACK), 0);
    CHECK_EQ_U64(d9m_spans_poll_off(m, 1, 240, 290, D9M_PART_SLEEP, D9M_SPAN_NO_STACK), 0);
    CHECK_EQ_U64(d9m_spans_end(m, 250, 7, 1, 1, 0, 11), 0);
    CHECK_EQ_U64(g.n, 1);
    const d9m_span *s = &g.s[0];
    CHECK_EQ_U64(s->parts.poll_ns, 140);
    CHECK_EQ_U64(s->poll_parts.ns[D9M_PART_RUNNABLE], 5 + 20); /* 110..115, 200..220 */
    CHECK_EQ_U64(s->poll_parts.ns[D9M_PART_BLOCKED_OTHER], 30);
    CHECK_EQ_U64(s->poll_parts.ns[D9M_PART_SLEEP], 10);        /* 240..250 */
    CHECK_EQ_U64(s->poll_parts.ns[D9M_PART_ON_CPU], 140 - 25 - 30 - 10);
    CHECK_EQ_U64(s->poll_parts.ns[D9M_PART_UNKNOWN], 0);
    CHECK_EQ_U64(s->npoll_stacks, 1);
    CHECK_EQ_U64(g.stk[0][0].stack, 7);
    CHECK_EQ_U64(g.stk[0][0].ns, 30);
    check_adds_up(s);
    d9m_spans_free(m);
}

/* Two tasks polled at once on two workers: the first task's polls count where they run, the
 * second's only outside them; a stack matched after its interval is listed. */
static void two_tasks(void) {
    got g = {0};
    d9m_spans *m = d9m_spans_new(on_span, &g);
    CHECK_EQ_U64(d9m_spans_poll(m, 1, 100, 200), 0);
    CHECK_EQ_U64(d9m_spans_begin(m, 110, 7, 2, 1, 0, 11), 0);
    CHECK_EQ_U64(d9m_spans_wake(m, 2, 120), 0);
    CHECK_EQ_U64(d9m_spans_poll(m, 2, 140, 260), 0);
    CHECK_EQ_U64(d9m_spans_poll_off(m, 1, 150, 180, D9M_PART_BLOCKED_OTHER, D9M_SPAN_NO_STACK), 0);
    d9m_spans_poll_off_stack(m, 1, 5); /* its stack, matched just after it */
    CHECK_EQ_U64(d9m_spans_poll_off(m, 2, 160, 240, D9M_PART_RUNNABLE, D9M_SPAN_NO_STACK), 0);
    CHECK_EQ_U64(d9m_spans_end(m, 250, 7, 2, 2, 1, 12), 0);
    CHECK_EQ_U64(g.n, 1);
    const d9m_span *s = &g.s[0];
    CHECK_EQ_U64(s->parts.poll_ns, 140); /* 110..250 */
    /* task 1 over 110..200: 150..180 blocked, 60 on CPU; task 2 over 200..250: 200..240
     * runnable, 10 on CPU (its 160..200 lies under task 1's poll) */
    CHECK_EQ_U64(s->poll_parts.ns[D9M_PART_BLOCKED_OTHER], 30);
    CHECK_EQ_U64(s->poll_parts.ns[D9M_PART_RUNNABLE], 40);
    CHECK_EQ_U64(s->poll_parts.ns[D9M_PART_ON_CPU], 70);
    CHECK_EQ_U64(s->npoll_stacks, 1);
    CHECK_EQ_U64(g.stk[0][0].stack, 5);
    CHECK_EQ_U64(g.stk[0][0].ns, 30);
    check_adds_up(s);
    d9m_spans_free(m);
}

/* Gaps: unknown, and an off-CPU interval counts only outside them; a later poll of the task
 * (after a wait) has its own intervals. */
static void gaps_and_polls(void) {
    got g = {0};
    d9m_spans *m = d9m_spans_new(on_span, &g);
    CHECK_EQ_U64(d9m_spans_poll(m, 1, 100, 200), 0);
    CHECK_EQ_U64(d9m_spans_begin(m, 100, 7, 3, 1, 0, 11), 0);
    CHECK_EQ_U64(d9m_spans_poll_gap(m, 1, 100, 130), 0); /* the governor paused switch records */
    CHECK_EQ_U64(d9m_spans_poll_off(m, 1, 120, 160, D9M_PART_BLOCKED_OTHER, 9), 0);
    CHECK_EQ_U64(d9m_spans_wake(m, 1, 300), 0);
    CHECK_EQ_U64(d9m_spans_poll(m, 1, 310, 400), 0);
    CHECK_EQ_U64(d9m_spans_poll_off(m, 1, 320, 330, D9M_PART_LOCK, D9M_SPAN_NO_STACK), 0);
    CHECK_EQ_U64(d9m_spans_end(m, 350, 7, 3, 1, 0, 11), 0);
    CHECK_EQ_U64(g.n, 1);
    const d9m_span *s = &g.s[0];
    CHECK_EQ_U64(s->parts.poll_ns, 100 + 40);
    CHECK_EQ_U64(s->parts.wait_ns, 100);  /* 200..300 */
    CHECK_EQ_U64(s->parts.queued_ns, 10); /* 300..310 */
    CHECK_EQ_U64(s->poll_parts.ns[D9M_PART_UNKNOWN], 30);
    CHECK_EQ_U64(s->poll_parts.ns[D9M_PART_BLOCKED_OTHER], 30); /* 130..160 */
    CHECK_EQ_U64(s->poll_parts.ns[D9M_PART_LOCK], 10);
    CHECK_EQ_U64(s->poll_parts.ns[D9M_PART_ON_CPU], 140 - 30 - 30 - 10);
    CHECK_EQ_U64(s->npoll_stacks, 1);
    CHECK_EQ_U64(g.stk[0][0].ns, 30); /* the part outside the gap */
    check_adds_up(s);
    d9m_spans_free(m);
}

/* Overlapping off-CPU intervals of one poll (a broken trace): that poll is unknown, as the
 * per-poll attribution says; the task's next poll is not. */
static void inconsistent(void) {
    got g = {0};
    d9m_spans *m = d9m_spans_new(on_span, &g);
    CHECK_EQ_U64(d9m_spans_poll(m, 1, 100, 200), 0);
    CHECK_EQ_U64(d9m_spans_begin(m, 100, 7, 4, 1, 0, 11), 0);
    CHECK_EQ_U64(d9m_spans_poll_off(m, 1, 110, 150, D9M_PART_RUNNABLE, D9M_SPAN_NO_STACK), 0);
    CHECK_EQ_U64(d9m_spans_poll_off(m, 1, 140, 160, D9M_PART_RUNNABLE, D9M_SPAN_NO_STACK), 0);
    CHECK_EQ_U64(d9m_spans_wake(m, 1, 200), 0);
    CHECK_EQ_U64(d9m_spans_poll(m, 1, 200, 300), 0);
    CHECK_EQ_U64(d9m_spans_poll_off(m, 1, 250, 260, D9M_PART_RUNNABLE, D9M_SPAN_NO_STACK), 0);
    CHECK_EQ_U64(d9m_spans_end(m, 300, 7, 4, 1, 0, 11), 0);
    CHECK_EQ_U64(g.n, 1);
    const d9m_span *s = &g.s[0];
    CHECK_EQ_U64(s->parts.poll_ns, 200);
    CHECK_EQ_U64(s->poll_parts.ns[D9M_PART_UNKNOWN], 100);
    CHECK_EQ_U64(s->poll_parts.ns[D9M_PART_RUNNABLE], 10);
    CHECK_EQ_U64(s->poll_parts.ns[D9M_PART_ON_CPU], 90);
    check_adds_up(s);
    d9m_spans_free(m);
}

/* A drop inside the span's window (any worker): unknown from its begin to the last such drop;
 * drops before or after it change nothing. */
static void drops(void) {
    d9m_coverage cov = {0};
    d9m_coverage_drop(&cov, 50, 3, 0);    /* before the span */
    d9m_coverage_drop(&cov, 130, 4, 0);   /* inside it: another worker's */
    d9m_coverage_drop(&cov, 150, 255, 0); /* inside it: the whole process */
    d9m_coverage_drop(&cov, 900, 0, 0);   /* after it */
    got g = {0};
    d9m_spans *m = d9m_spans_new(on_span, &g);
    d9m_spans_set_coverage(m, &cov);
    CHECK_EQ_U64(d9m_spans_poll(m, 1, 100, 200), 0);
    CHECK_EQ_U64(d9m_spans_begin(m, 100, 7, 5, 1, 0, 11), 0);
    CHECK_EQ_U64(d9m_spans_poll_off(m, 1, 120, 170, D9M_PART_RUNNABLE, D9M_SPAN_NO_STACK), 0);
    CHECK_EQ_U64(d9m_spans_end(m, 300, 7, 5, 1, 0, 11), 0);
    /* a span that no drop falls in */
    CHECK_EQ_U64(d9m_spans_wake(m, 1, 400), 0);
    CHECK_EQ_U64(d9m_spans_poll(m, 1, 400, 500), 0);
    CHECK_EQ_U64(d9m_spans_begin(m, 400, 7, 6, 1, 0, 11), 0);
    CHECK_EQ_U64(d9m_spans_end(m, 450, 7, 6, 1, 0, 11), 0);
    CHECK_EQ_U64(g.n, 2);
    const d9m_span *s = &g.s[0];
    CHECK_EQ_U64(s->parts.unknown_ns, 50); /* 100..150 */
    CHECK_EQ_U64(s->parts.poll_ns, 50);    /* 150..200 */
    CHECK_EQ_U64(s->parts.wait_ns, 100);   /* 200..300 */
    CHECK_EQ_U64(s->poll_parts.ns[D9M_PART_RUNNABLE], 20); /* 150..170 */
    CHECK_EQ_U64(s->poll_parts.ns[D9M_PART_ON_CPU], 30);
    check_adds_up(s);
    CHECK_EQ_U64(g.s[1].parts.unknown_ns, 0);
    CHECK_EQ_U64(g.s[1].parts.poll_ns, 50);
    CHECK_EQ_U64(g.s[1].poll_parts.ns[D9M_PART_ON_CPU], 50);
    check_adds_up(&g.s[1]);
    d9m_spans_free(m);
    d9m_coverage_free(&cov);
}

int main(void) {
    one_poll();
    two_tasks();
    gaps_and_polls();
    inconsistent();
    drops();
    return d9t_summary("model_span_attribution");
}
