/* The span model (model/spans.h) against its previous version (spans_oracle_model.h, the model
 * before the newest open span was kept out of the id index until another began, a span was
 * reported from its slot and forgotten tasks' arrays were reused) on random inputs:
 * every span either reports, in the same order, with the same fields, parts, parts by cause
 * and stacks, and the same counts of stray ends, reopened spans and tasks held. The oracle splits
 * every span by the union of its tasks' intervals, sorted; the model walks them in place (the
 * union only for a task whose polls overlap), so this checks the walk against the union.
 * Governed polls (one gap over all of a poll), a gap fed after a mark inside its poll, and ids
 * that share an entry of the model's direct-mapped index of open spans are among the inputs.
 * The inputs are what a reader feeds in time order: wakes, whole polls (overlapping ones of one
 * task too), their gaps and off-CPU intervals and a late stack, begins and ends of a few names
 * over a few ids (so that ends close nothing, begins reopen, one id carries several names and
 * spans nest or interleave), terminations, and drops in the coverage.
 * In every other run a terminated task's id is not used again, and a third model, h, is fed
 * by task states as analyze feeds it (d9m_spans_task_*: the reader's table of tasks, a state
 * made at the task's first wake, poll or mark, handed back at its termination): it must report
 * what the oracle reports (with reused ids it would not: a reused id is a new task to it). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "test_rng.h"
#include "model/spans.h"

/* the oracle, under other names */
typedef struct oracle_model oracle_model;
#define d9m_spans oracle_model
#define d9m_spans_new oracle_new
#define d9m_spans_free oracle_free
#define d9m_spans_stray_ends oracle_stray_ends
#define d9m_spans_reopened oracle_reopened
#define d9m_spans_tasks_held oracle_tasks_held
#define d9m_spans_wake oracle_wake
#define d9m_spans_poll oracle_poll
#define d9m_spans_set_coverage oracle_set_coverage
#define d9m_spans_poll_gap oracle_poll_gap
#define d9m_spans_poll_off oracle_poll_off
#define d9m_spans_poll_off_stack oracle_poll_off_stack
#define d9m_spans_begin oracle_begin
#define d9m_spans_end oracle_end
#define d9m_spans_terminate oracle_terminate
#define d9m_spans_finish oracle_finish
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-prototypes" /* its functions are the header's, renamed */
#include "spans_oracle_model.h"
#pragma GCC diagnostic pop
#undef d9m_spans
#undef d9m_spans_new
#undef d9m_spans_free
#undef d9m_spans_stray_ends
#undef d9m_spans_reopened
#undef d9m_spans_tasks_held
#undef d9m_spans_wake
#undef d9m_spans_poll
#undef d9m_spans_set_coverage
#undef d9m_spans_poll_gap
#undef d9m_spans_poll_off
#undef d9m_spans_poll_off_stack
#undef d9m_spans_begin
#undef d9m_spans_end
#undef d9m_spans_terminate
#undef d9m_spans_finish

/* Every reported span, flattened to numbers; its stacks by id (their order is the walk's, which
 * reads the two tasks' polls together where the oracle read one task's, then the other's). */
typedef struct log {
    uint64_t *v;
    size_t n, cap;
    size_t spans;
} log;

static void put(log *l, uint64_t x) {
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 1024;
        l->v = realloc(l->v, l->cap * sizeof *l->v);
        if (!l->v) abort();
    }
    l->v[l->n++] = x;
}

static int by_stack(const void *x, const void *y) {
    const d9m_span_stack *a = x, *b = y;
    return a->stack < b->stack ? -1 : a->stack > b->stack;
}

static void on_span(void *ctx, const d9m_span *s) {
    log *l = ctx;
    l->spans++;
    uint64_t head[] = {s->name, s->id, s->begin_ts, s->end_ts, s->begin_task, s->end_task,
                       s->begin_worker, s->end_worker, s->begin_tid, s->end_tid, s->ended,
                       s->parts.poll_ns, s->parts.queued_ns, s->parts.wait_ns, s->parts.unknown_ns,
                       s->npoll_stacks};
    for (size_t i = 0; i < sizeof head / sizeof head[0]; i++) put(l, head[i]);
    for (int p = 0; p < D9M_PARTS; p++) put(l, s->poll_parts.ns[p]);
    d9m_span_stack stk[64];
    size_t n = s->npoll_stacks < 64 ? s->npoll_stacks : 64;
    if (n) memcpy(stk, s->poll_stacks, n * sizeof *stk);
    qsort(stk, n, sizeof *stk, by_stack);
    for (size_t i = 0; i < n; i++) {
        put(l, stk[i].stack);
        put(l, stk[i].ns);
    }
}

static d9t_rng rng = {88172645463325252ull}; /* the same inputs every run */
static uint64_t pick(uint64_t n) { return d9t_rng_below(&rng, n); }

/* The models get each input; rc must agree too. */
#define BOTH(call_new, call_old) CHECK_EQ_U64((uint64_t)(call_new), (uint64_t)(call_old))

/* The reader of model h: its tasks by slot (1 + pick(ntasks)), each slot's current id (a new
 * one after a termination) and state. */
#define SLOTS 8
typedef struct hreader {
    d9m_spans *h;
    uint64_t id[SLOTS];
    d9m_span_task *st[SLOTS];
} hreader;

static d9m_span_task *h_state(hreader *r, uint64_t id) {
    if (!r->h || id == 0) return NULL;
    for (unsigned k = 0; k < SLOTS; k++)
        if (r->id[k] == id) {
            if (!r->st[k]) r->st[k] = d9m_spans_task_new(r->h, id);
            CHECK(r->st[k] != NULL);
            return r->st[k];
        }
    CHECK(0); /* every id the runs use is a slot's */
    return NULL;
}

/* id_stride: the span ids' spacing (the model's direct-mapped index by id has 1 024 entries: ids
 * 1 024 apart share one, and all but the first of them go to its map) */
static size_t one_run(unsigned steps, unsigned ntasks, unsigned nids, unsigned nnames, bool drops, bool fresh_ids,
                      uint64_t id_stride) {
    log ln = {0}, lo = {0}, lh = {0};
    d9m_spans *m = d9m_spans_new(on_span, &ln);
    oracle_model *o = oracle_new(on_span, &lo);
    hreader hr = {.h = fresh_ids ? d9m_spans_new(on_span, &lh) : NULL};
    d9m_spans *h = hr.h;
    uint64_t next_id = 1 + SLOTS;
    for (unsigned k = 0; k < SLOTS; k++) hr.id[k] = 1 + k;
    CHECK(m != NULL && o != NULL && (h != NULL || !fresh_ids));
    d9m_coverage cov = {0};
    if (drops) {
        d9m_spans_set_coverage(m, &cov);
        oracle_set_coverage(o, &cov);
        if (h) d9m_spans_set_coverage(h, &cov);
    }
    uint64_t ts = 1000, cur_task = 0; /* the task being polled at ts on "its" worker, or 0 */
    uint64_t cur_start = 0, cur_end = 0; /* its poll */
    for (unsigned i = 0; i < steps; i++) {
        ts += pick(4) == 0 ? 0 : 1 + pick(50); /* equal timestamps too */
        unsigned slot = (unsigned)pick(ntasks);
        uint64_t task = hr.id[slot];
        unsigned what = (unsigned)pick(100);
        if (what < 18) {
            BOTH(d9m_spans_wake(m, task, ts), oracle_wake(o, task, ts));
            if (h) CHECK_EQ_U64((uint64_t)d9m_spans_task_wake(h, h_state(&hr, task), ts), 0);
        } else if (what < 40) {
            uint64_t end = ts + pick(4) * (1 + pick(80)); /* empty polls too */
            BOTH(d9m_spans_poll(m, task, ts, end), oracle_poll(o, task, ts, end));
            d9m_span_task *hs = h_state(&hr, task);
            uint32_t hgen = hs ? d9m_span_task_gen(hs) : 0;
            /* its attribution's gap: over all of it (a governed recording's poll), inside it, or
             * none; h takes the poll and the gap in one call as analyze does (poll_attr), or in
             * two (the gap after the poll) */
            int kind = pick(4) == 0 ? 1 : pick(3) == 0 ? 2 : 0;
            uint64_t a = kind == 2 ? ts + pick(20) : ts, b = kind == 2 ? a + pick(30) : end;
            d9m_attr_poll gp = {.ngaps = kind ? 1 : 0, .gaps = {{a, b}}};
            bool fused = pick(2);
            if (h && fused) {
                uint32_t gen = UINT32_MAX;
                CHECK_EQ_U64((uint64_t)d9m_spans_task_poll_attr(h, hs, ts, end, pick(2) || kind ? &gp : NULL, &gen), 0);
                CHECK_EQ_U64(gen, hgen);
            }
            if (h && !fused) CHECK_EQ_U64((uint64_t)d9m_spans_task_poll(h, hs, ts, end), 0);
            cur_task = task;
            cur_start = ts;
            cur_end = end;
            if (kind == 1) {
                BOTH(d9m_spans_poll_gap(m, task, ts, end), oracle_poll_gap(o, task, ts, end));
                if (h && !fused) CHECK_EQ_U64((uint64_t)d9m_spans_task_poll_gaps(h, hs, &gp), 0);
            } else if (kind == 2) { /* its attribution, in time order inside it */
                BOTH(d9m_spans_poll_gap(m, task, a, b), oracle_poll_gap(o, task, a, b));
                if (h && !fused) CHECK_EQ_U64((uint64_t)d9m_spans_task_poll_gaps(h, hs, &gp), 0);
                uint64_t c = b + pick(10), d = c + pick(40);
                d9m_part part = pick(2) ? D9M_PART_RUNNABLE : D9M_PART_BLOCKED_OTHER;
                uint32_t stack = pick(2) ? (uint32_t)pick(5) : D9M_SPAN_NO_STACK;
                BOTH(d9m_spans_poll_off(m, task, c, d, part, stack),
                    oracle_poll_off(o, task, c, d, part, stack));
                if (h) CHECK_EQ_U64((uint64_t)d9m_spans_task_poll_off(h, hs, hgen, c, d, part, stack), 0);
                if (pick(2)) { /* a second one, overlapping now and then */
                    uint64_t e = d - pick(8), f = e + pick(30);
                    BOTH(d9m_spans_poll_off(m, task, e, f, D9M_PART_BLOCKED_OTHER, D9M_SPAN_NO_STACK),
                        oracle_poll_off(o, task, e, f, D9M_PART_BLOCKED_OTHER, D9M_SPAN_NO_STACK));
                    if (h)
                        CHECK_EQ_U64((uint64_t)d9m_spans_task_poll_off(h, hs, hgen, e, f, D9M_PART_BLOCKED_OTHER,
                                                                       D9M_SPAN_NO_STACK),
                                     0);
                    uint32_t late = (uint32_t)pick(5);
                    d9m_spans_poll_off_stack(m, task, late);
                    oracle_poll_off_stack(o, task, late);
                    if (h) d9m_spans_task_poll_off_stack(h, hs, hgen, late);
                }
            }
        } else if (what < 65) {
            uint32_t name = 1 + (uint32_t)pick(nnames);
            uint64_t id = 1 + pick(nids) * id_stride, t = pick(3) ? cur_task : 0;
            uint64_t worker = pick(3), tid = 100 + worker;
            BOTH(d9m_spans_begin(m, ts, name, id, t, worker, tid),
                oracle_begin(o, ts, name, id, t, worker, tid));
            if (h) CHECK_EQ_U64((uint64_t)d9m_spans_task_begin(h, ts, name, id, t, h_state(&hr, t), worker, tid), 0);
            if (t && pick(4) == 0) { /* its poll's gap over all of it, fed after the mark (a late reader) */
                d9m_attr_poll gp = {.ngaps = 1, .gaps = {{cur_start, cur_end}}};
                BOTH(d9m_spans_poll_gap(m, t, cur_start, cur_end), oracle_poll_gap(o, t, cur_start, cur_end));
                if (h) CHECK_EQ_U64((uint64_t)d9m_spans_task_poll_gaps(h, h_state(&hr, t), &gp), 0);
            }
        } else if (what < 92) {
            uint32_t name = 1 + (uint32_t)pick(nnames);
            uint64_t id = 1 + pick(nids) * id_stride, t = pick(3) ? cur_task : pick(2) ? task : 0;
            uint64_t worker = pick(3), tid = 100 + worker;
            BOTH(d9m_spans_end(m, ts, name, id, t, worker, tid),
                oracle_end(o, ts, name, id, t, worker, tid));
            if (h) CHECK_EQ_U64((uint64_t)d9m_spans_task_end(h, ts, name, id, t, h_state(&hr, t), worker, tid), 0);
        } else if (what < 97) {
            BOTH(d9m_spans_terminate(m, task), oracle_terminate(o, task));
            if (h && hr.st[slot]) CHECK_EQ_U64((uint64_t)d9m_spans_task_terminate(h, hr.st[slot]), 0);
            hr.st[slot] = NULL;
            if (fresh_ids) hr.id[slot] = next_id++; /* the id is not seen again */
            if (task == cur_task) cur_task = 0;
        } else if (drops) {
            d9m_coverage_drop(&cov, ts, pick(2), 0);
        }
        CHECK_EQ_U64(d9m_spans_tasks_held(m), oracle_tasks_held(o));
    }
    ts += 10;
    BOTH(d9m_spans_finish(m, ts), oracle_finish(o, ts));
    if (h) {
        CHECK_EQ_U64((uint64_t)d9m_spans_finish(h, ts), 0);
        CHECK_EQ_U64(lh.spans, lo.spans);
        CHECK_EQ_U64(lh.n, lo.n);
        CHECK(lh.n != lo.n || lh.n == 0 || memcmp(lh.v, lo.v, lh.n * sizeof *lh.v) == 0);
        CHECK_EQ_U64(d9m_spans_stray_ends(h), oracle_stray_ends(o));
        CHECK_EQ_U64(d9m_spans_reopened(h), oracle_reopened(o));
    }
    CHECK_EQ_U64(ln.spans, lo.spans);
    CHECK_EQ_U64(ln.n, lo.n);
    size_t same = ln.n == lo.n ? ln.n : 0;
    CHECK(same == 0 || memcmp(ln.v, lo.v, same * sizeof *ln.v) == 0);
    CHECK_EQ_U64(d9m_spans_stray_ends(m), oracle_stray_ends(o));
    CHECK_EQ_U64(d9m_spans_reopened(m), oracle_reopened(o));
    CHECK_EQ_U64(d9m_spans_tasks_held(m), oracle_tasks_held(o));
    d9m_spans_free(m);
    d9m_spans_free(h);
    oracle_free(o);
    d9m_coverage_free(&cov);
    free(ln.v);
    free(lo.v);
    free(lh.v);
    return ln.spans;
}

int main(void) {
    size_t spans = 0;
    for (unsigned run = 0; run < 600; run++) {
        unsigned ntasks = 1 + run % 5, nids = 1 + run % 7, nnames = 1 + run % 3;
        spans += one_run(200 + run % 300, ntasks, nids, nnames, run % 4 == 3, run % 2 == 1, (run / 2) % 3 ? 1 : 1024);
    }
    printf("600 runs, %zu spans reported by each model\n", spans);
    CHECK(spans > 10000); /* the inputs do close spans */
    printf("%d passed, %d failed\n", d9t_passed, d9t_failed);
    return d9t_failed != 0;
}
