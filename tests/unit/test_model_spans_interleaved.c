/* The span model (model/spans.h) with spans that interleave across tasks and workers, nest,
 * end out of the order they began in, and never end (a trace cut short), against parts
 * computed by hand from the intervals below. It holds the model's incremental bookkeeping to
 * the definition: a span is split in place from its tasks' intervals, the oldest open span
 * decides which intervals are kept (an outer span that ends last still has the polls it began
 * with), two touching polls count once each.
 *
 * The tasks' intervals (ns), from the polls and wakes fed below:
 *   task 1: poll 70..90, wait 90..100, poll 100..200, wait 200..300, queued 300..320 (woken 300), poll 320..400,
 *           wait 400..460, queued 460..480 (woken 460), poll 480..520, then wait
 *   task 2: queued 150..160 (woken 150, never polled before), poll 160..260,
 *           wait 260..410, queued 410..430 (woken 410), poll 430..470, then wait
 *   task 3: poll 200..250, poll 250..280 (touching, never woken) */
#include <string.h>

#include "check.h"
#include "test_rng.h"
#include "model/spans.h"

#define MAXS 8
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

static void check_parts(const d9m_span *s, uint64_t poll, uint64_t queued, uint64_t wait, uint64_t unknown) {
    CHECK_EQ_U64(s->parts.poll_ns, poll);
    CHECK_EQ_U64(s->parts.queued_ns, queued);
    CHECK_EQ_U64(s->parts.wait_ns, wait);
    CHECK_EQ_U64(s->parts.unknown_ns, unknown);
    CHECK_EQ_U64(poll + queued + wait + unknown, s->end_ts - s->begin_ts);
    /* no switch records fed: the in-poll part is all on CPU */
    CHECK_EQ_U64(s->poll_parts.ns[D9M_PART_ON_CPU], poll);
}

enum { NAME_REQ = 1, NAME_SUB = 2, NAME_OUTER = 3, NAME_TOUCH = 4, NAME_LONG = 5 };

static void interleaved(void) {
    got g = {0};
    d9m_spans *m = d9m_spans_new(on_span, &g);
    CHECK(m != NULL);
    /* in time order, a span mark after the polls of its timestamp */
    CHECK_EQ_U64(d9m_spans_begin(m, 50, NAME_OUTER, 40, 0, 255, 9), 0); /* D: outside any poll */
    CHECK_EQ_U64(d9m_spans_begin(m, 60, NAME_LONG, 60, 0, 255, 9), 0);  /* F: outside any poll */
    CHECK_EQ_U64(d9m_spans_poll(m, 1, 70, 90), 0);                     /* task 1 on worker 0 */
    CHECK_EQ_U64(d9m_spans_poll(m, 1, 100, 200), 0);
    CHECK_EQ_U64(d9m_spans_begin(m, 120, NAME_REQ, 10, 1, 0, 11), 0);   /* A, in task 1 */
    CHECK_EQ_U64(d9m_spans_wake(m, 2, 150), 0);
    CHECK_EQ_U64(d9m_spans_poll(m, 2, 160, 260), 0);                   /* task 2 on worker 1 */
    CHECK_EQ_U64(d9m_spans_end(m, 165, NAME_OUTER, 40, 2, 1, 12), 0);   /* D ends first of all */
    CHECK_EQ_U64(d9m_spans_begin(m, 170, NAME_SUB, 20, 2, 1, 12), 0);   /* B, nested in A */
    CHECK_EQ_U64(d9m_spans_poll(m, 3, 200, 250), 0);                   /* task 3 on worker 2 */
    CHECK_EQ_U64(d9m_spans_begin(m, 210, NAME_TOUCH, 50, 3, 2, 13), 0); /* E */
    CHECK_EQ_U64(d9m_spans_poll(m, 3, 250, 280), 0);
    CHECK_EQ_U64(d9m_spans_end(m, 270, NAME_TOUCH, 50, 3, 2, 13), 0);
    CHECK_EQ_U64(d9m_spans_wake(m, 1, 300), 0);
    CHECK_EQ_U64(d9m_spans_poll(m, 1, 320, 400), 0);
    CHECK_EQ_U64(d9m_spans_begin(m, 330, NAME_REQ, 30, 1, 0, 11), 0);   /* C, nested in A */
    CHECK_EQ_U64(d9m_spans_end(m, 340, NAME_LONG, 60, 1, 0, 11), 0);    /* F, the oldest open */
    CHECK_EQ_U64(d9m_spans_end(m, 350, NAME_SUB, 20, 1, 0, 11), 0);     /* B ends in task 1 */
    CHECK_EQ_U64(d9m_spans_wake(m, 2, 410), 0);
    CHECK_EQ_U64(d9m_spans_poll(m, 2, 430, 470), 0);
    CHECK_EQ_U64(d9m_spans_wake(m, 1, 460), 0);
    CHECK_EQ_U64(d9m_spans_poll(m, 1, 480, 520), 0); /* task 1's intervals kept from A's begin */
    CHECK_EQ_U64(d9m_spans_end(m, 490, NAME_REQ, 10, 1, 0, 11), 0);     /* A, before C */
    CHECK_EQ_U64(g.n, 5);
    CHECK_EQ_U64(d9m_spans_finish(m, 600), 0);                         /* C never ends */
    CHECK_EQ_U64(g.n, 6);
    CHECK_EQ_U64(d9m_spans_stray_ends(m), 0);
    CHECK_EQ_U64(d9m_spans_reopened(m), 0);

    /* D 50..165, ends in task 2: unknown until task 2's wake at 150 (no task at its begin),
     * queued 150..160, in its poll 160..165 */
    const d9m_span *d = &g.s[0];
    CHECK_EQ_U64(d->name, NAME_OUTER);
    CHECK(d->ended);
    CHECK_EQ_U64(d->begin_task, 0);
    CHECK_EQ_U64(d->end_task, 2);
    check_parts(d, 5, 10, 0, 100);

    /* E 210..270 in task 3: two touching polls */
    const d9m_span *e = &g.s[1];
    CHECK_EQ_U64(e->name, NAME_TOUCH);
    check_parts(e, 60, 0, 0, 0);

    /* F 60..340, the oldest open span once D ended, itself ended in task 1 while A, B and C
     * are open: unknown until task 1's first poll at 70; poll 70..90, 100..200, 320..340;
     * queued 300..320; wait 90..100, 200..300 */
    const d9m_span *f = &g.s[2];
    CHECK_EQ_U64(f->name, NAME_LONG);
    check_parts(f, 140, 20, 110, 10);

    /* B 170..350, begun in task 2 on worker 1, ended in task 1 on worker 0: the union of both.
     * poll 170..260 (both polled until 200) + 320..350 = 120; queued 300..320 (task 1);
     * wait 260..300 (both), 350 is inside task 1's poll: 40 */
    const d9m_span *b = &g.s[3];
    CHECK_EQ_U64(b->name, NAME_SUB);
    CHECK_EQ_U64(b->begin_task, 2);
    CHECK_EQ_U64(b->end_task, 1);
    CHECK_EQ_U64(b->begin_worker, 1);
    CHECK_EQ_U64(b->end_worker, 0);
    check_parts(b, 120, 20, 40, 0);

    /* A 120..490 in task 1, ended after B and C began and F and B ended: poll 120..200, 320..400,
     * 480..490 = 170; queued 300..320, 460..480 = 40; wait 200..300, 400..460 = 160 */
    const d9m_span *a = &g.s[4];
    CHECK_EQ_U64(a->name, NAME_REQ);
    CHECK_EQ_U64(a->id, 10);
    CHECK(a->ended);
    check_parts(a, 170, 40, 160, 0);

    /* C 330..600, never ended: poll 330..400, 480..520 = 110; queued 460..480 = 20;
     * wait 400..460, and after its last poll 520..600 = 140 */
    const d9m_span *c = &g.s[5];
    CHECK_EQ_U64(c->name, NAME_REQ);
    CHECK_EQ_U64(c->id, 30);
    CHECK(!c->ended);
    CHECK_EQ_U64(c->end_ts, 600);
    check_parts(c, 110, 20, 140, 0);
    d9m_spans_free(m);
}

/* Many spans open at once over one task, ended in the order they began (a server's requests):
 * each keeps the intervals since its own begin however many ended before it. */
static void many_open(void) {
    got g = {0};
    d9m_spans *m = d9m_spans_new(on_span, &g);
    CHECK(m != NULL);
    for (uint64_t i = 0; i < 6; i++) { /* task 7 polled 100 in every 1000, a span begun in each */
        CHECK_EQ_U64(d9m_spans_poll(m, 7, 1000 * i, 1000 * i + 100), 0);
        CHECK_EQ_U64(d9m_spans_begin(m, 1000 * i + 50, NAME_REQ, i, 7, 0, 11), 0);
    }
    CHECK_EQ_U64(d9m_spans_poll(m, 7, 6000, 6100), 0);
    for (uint64_t i = 0; i < 6; i++) CHECK_EQ_U64(d9m_spans_end(m, 6050 + i, NAME_REQ, i, 7, 0, 11), 0);
    CHECK_EQ_U64(g.n, 6);
    for (uint64_t i = 0; i < 6; i++) {
        const d9m_span *s = &g.s[i];
        CHECK_EQ_U64(s->id, i);
        /* 50 of its first poll, 100 of each of the 5 - i after, 50 + i of the last */
        uint64_t poll = 50 + 100 * (5 - i) + 50 + i;
        check_parts(s, poll, 0, s->end_ts - s->begin_ts - poll, 0);
    }
    d9m_spans_free(m);
}

/* A span over one task against the same over two, the second empty: every span is begun twice
 * at once, one twin ended in its task, the other in a task never seen. Random polls (some
 * overlapping the previous one: the walk must hand over to the union), wakes and spans, from a
 * fixed seed. test_model_spans_oracle holds the walk to the union on two tasks. */
#define TWINS 400
typedef struct twins {
    d9m_span_parts parts[2][TWINS];
    d9m_parts poll_parts[2][TWINS];
    bool seen[2][TWINS];
} twins;

static void on_twin(void *ctx, const d9m_span *s) {
    twins *t = ctx;
    if (s->id >= TWINS || s->name > 1) return;
    t->seen[s->name][s->id] = true;
    t->parts[s->name][s->id] = s->parts;
    t->poll_parts[s->name][s->id] = s->poll_parts;
}

static void in_place_equals_union(void) {
    static twins t;
    memset(&t, 0, sizeof t);
    d9m_spans *m = d9m_spans_new(on_twin, &t);
    CHECK(m != NULL);
    d9t_rng rng = {D9T_RNG_SEED}; /* the same sequence on every run */
    uint64_t now = 1000, last_poll_end = 0;
    uint64_t next_id = 0, open[TWINS], nopen = 0;
    uint64_t overlapping = 0;
    while (next_id < TWINS || nopen) {
        now += 1 + d9t_rng_below(&rng, 40);
        uint64_t r = d9t_rng_below(&rng, 10);
        if (r < 4) { /* a poll of task 1, sometimes starting before the previous one ended */
            uint64_t start = now, end = now + 1 + d9t_rng_below(&rng, 60);
            if (start < last_poll_end) overlapping++;
            CHECK_EQ_U64(d9m_spans_poll(m, 1, start, end), 0);
            if (end > last_poll_end) last_poll_end = end;
        } else if (r < 6) {
            CHECK_EQ_U64(d9m_spans_wake(m, 1, now), 0);
        } else if (r < 8 && next_id < TWINS) { /* inside a poll or not: the task either way */
            for (uint32_t name = 0; name < 2; name++)
                CHECK_EQ_U64(d9m_spans_begin(m, now, name, next_id, 1, 0, 11), 0);
            open[nopen++] = next_id++;
        } else if (nopen) { /* end a random open pair: out of order */
            size_t k = d9t_rng_below(&rng, nopen);
            uint64_t id = open[k];
            open[k] = open[--nopen];
            CHECK_EQ_U64(d9m_spans_end(m, now, 0, id, 1, 0, 11), 0);  /* one task */
            CHECK_EQ_U64(d9m_spans_end(m, now, 1, id, 99, 1, 12), 0); /* two tasks */
        }
    }
    CHECK_EQ_U64(d9m_spans_finish(m, now + 100), 0);
    CHECK(overlapping > 10); /* the fallback to the union was exercised */
    size_t differ = 0;
    for (size_t i = 0; i < TWINS; i++) {
        CHECK(t.seen[0][i] && t.seen[1][i]);
        bool same = !memcmp(&t.parts[0][i], &t.parts[1][i], sizeof t.parts[0][i]) &&
                    !memcmp(&t.poll_parts[0][i], &t.poll_parts[1][i], sizeof t.poll_parts[0][i]);
        differ += !same;
    }
    CHECK_EQ_U64(differ, 0);
    d9m_spans_free(m);
}

int main(void) {
    interleaved();
    many_open();
    in_place_equals_union();
    return d9t_summary("model_spans_interleaved");
}
