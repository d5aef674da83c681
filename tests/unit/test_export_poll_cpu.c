/* Long polls' exact CPU time (PollCpuEvent, core/poll_cpu.h) in the export model, on
 * hand-built traces: every poll's parts equal those analyze reports for its spawn location
 * (one poll each), off_cpu_uncaptured included, with and without switch records; a poll whose
 * event says "not exact" stays unknown; an event written after the next poll's start (a fused
 * end and begin) is its poll's; a poll cut at --to keeps its gap unknown (its CPU time is the
 * whole poll's); Perfetto's poll slices carry off_cpu_uncaptured_ns; and the model's one rule
 * for a long poll without a PollCpuEvent while poll_cpu is stated on (its gaps are on_cpu, as
 * analyze says), on the shared vector's trace (tests/unit/poll_cpu_trace.h). */
#include <stdio.h>

#include "attribution_trace.h"
#include "poll_cpu_trace.h"
#include "check.h"
#include "export/export.h"
#include "export_model_of.h"

#define T0 (5000 * MS)

static void put_poll_cpu(tb *t, uint64_t ts, uint64_t worker, uint64_t cpu, bool exact) {
    d9_enc_event(&t->b, &t->st, D9_SCH_POLL_CPU, ts);
    d9_put_varint(&t->b, worker);
    d9_put_varint(&t->b, cpu);
    d9_put_u8(&t->b, exact);
}

/* the builder's stream, and PollCpuEvent's schema (the builder declares those up to
 * UploadLossEvent) */
static void stream(tb *t) {
    tb_stream(t);
    d9_enc_schema(&t->b, D9_SCH_POLL_CPU, &d9_builtin_schemas[D9_SCH_POLL_CPU]);
}

static const d9m_parts *export_parts(const d9_xmodel *m, const char *loc) {
    for (size_t i = 0; i < m->poll_count; i++)
        if (!strcmp(d9_xm_str(m, m->polls[i].loc), loc)) return &m->poll_parts[i];
    return NULL;
}

/* Each location of analyze's report against its one poll in the export model. */
static void same_parts(const d9a_report *r, const d9_xmodel *m, size_t want_locations) {
    CHECK(m->poll_parts != NULL);
    if (!m->poll_parts) return;
    CHECK_EQ_U64(r->nlocations, want_locations);
    for (size_t k = 0; k < r->nlocations; k++) {
        const d9m_parts *x = export_parts(m, r->locations[k].location);
        CHECK(x != NULL);
        if (!x) continue;
        for (int p = 0; p < D9M_PARTS; p++) {
            if (x->ns[p] != r->locations[k].parts.ns[p])
                fprintf(stderr, "%s %s: export %llu, analyze %llu\n", r->locations[k].location, d9m_part_names[p],
                        (unsigned long long)x->ns[p], (unsigned long long)r->locations[k].parts.ns[p]);
            CHECK_EQ_U64(x->ns[p], r->locations[k].parts.ns[p]);
        }
    }
}

/* A trace analyzed and exported (each NULL when it fails, checked), and the export's parts of
 * every poll checked equal to analyze's, over want_locations locations. */
typedef struct both {
    d9a_analysis *a;
    const d9a_report *r;
    d9_xmodel *m;
} both;

static both analyze_and_export(tb *t, size_t want_locations) {
    both x = {0};
    x.r = tb_analyze(&x.a, t, NULL);
    x.m = d9t_xmodel_of(&t->b, NULL);
    CHECK(x.r != NULL && x.m != NULL);
    if (x.r && x.m) same_parts(x.r, x.m, want_locations);
    return x;
}

static void both_free(both *x, tb *t) {
    d9_xmodel_free(x->m);
    d9a_free(x->a);
    d9_buf_free(&t->b);
}

static bool perfetto_has(const d9_xmodel *m, const char *s) {
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    char err[256];
    d9_xopts o;
    d9_xopts_init(&o);
    CHECK(out && d9_export_write(m, D9_XF_PERFETTO, &o, out, err, sizeof err) == 0);
    if (out) fclose(out);
    bool has = buf && memmem(buf, len, s, strlen(s)) != NULL;
    free(buf);
    return has;
}

/* No switch records (source.off_cpu inactive):
 *   a.c  0 .. 10 ms, CPU 4 ms (exact)      -> on_cpu 4, off_cpu_uncaptured 6
 *   b.c  20 .. 25 ms, no event             -> unknown 5 (no switch records say it ran)
 *   c.c  30 .. 40 ms, not exact            -> unknown 10
 *   e.c  60 .. 70 ms, f.c begun at 70 ms, e's event after f's start:
 *        e CPU 1 ms -> on_cpu 1, off_cpu_uncaptured 9; f no event -> unknown 2 */
static void test_without_switch_records(void) {
    tb t = {0};
    stream(&t);
    const char *meta[] = {"source.off_cpu", "inactive: DIAL9_SCHEDULE_PROFILE_ENABLED=0", NULL};
    tb_metadata(&t, T0, meta);
    uint32_t la = tb_string(&t, "a.c:1"), lb = tb_string(&t, "b.c:1"), lc = tb_string(&t, "c.c:1"),
             le = tb_string(&t, "e.c:1"), lf = tb_string(&t, "f.c:1");
    tb_poll(&t, T0, 10 * MS, 0, 0, 1, la);
    put_poll_cpu(&t, T0 + 10 * MS + 200, 0, 4 * MS, true);
    tb_poll(&t, T0 + 20 * MS, 5 * MS, 0, 0, 2, lb);
    tb_poll(&t, T0 + 30 * MS, 10 * MS, 0, 0, 3, lc);
    put_poll_cpu(&t, T0 + 40 * MS + 200, 0, 0, false);
    tb_poll_start(&t, T0 + 60 * MS, 0, 0, 5, le);
    tb_poll_end(&t, T0 + 70 * MS, 0);
    tb_poll_start(&t, T0 + 70 * MS, 0, 0, 6, lf);
    put_poll_cpu(&t, T0 + 70 * MS + 100, 0, 1 * MS, true);
    tb_poll_end(&t, T0 + 72 * MS, 0);
    both run = analyze_and_export(&t, 5);
    d9_xmodel *m = run.m;
    if (run.r && m) {
        const d9m_parts *x = m->poll_parts ? export_parts(m, "a.c:1") : NULL;
        CHECK(x && x->ns[D9M_PART_OFF_CPU_UNCAPTURED] == 6 * MS && x->ns[D9M_PART_ON_CPU] == 4 * MS);
        x = m->poll_parts ? export_parts(m, "e.c:1") : NULL;
        CHECK(x && x->ns[D9M_PART_OFF_CPU_UNCAPTURED] == 9 * MS && x->ns[D9M_PART_ON_CPU] == 1 * MS);
        x = m->poll_parts ? export_parts(m, "c.c:1") : NULL;
        CHECK(x && x->ns[D9M_PART_UNKNOWN] == 10 * MS);
        CHECK(perfetto_has(m, "off_cpu_uncaptured_ns"));
    }
    both_free(&run, &t);
}

/* With switch records: g.c 0 .. 10 ms, a lock wait 1 .. 5 ms with its stack, the governor
 * sampled 6 .. 9 ms (a gap of 3 ms), CPU 4 ms -> lock 4, off_cpu_uncaptured 2, on_cpu 4.
 * h.c 20 .. 25 ms: covered, no event. */
static void with_switch_records(tb *t) {
    stream(t);
    const char *meta[] = {"source.off_cpu", "active: perf switch records", NULL};
    tb_metadata(t, T0, meta);
    tb_coverage(t, T0, "full");
    uint64_t lock_stack[] = {K_SCHED, K_FUTEX, K_SYSCALL, U_LOCK, U_APP};
    uint32_t s_lock = tb_stack(t, lock_stack, 5);
    uint32_t lg = tb_string(t, "g.c:1"), lh = tb_string(t, "h.c:1");
    tb_coverage(t, T0 + 6 * MS, "sampled");
    tb_coverage(t, T0 + 9 * MS, "full");
    tb_poll(t, T0, 10 * MS, 0, 0, 1, lg);
    put_poll_cpu(t, T0 + 10 * MS + 200, 0, 4 * MS, true);
    blocked(t, T0 + 1 * MS, T0 + 5 * MS, s_lock);
    tb_poll(t, T0 + 20 * MS, 5 * MS, 0, 0, 2, lh);
    blocked(t, T0 + 21 * MS, T0 + 22 * MS, 0);
    tb_symbol(t, K_SCHED, 0x100, "__schedule", 0, "", 0);
    tb_symbol(t, K_FUTEX, 0x100, "futex_wait_queue", 0, "", 0);
    tb_symbol(t, K_SYSCALL, 0x100, "do_syscall_64", 0, "", 0);
    tb_symbol(t, U_LOCK, 0x100, "__lll_lock_wait", 0, "", 0);
    tb_symbol(t, U_APP, 0x100, "handler", 0, "app.c", 10);
}

static void test_with_switch_records(void) {
    tb t = {0};
    with_switch_records(&t);
    both run = analyze_and_export(&t, 2);
    d9_xmodel *m = run.m;
    if (run.r && m) {
        const d9m_parts *x = m->poll_parts ? export_parts(m, "g.c:1") : NULL;
        CHECK(x != NULL);
        if (x) {
            CHECK_EQ_U64(x->ns[D9M_PART_LOCK], 4 * MS);
            CHECK_EQ_U64(x->ns[D9M_PART_OFF_CPU_UNCAPTURED], 2 * MS);
            CHECK_EQ_U64(x->ns[D9M_PART_ON_CPU], 4 * MS);
            CHECK_EQ_U64(x->ns[D9M_PART_UNKNOWN], 0);
        }
        CHECK(perfetto_has(m, "off_cpu_uncaptured_ns"));
    }
    both_free(&run, &t);
}

/* --to 8 ms cuts g.c: its CPU time is the whole poll's, so its gap 6 .. 8 ms stays unknown. */
static void test_cut_poll(void) {
    tb t = {0};
    with_switch_records(&t);
    d9_xwindow w = {.to = {.set = true, .base = D9_TIME_ABSOLUTE, .ns = T0 + 8 * MS}};
    d9_xmodel *m = d9t_xmodel_of(&t.b, &w);
    CHECK(m != NULL && m->poll_parts != NULL);
    if (m && m->poll_parts) {
        const d9m_parts *x = export_parts(m, "g.c:1");
        CHECK(x != NULL);
        if (x) {
            CHECK_EQ_U64(x->ns[D9M_PART_OFF_CPU_UNCAPTURED], 0);
            CHECK_EQ_U64(x->ns[D9M_PART_UNKNOWN], 2 * MS);
            CHECK_EQ_U64(d9m_parts_total(x), 8 * MS);
        }
    }
    d9_xmodel_free(m);
    d9_buf_free(&t.b);
}

static void check_parts(const d9m_parts *x, const char *loc, uint64_t on_cpu, uint64_t io, uint64_t uncaptured,
                        uint64_t unknown) {
    CHECK(x != NULL);
    if (!x) return;
    if (x->ns[D9M_PART_ON_CPU] != on_cpu || x->ns[D9M_PART_UNKNOWN] != unknown)
        fprintf(stderr, "%s: on_cpu %llu unknown %llu\n", loc, (unsigned long long)x->ns[D9M_PART_ON_CPU],
                (unsigned long long)x->ns[D9M_PART_UNKNOWN]);
    CHECK_EQ_U64(x->ns[D9M_PART_ON_CPU], on_cpu);
    CHECK_EQ_U64(x->ns[D9M_PART_IO], io);
    CHECK_EQ_U64(x->ns[D9M_PART_OFF_CPU_UNCAPTURED], uncaptured);
    CHECK_EQ_U64(x->ns[D9M_PART_UNKNOWN], unknown);
}

/* poll_cpu stated on, the governor's gaps: none.c (no PollCpuEvent) is on CPU, inexact.c
 * unknown, exact.c resolved by its CPU time; the export as analyze, poll for poll. */
static void test_stated_on_rule(void) {
    tb t = {0};
    poll_cpu_trace(&t);
    both run = analyze_and_export(&t, 5);
    d9_xmodel *m = run.m;
    if (run.r && m) {
        if (m->poll_parts) {
            check_parts(export_parts(m, "covered.c:1"), "covered.c", 9 * MS, 1 * MS, 0, 0);
            check_parts(export_parts(m, "none.c:1"), "none.c", 10 * MS, 0, 0, 0);
            check_parts(export_parts(m, "inexact.c:1"), "inexact.c", 0, 0, 0, 10 * MS);
            check_parts(export_parts(m, "exact.c:1"), "exact.c", 6 * MS, 1 * MS, 3 * MS, 0);
            check_parts(export_parts(m, "short.c:1"), "short.c", 0, 0, 0, 500 * US);
        }
    }
    both_free(&run, &t);
}

/* No switch records and poll_cpu stated on: a long poll without a PollCpuEvent gives the
 * export its parts (on CPU), as it gives analyze. */
static void test_stated_on_without_switch_records(void) {
    tb t = {0};
    stream(&t);
    const char *meta[] = {"source.off_cpu", "inactive: DIAL9_SCHEDULE_PROFILE_ENABLED=0", "poll_cpu",
                          "on: polls over 1000 us with a switch inside", NULL};
    tb_metadata(&t, T0, meta);
    uint32_t lb = tb_string(&t, "b.c:1"), ld = tb_string(&t, "d.c:1");
    tb_poll(&t, T0, 5 * MS, 0, 0, 1, lb);
    tb_poll(&t, T0 + 10 * MS, 500 * US, 0, 0, 2, ld);
    both run = analyze_and_export(&t, 2);
    d9_xmodel *m = run.m;
    if (run.r && m) {
        if (m->poll_parts) {
            check_parts(export_parts(m, "b.c:1"), "b.c", 5 * MS, 0, 0, 0);
            check_parts(export_parts(m, "d.c:1"), "d.c", 0, 0, 0, 500 * US);
        }
    }
    both_free(&run, &t);
}

int main(void) {
    test_without_switch_records();
    test_with_switch_records();
    test_cut_poll();
    test_stated_on_rule();
    test_stated_on_without_switch_records();
    return d9t_summary("export_poll_cpu");
}
