/* Where each poll's time went, through the whole analysis (`dial9 analyze`), on a hand-built
 * trace with known off-CPU intervals: exact parts per spawn location and per long poll, causes
 * read from the symbolized stacks taken at the switch-outs (whose symbols come at the end of
 * the trace, as the recorder writes them), a sampled period of the cost governor and a drop
 * that stay unknown, and a trace without switch records where everything is unknown. */
#include "check.h"
#include "attribution_trace.h"

static uint64_t part(const d9m_parts *p, d9m_part k) { return p->ns[k]; }

static const d9a_location_report *loc(const d9a_report *r, const char *name) {
    for (size_t i = 0; i < r->nlocations; i++)
        if (!strcmp(r->locations[i].location, name)) return &r->locations[i];
    return NULL;
}

static const d9a_long_poll *long_poll(const d9a_report *r, const char *name) {
    for (size_t i = 0; i < r->nlong_polls; i++)
        if (!strcmp(r->long_polls[i].location, name)) return &r->long_polls[i];
    return NULL;
}

static void test_parts(void) {
    tb t = {0};
    attribution_trace(&t, true);
    d9a_analysis *a;
    const d9a_report *r = tb_analyze(&a, &t, NULL);
    CHECK(r != NULL);
    if (r) {
        const d9a_location_report *L = loc(r, "lock.c:1");
        CHECK(L != NULL);
        if (L) {
            CHECK_EQ_U64(part(&L->parts, D9M_PART_LOCK), 4 * MS);
            CHECK_EQ_U64(part(&L->parts, D9M_PART_RUNNABLE), 1 * MS);
            CHECK_EQ_U64(part(&L->parts, D9M_PART_BLOCKED_OTHER), 500 * US);
            CHECK_EQ_U64(part(&L->parts, D9M_PART_ON_CPU), 4500 * US);
            CHECK_EQ_U64(part(&L->parts, D9M_PART_UNKNOWN), 0);
            CHECK_EQ_U64(d9m_parts_total(&L->parts), L->polls.total);
        }
        L = loc(r, "sleep.c:1");
        CHECK(L && part(&L->parts, D9M_PART_SLEEP) == 8 * MS && part(&L->parts, D9M_PART_ON_CPU) == 2 * MS);
        L = loc(r, "io.c:1");
        CHECK(L != NULL);
        if (L) {
            CHECK_EQ_U64(part(&L->parts, D9M_PART_IO), 1 * MS); /* 39 .. 40: the rest is in the gap */
            CHECK_EQ_U64(part(&L->parts, D9M_PART_UNKNOWN), 5 * MS);
            CHECK_EQ_U64(part(&L->parts, D9M_PART_ON_CPU), 4 * MS);
        }
        L = loc(r, "drop.c:1");
        CHECK(L && part(&L->parts, D9M_PART_UNKNOWN) == 5 * MS && part(&L->parts, D9M_PART_ON_CPU) == 5 * MS);
        L = loc(r, "after.c:1");
        CHECK(L && part(&L->parts, D9M_PART_SLEEP) == 3 * MS && part(&L->parts, D9M_PART_BLOCKED_OTHER) == 0);
        /* the longest polls carry the same parts */
        const d9a_long_poll *p = long_poll(r, "lock.c:1");
        CHECK(p && part(&p->parts, D9M_PART_LOCK) == 4 * MS && part(&p->parts, D9M_PART_ON_CPU) == 4500 * US &&
              d9m_parts_total(&p->parts) == p->duration_ns);
        p = long_poll(r, "io.c:1");
        CHECK(p && part(&p->parts, D9M_PART_IO) == 1 * MS && part(&p->parts, D9M_PART_UNKNOWN) == 5 * MS);
        CHECK_EQ_U64(d9m_parts_total(&r->parts), r->polls.total);
        CHECK_EQ_U64(part(&r->parts, D9M_PART_UNKNOWN), 10 * MS);
    }
    d9a_free(a);
    d9_buf_free(&t.b);
}

static void test_no_switch_records(void) {
    tb t = {0};
    attribution_trace(&t, false);
    d9a_analysis *a;
    const d9a_report *r = tb_analyze(&a, &t, NULL);
    CHECK(r != NULL);
    if (r) {
        CHECK_EQ_U64(part(&r->parts, D9M_PART_UNKNOWN), r->polls.total);
        CHECK_EQ_U64(part(&r->parts, D9M_PART_ON_CPU), 0);
        CHECK_EQ_U64(r->polls.total, 45 * MS);
    }
    d9a_free(a);
    d9_buf_free(&t.b);
}

/* --from/--to: a poll is the window's by its start, and whole (as its duration is). */
static void test_window(void) {
    tb t = {0};
    attribution_trace(&t, true);
    d9a_options opt;
    d9a_options_init(&opt);
    CHECK(d9_time_arg_parse("15ms", &opt.from, NULL, 0) == 0);
    d9a_analysis *a;
    const d9a_report *r = tb_analyze(&a, &t, &opt);
    CHECK(r != NULL);
    if (r) {
        CHECK(loc(r, "lock.c:1") == NULL || loc(r, "lock.c:1")->polls.count == 0);
        const d9a_location_report *L = loc(r, "sleep.c:1");
        CHECK(L && part(&L->parts, D9M_PART_SLEEP) == 8 * MS);
        CHECK_EQ_U64(d9m_parts_total(&r->parts), r->polls.total);
    }
    d9a_free(a);
    d9_buf_free(&t.b);
}

/* A poll that reaches the time-ordering window after later records were handed on (a late
 * record): its switch records could not be placed, so all of it is unknown, and the parts
 * still add up to the polls' time. */
static void test_late_poll(void) {
    tb t = {0};
    tb_stream(&t);
    const char *meta[] = {"source.off_cpu", "active", NULL};
    tb_metadata(&t, ATTR_T0, meta);
    uint32_t early = tb_string(&t, "early.c:1"), later = tb_string(&t, "later.c:1");
    tb_poll_start(&t, ATTR_T0, 1, 0, 1, early); /* worker 1's poll ends after all of worker 0's */
    for (uint64_t i = 0; i < 20; i++) tb_poll(&t, ATTR_T0 + (i + 1) * MS, 500 * US, 0, 0, 2 + i, later);
    tb_poll_end(&t, ATTR_T0 + 30 * MS, 1);
    d9a_options opt;
    d9a_options_init(&opt);
    opt.window_records = 4;
    d9a_analysis *a;
    const d9a_report *r = tb_analyze(&a, &t, &opt);
    CHECK(r != NULL);
    if (r) {
        CHECK(r->late_records >= 1);
        const d9a_location_report *L = loc(r, "early.c:1");
        CHECK(L && part(&L->parts, D9M_PART_UNKNOWN) == 30 * MS && d9m_parts_total(&L->parts) == 30 * MS);
        L = loc(r, "later.c:1");
        CHECK(L && part(&L->parts, D9M_PART_ON_CPU) == 20 * 500 * US);
        CHECK_EQ_U64(d9m_parts_total(&r->parts), r->polls.total);
    }
    d9a_free(a);
    d9_buf_free(&t.b);
}

int main(void) {
    test_late_poll();
    test_parts();
    test_no_switch_records();
    test_window();
    return d9t_summary("analysis_attribution");
}
