/* Long polls' exact CPU time (PollCpuEvent, core/poll_cpu.h) through the whole analysis
 * (`dial9 analyze`), on hand-built traces: the parts of each poll add up to its elapsed time,
 * its off-CPU total is elapsed - CPU time, split by cause where switch records cover it and
 * off_cpu_uncaptured in the rest of it, nothing unknown; a poll whose event says "not exact"
 * stays unknown; a PollCpuEvent written after the next poll's start (a fused end and begin)
 * is its poll's; and the coverage count of polls over 1 ms. */
#include "check.h"
#include "attribution_trace.h"

static uint64_t part(const d9m_parts *p, d9m_part k) { return p->ns[k]; }

static const d9a_location_report *loc(const d9a_report *r, const char *name) {
    for (size_t i = 0; i < r->nlocations; i++)
        if (!strcmp(r->locations[i].location, name)) return &r->locations[i];
    return NULL;
}

static void tb_poll_cpu(tb *t, uint64_t ts, uint64_t worker, uint64_t cpu, bool exact) {
    d9_enc_event(&t->b, &t->st, D9_SCH_POLL_CPU, ts);
    d9_put_varint(&t->b, worker);
    d9_put_varint(&t->b, cpu);
    d9_put_u8(&t->b, exact);
}

#define T0 (5000 * MS)

/* the builder's stream, and PollCpuEvent's schema (the builder declares those up to
 * UploadLossEvent) */
static void stream(tb *t) {
    tb_stream(t);
    d9_enc_schema(&t->b, D9_SCH_POLL_CPU, &d9_builtin_schemas[D9_SCH_POLL_CPU]);
}

/* No switch records (source.off_cpu inactive), poll_cpu on:
 *   a.c  0 .. 10 ms, CPU 4 ms (exact)           -> on_cpu 4, off_cpu_uncaptured 6
 *   b.c  20 .. 25 ms, no event (no switch)       -> on_cpu 5: its thread ran all of it
 *   c.c  30 .. 40 ms, not exact                  -> unknown 10, not accounted
 *   d.c  50 .. 50.5 ms: under 1 ms, not counted
 *   e.c  60 .. 70 ms, then f.c 70 .. 72 ms begun at the same time, e's event after f's start:
 *        e CPU 1 ms -> on_cpu 1, off_cpu_uncaptured 9; f no event (no switch): on_cpu 2 */
static void test_without_switch_records(void) {
    tb t = {0};
    stream(&t);
    const char *meta[] = {"source.off_cpu", "inactive: DIAL9_SCHEDULE_PROFILE_ENABLED=0", "poll_cpu",
                          "on: polls over 1000 us with a switch inside, on threads with a task-clock page", NULL};
    tb_metadata(&t, T0, meta);
    uint32_t la = tb_string(&t, "a.c:1"), lb = tb_string(&t, "b.c:1"), lc = tb_string(&t, "c.c:1"),
             ld = tb_string(&t, "d.c:1"), le = tb_string(&t, "e.c:1"), lf = tb_string(&t, "f.c:1");
    tb_poll(&t, T0, 10 * MS, 0, 0, 1, la);
    tb_poll_cpu(&t, T0 + 10 * MS + 200, 0, 4 * MS, true);
    tb_poll(&t, T0 + 20 * MS, 5 * MS, 0, 0, 2, lb);
    tb_poll(&t, T0 + 30 * MS, 10 * MS, 0, 0, 3, lc);
    tb_poll_cpu(&t, T0 + 40 * MS + 200, 0, 0, false);
    tb_poll(&t, T0 + 50 * MS, 500 * US, 0, 0, 4, ld);
    tb_poll_start(&t, T0 + 60 * MS, 0, 0, 5, le);
    tb_poll_end(&t, T0 + 70 * MS, 0);
    tb_poll_start(&t, T0 + 70 * MS, 0, 0, 6, lf);
    tb_poll_cpu(&t, T0 + 70 * MS + 100, 0, 1 * MS, true);
    tb_poll_end(&t, T0 + 72 * MS, 0);
    d9a_analysis *a;
    const d9a_report *r = tb_analyze(&a, &t, NULL);
    CHECK(r != NULL);
    if (r) {
        const d9a_location_report *L = loc(r, "a.c:1");
        CHECK(L != NULL);
        if (L) {
            CHECK_EQ_U64(part(&L->parts, D9M_PART_ON_CPU), 4 * MS);
            CHECK_EQ_U64(part(&L->parts, D9M_PART_OFF_CPU_UNCAPTURED), 6 * MS);
            CHECK_EQ_U64(part(&L->parts, D9M_PART_UNKNOWN), 0);
            CHECK_EQ_U64(d9m_parts_total(&L->parts), 10 * MS);
        }
        L = loc(r, "b.c:1");
        CHECK(L && part(&L->parts, D9M_PART_ON_CPU) == 5 * MS && part(&L->parts, D9M_PART_UNKNOWN) == 0);
        L = loc(r, "c.c:1");
        CHECK(L && part(&L->parts, D9M_PART_UNKNOWN) == 10 * MS && part(&L->parts, D9M_PART_OFF_CPU_UNCAPTURED) == 0);
        L = loc(r, "e.c:1");
        CHECK(L != NULL);
        if (L) {
            CHECK_EQ_U64(part(&L->parts, D9M_PART_ON_CPU), 1 * MS);
            CHECK_EQ_U64(part(&L->parts, D9M_PART_OFF_CPU_UNCAPTURED), 9 * MS);
            CHECK_EQ_U64(part(&L->parts, D9M_PART_UNKNOWN), 0);
        }
        L = loc(r, "f.c:1");
        CHECK(L && part(&L->parts, D9M_PART_ON_CPU) == 2 * MS && part(&L->parts, D9M_PART_UNKNOWN) == 0);
        L = loc(r, "d.c:1"); /* under the threshold: its gap stays unknown */
        CHECK(L && part(&L->parts, D9M_PART_UNKNOWN) == 500 * US);
        CHECK_EQ_U64(d9m_parts_total(&r->parts), r->polls.total);
        CHECK_EQ_U64(part(&r->parts, D9M_PART_OFF_CPU_UNCAPTURED), 15 * MS);
        const d9a_poll_cpu_cover *c = &r->poll_cpu;
        CHECK(c->stated_on);
        CHECK_EQ_U64(c->min_ns, 1 * MS);
        CHECK_EQ_U64(c->polls, 5);       /* a, b, c, e, f */
        CHECK_EQ_U64(c->accounted, 4);   /* all but c */
        CHECK_EQ_U64(c->by_event, 2);    /* a, e */
        CHECK_EQ_U64(c->no_switch, 2);   /* b, f */
        CHECK_EQ_U64(c->by_switches, 0);
        CHECK_EQ_U64(c->inexact, 1);     /* c */
        CHECK_EQ_U64(c->with_stack, 2);  /* b, f: nothing to explain; a and e have no stack */
    }
    d9a_free(a);
    d9_buf_free(&t.b);
}

/* With switch records: g.c 0 .. 10 ms, a lock wait 1 .. 5 ms with its stack, the governor
 * sampled 6 .. 9 ms (a gap of 3 ms), CPU 4 ms: off-CPU 6 ms, 4 of them lock, the other 2 in
 * the gap (off_cpu_uncaptured), on_cpu 4 ms. h.c 20 .. 25 ms: covered, no event: exact by the
 * switch records. */
static void test_with_switch_records(void) {
    tb t = {0};
    stream(&t);
    const char *meta[] = {"source.off_cpu", "active: perf switch records", "poll_cpu",
                          "on: polls over 1000 us with a switch inside", NULL};
    tb_metadata(&t, T0, meta);
    tb_coverage(&t, T0, "full");
    uint64_t lock_stack[] = {K_SCHED, K_FUTEX, K_SYSCALL, U_LOCK, U_APP};
    uint32_t s_lock = tb_stack(&t, lock_stack, 5);
    uint32_t lg = tb_string(&t, "g.c:1"), lh = tb_string(&t, "h.c:1");
    tb_coverage(&t, T0 + 6 * MS, "sampled");
    tb_coverage(&t, T0 + 9 * MS, "full");
    tb_poll(&t, T0, 10 * MS, 0, 0, 1, lg);
    tb_poll_cpu(&t, T0 + 10 * MS + 200, 0, 4 * MS, true);
    blocked(&t, T0 + 1 * MS, T0 + 5 * MS, s_lock);
    tb_poll(&t, T0 + 20 * MS, 5 * MS, 0, 0, 2, lh);
    blocked(&t, T0 + 21 * MS, T0 + 22 * MS, 0);
    tb_symbol(&t, K_SCHED, 0x100, "__schedule", 0, "", 0);
    tb_symbol(&t, K_FUTEX, 0x100, "futex_wait_queue", 0, "", 0);
    tb_symbol(&t, K_SYSCALL, 0x100, "do_syscall_64", 0, "", 0);
    tb_symbol(&t, U_LOCK, 0x100, "__lll_lock_wait", 0, "", 0);
    tb_symbol(&t, U_APP, 0x100, "handler", 0, "app.c", 10);
    d9a_analysis *a;
    const d9a_report *r = tb_analyze(&a, &t, NULL);
    CHECK(r != NULL);
    if (r) {
        const d9a_location_report *L = loc(r, "g.c:1");
        CHECK(L != NULL);
        if (L) {
            CHECK_EQ_U64(part(&L->parts, D9M_PART_LOCK), 4 * MS);
            CHECK_EQ_U64(part(&L->parts, D9M_PART_OFF_CPU_UNCAPTURED), 2 * MS);
            CHECK_EQ_U64(part(&L->parts, D9M_PART_ON_CPU), 4 * MS);
            CHECK_EQ_U64(part(&L->parts, D9M_PART_UNKNOWN), 0);
            CHECK_EQ_U64(d9m_parts_total(&L->parts), 10 * MS);
        }
        L = loc(r, "h.c:1");
        CHECK(L && part(&L->parts, D9M_PART_BLOCKED_OTHER) == 1 * MS && part(&L->parts, D9M_PART_ON_CPU) == 4 * MS);
        const d9a_poll_cpu_cover *c = &r->poll_cpu;
        CHECK_EQ_U64(c->polls, 2);
        CHECK_EQ_U64(c->accounted, 2);
        CHECK_EQ_U64(c->by_event, 1);
        CHECK_EQ_U64(c->by_switches, 1);
        CHECK_EQ_U64(c->with_stack, 1); /* g: its 4 ms lock wait has its stack; h's 1 ms has none */
    }
    d9a_free(a);
    d9_buf_free(&t.b);
}

int main(void) {
    test_without_switch_records();
    test_with_switch_records();
    return d9t_summary("analysis_poll_cpu");
}
