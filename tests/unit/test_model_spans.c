/* The span model (model/spans.h) on hand-built inputs: pairing by name and id across threads,
 * the exact split of each span (poll + queued + wait + unknown == elapsed), unended spans
 * counted at the trace's end. */
#include <string.h>

#include "check.h"
#include "model/spans.h"

#define MAXS 16
typedef struct got {
    d9m_span s[MAXS];
    size_t n;
} got;

static void on_span(void *ctx, const d9m_span *s) {
    got *g = ctx;
    if (g->n == MAXS) return;
    g->s[g->n] = *s;
    g->n++;
}

static void check_adds_up(const d9m_span *s) {
    CHECK_EQ_U64(s->parts.poll_ns + s->parts.queued_ns + s->parts.wait_ns + s->parts.unknown_ns,
                 s->end_ts - s->begin_ts);
}

/* A request begun in task 1's poll on worker 0, handed to task 2 (woken, queued, polled on
 * worker 1), which ends it in its second poll, after an async wait of its own. */
static void cross_thread(void) {
    got g = {0};
    d9m_spans *m = d9m_spans_new(on_span, &g);
    CHECK(m != NULL);
    CHECK_EQ_U64(d9m_spans_poll(m, 1, 100, 200), 0);       /* task 1 polled on worker 0 */
    CHECK_EQ_U64(d9m_spans_begin(m, 150, 7, 42, 1, 0, 11), 0); /* inside that poll */
    CHECK_EQ_U64(d9m_spans_wake(m, 2, 180), 0);            /* task 1 wakes task 2 */
    CHECK_EQ_U64(d9m_spans_poll(m, 2, 230, 260), 0);       /* queued 200..230 (task 1 ran until 200) */
    CHECK_EQ_U64(d9m_spans_wake(m, 2, 400), 0);            /* the network answers at 400 */
    CHECK_EQ_U64(d9m_spans_poll(m, 2, 410, 500), 0);
    CHECK_EQ_U64(d9m_spans_end(m, 450, 7, 42, 2, 1, 12), 0); /* inside it, on worker 1 */
    CHECK_EQ_U64(g.n, 1);
    const d9m_span *s = &g.s[0];
    CHECK(s->ended);
    CHECK_EQ_U64(s->begin_ts, 150);
    CHECK_EQ_U64(s->end_ts, 450);
    CHECK_EQ_U64(s->begin_task, 1);
    CHECK_EQ_U64(s->end_task, 2);
    CHECK_EQ_U64(s->begin_worker, 0);
    CHECK_EQ_U64(s->end_worker, 1);
    CHECK_EQ_U64(s->end_tid, 12);
    /* poll: 150..200 (task 1), 230..260, 410..450 (task 2) = 50 + 30 + 40 */
    CHECK_EQ_U64(s->parts.poll_ns, 120);
    /* queued: task 2 woken at 180, runnable once task 1's poll... no: task 2 had no poll
     * before, so it is runnable from its wake; 180..200 is inside task 1's poll (poll wins),
     * 200..230 queued; 400..410 queued */
    CHECK_EQ_U64(s->parts.queued_ns, 40);
    /* wait: task 2 after its poll 260..400; task 1 after its poll from 200 is wait too, but
     * 200..230 is queued (task 2) and 260..400 counted once */
    CHECK_EQ_U64(s->parts.wait_ns, 140);
    CHECK_EQ_U64(s->parts.unknown_ns, 0);
    check_adds_up(s);
    CHECK_EQ_U64(s->poll_parts.ns[D9M_PART_ON_CPU], 120); /* no gap, no off-CPU interval fed */
    CHECK_EQ_U64(d9m_spans_stray_ends(m), 0);
    CHECK_EQ_U64(d9m_spans_finish(m, 1000), 0);
    CHECK_EQ_U64(g.n, 1); /* nothing left open */
    d9m_spans_free(m);
}

/* Begun and ended outside any poll (no task): all unknown. Same id, other name: two spans. */
static void no_task_and_names(void) {
    got g = {0};
    d9m_spans *m = d9m_spans_new(on_span, &g);
    CHECK_EQ_U64(d9m_spans_begin(m, 10, 1, 5, 0, 255, 3), 0);
    CHECK_EQ_U64(d9m_spans_begin(m, 20, 2, 5, 0, 255, 3), 0);
    CHECK_EQ_U64(d9m_spans_end(m, 30, 2, 5, 0, 255, 3), 0);
    CHECK_EQ_U64(d9m_spans_end(m, 50, 1, 5, 0, 255, 3), 0);
    CHECK_EQ_U64(d9m_spans_end(m, 60, 1, 5, 0, 255, 3), 0); /* nothing open: stray */
    CHECK_EQ_U64(g.n, 2);
    CHECK_EQ_U64(g.s[0].name, 2);
    CHECK_EQ_U64(g.s[0].end_ts - g.s[0].begin_ts, 10);
    CHECK_EQ_U64(g.s[1].name, 1);
    CHECK_EQ_U64(g.s[1].parts.unknown_ns, 40);
    CHECK_EQ_U64(g.s[1].parts.poll_ns, 0);
    check_adds_up(&g.s[1]);
    CHECK_EQ_U64(d9m_spans_stray_ends(m), 1);
    d9m_spans_free(m);
}

/* Unended at the trace's end: reported with ended false, up to the end; a begin of an open
 * (name, id) reports the first one unended, up to that begin. The task's state before its
 * first poll is unknown. */
static void unended(void) {
    got g = {0};
    d9m_spans *m = d9m_spans_new(on_span, &g);
    CHECK_EQ_U64(d9m_spans_begin(m, 100, 1, 9, 0, 255, 3), 0); /* no task */
    CHECK_EQ_U64(d9m_spans_poll(m, 4, 200, 300), 0);
    CHECK_EQ_U64(d9m_spans_begin(m, 250, 3, 1, 4, 0, 3), 0);   /* in task 4's poll */
    CHECK_EQ_U64(d9m_spans_begin(m, 260, 3, 1, 4, 0, 3), 0);   /* again: the first is unended */
    CHECK_EQ_U64(d9m_spans_reopened(m), 1);
    CHECK_EQ_U64(g.n, 1);
    CHECK(!g.s[0].ended);
    CHECK_EQ_U64(g.s[0].end_ts, 260);
    CHECK_EQ_U64(g.s[0].parts.poll_ns, 10);
    CHECK_EQ_U64(d9m_spans_wake(m, 4, 700), 0);
    CHECK_EQ_U64(d9m_spans_finish(m, 1000), 0);
    CHECK_EQ_U64(g.n, 3);
    /* in begin order: the one with no task first */
    CHECK(!g.s[1].ended);
    CHECK_EQ_U64(g.s[1].begin_ts, 100);
    CHECK_EQ_U64(g.s[1].end_ts, 1000);
    CHECK_EQ_U64(g.s[1].parts.unknown_ns, 900);
    check_adds_up(&g.s[1]);
    const d9m_span *s = &g.s[2];
    CHECK(!s->ended);
    CHECK_EQ_U64(s->begin_ts, 260);
    CHECK_EQ_U64(s->parts.poll_ns, 40);    /* 260..300 */
    CHECK_EQ_U64(s->parts.wait_ns, 400);   /* 300..700 */
    CHECK_EQ_U64(s->parts.queued_ns, 300); /* woken at 700, not polled by the end */
    CHECK_EQ_U64(s->parts.unknown_ns, 0);
    check_adds_up(s);
    d9m_spans_free(m);
}

/* A task first seen by its poll inside the span: before it, unknown; intervals pruned once no
 * span needs them do not leak into a later span. */
static void unknown_before_first_poll(void) {
    got g = {0};
    d9m_spans *m = d9m_spans_new(on_span, &g);
    CHECK_EQ_U64(d9m_spans_begin(m, 0, 1, 1, 0, 255, 3), 0); /* no task at the begin */
    CHECK_EQ_U64(d9m_spans_poll(m, 8, 500, 600), 0);
    CHECK_EQ_U64(d9m_spans_end(m, 550, 1, 1, 8, 0, 3), 0);
    CHECK_EQ_U64(g.n, 1);
    CHECK_EQ_U64(g.s[0].parts.unknown_ns, 500);
    CHECK_EQ_U64(g.s[0].parts.poll_ns, 50);
    CHECK_EQ_U64(d9m_spans_poll(m, 8, 700, 800), 0);
    CHECK_EQ_U64(d9m_spans_poll(m, 8, 900, 950), 0);
    CHECK_EQ_U64(d9m_spans_begin(m, 920, 1, 2, 8, 0, 3), 0);
    CHECK_EQ_U64(d9m_spans_end(m, 940, 1, 2, 8, 0, 3), 0);
    CHECK_EQ_U64(g.n, 2);
    CHECK_EQ_U64(g.s[1].parts.poll_ns, 20);
    CHECK_EQ_U64(g.s[1].parts.wait_ns, 0);
    check_adds_up(&g.s[1]);
    d9m_spans_free(m);
}

/* A terminated task is forgotten at once when no span is open, else once the last open span
 * ended: a span that ends in a task terminated meanwhile still has its polls. */
static void terminated_tasks(void) {
    got g = {0};
    d9m_spans *m = d9m_spans_new(on_span, &g);
    CHECK_EQ_U64(d9m_spans_poll(m, 1, 10, 20), 0);
    CHECK_EQ_U64(d9m_spans_tasks_held(m), 1);
    CHECK_EQ_U64(d9m_spans_terminate(m, 1), 0);
    CHECK_EQ_U64(d9m_spans_tasks_held(m), 0);
    CHECK_EQ_U64(d9m_spans_poll(m, 2, 100, 110), 0);
    CHECK_EQ_U64(d9m_spans_begin(m, 105, 1, 1, 2, 0, 3), 0);
    CHECK_EQ_U64(d9m_spans_poll(m, 3, 120, 150), 0);
    CHECK_EQ_U64(d9m_spans_terminate(m, 3), 0); /* a span is open: kept */
    CHECK_EQ_U64(d9m_spans_terminate(m, 2), 0);
    CHECK_EQ_U64(d9m_spans_tasks_held(m), 2);
    CHECK_EQ_U64(d9m_spans_end(m, 140, 1, 1, 3, 0, 3), 0);
    CHECK_EQ_U64(g.n, 1);
    CHECK_EQ_U64(g.s[0].parts.poll_ns, 5 + 20); /* 105..110 (task 2), 120..140 (task 3) */
    CHECK_EQ_U64(g.s[0].parts.wait_ns, 10);     /* task 2 after its poll, 110..120 */
    check_adds_up(&g.s[0]);
    CHECK_EQ_U64(d9m_spans_tasks_held(m), 0);   /* forgotten with the last open span */
    d9m_spans_free(m);
}

/* The inputs by task state (d9m_spans_task_*), as analyze gives them: a terminated task's
 * state is kept while a span may read it, then reused by the next new task, and an off-CPU
 * interval handed with the generation the reader kept at the old task's poll goes nowhere. */
static void task_states(void) {
    got g = {0};
    d9m_spans *m = d9m_spans_new(on_span, &g);
    d9m_span_task *a = d9m_spans_task_new(m, 1);
    CHECK(a != NULL);
    CHECK_EQ_U64(d9m_spans_task_poll(m, a, 100, 200), 0);
    CHECK_EQ_U64(d9m_spans_task_begin(m, 150, 7, 42, 1, a, 0, 11), 0);
    CHECK_EQ_U64(d9m_spans_task_terminate(m, a), 0); /* a span is open: kept */
    d9m_span_task *b = d9m_spans_task_new(m, 2);
    CHECK(b != NULL && b != a);
    CHECK_EQ_U64(d9m_spans_tasks_held(m), 2);
    CHECK_EQ_U64(d9m_spans_task_wake(m, b, 210), 0);
    CHECK_EQ_U64(d9m_spans_task_poll(m, b, 230, 300), 0);
    CHECK_EQ_U64(d9m_spans_task_end(m, 260, 7, 42, 2, b, 1, 12), 0);
    CHECK_EQ_U64(g.n, 1);
    CHECK_EQ_U64(g.s[0].parts.poll_ns, 50 + 30); /* 150..200 (task 1), 230..260 (task 2) */
    CHECK_EQ_U64(g.s[0].parts.queued_ns, 20);    /* task 2 woken at 210 */
    CHECK_EQ_U64(g.s[0].parts.wait_ns, 10);      /* task 1 after its poll, 200..210 */
    check_adds_up(&g.s[0]);
    CHECK_EQ_U64(d9m_spans_tasks_held(m), 1); /* task 1 forgotten with the last open span */

    /* b's poll [230, 300) is the one a worker is in, with b's generation; b terminates and
     * its state is reused by task 3 (no span open), polled over the same times */
    uint32_t gen_b = d9m_span_task_gen(b);
    CHECK_EQ_U64(d9m_spans_task_terminate(m, b), 0);
    d9m_span_task *c = d9m_spans_task_new(m, 3);
    CHECK(c != NULL);
    CHECK_EQ_U64(d9m_spans_task_poll(m, c, 300, 400), 0);
    CHECK_EQ_U64(d9m_spans_task_begin(m, 300, 7, 43, 3, c, 0, 11), 0);
    uint32_t gen_c = d9m_span_task_gen(c);
    /* the old poll's interval, handed with b's generation: ignored even if c is b's state */
    CHECK_EQ_U64(d9m_spans_task_poll_off(m, c, gen_b, 310, 330, D9M_PART_BLOCKED_OTHER, 5), 0);
    d9m_spans_task_poll_off_stack(m, c, gen_b, 6);
    CHECK(c != b || gen_c != gen_b);
    CHECK_EQ_U64(d9m_spans_task_poll_off(m, c, gen_c, 340, 350, D9M_PART_RUNNABLE, D9M_SPAN_NO_STACK), 0);
    CHECK_EQ_U64(d9m_spans_task_end(m, 400, 7, 43, 3, c, 0, 11), 0);
    CHECK_EQ_U64(g.n, 2);
    CHECK_EQ_U64(g.s[1].poll_parts.ns[D9M_PART_BLOCKED_OTHER], 0);
    CHECK_EQ_U64(g.s[1].poll_parts.ns[D9M_PART_RUNNABLE], 10);
    CHECK_EQ_U64(g.s[1].poll_parts.ns[D9M_PART_ON_CPU], 90);
    CHECK_EQ_U64(g.s[1].npoll_stacks, 0);

    /* task 3 terminates inside a span it began; its id is seen again, a new task to the reader,
     * which ends the span: both tasks' polls count */
    CHECK_EQ_U64(d9m_spans_task_poll(m, c, 500, 520), 0);
    CHECK_EQ_U64(d9m_spans_task_begin(m, 510, 7, 44, 3, c, 0, 11), 0);
    CHECK_EQ_U64(d9m_spans_task_terminate(m, c), 0);
    d9m_span_task *c2 = d9m_spans_task_new(m, 3);
    CHECK(c2 != NULL && c2 != c);
    CHECK_EQ_U64(d9m_spans_task_poll(m, c2, 600, 650), 0);
    CHECK_EQ_U64(d9m_spans_task_end(m, 640, 7, 44, 3, c2, 0, 11), 0);
    CHECK_EQ_U64(g.n, 3);
    CHECK_EQ_U64(g.s[2].parts.poll_ns, 10 + 40); /* 510..520 (the first task 3), 600..640 */
    CHECK_EQ_U64(g.s[2].parts.wait_ns, 80);      /* the first after its poll, 520..600 */
    check_adds_up(&g.s[2]);
    d9m_spans_free(m);
}

int main(void) {
    task_states();
    terminated_tasks();
    cross_thread();
    no_task_and_names();
    unended();
    unknown_before_first_poll();
    return d9t_summary("model_spans");
}
