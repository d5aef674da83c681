/* A hand-built trace for the rule of a long poll's CPU time (model/attribution.h,
 * d9m_attr_poll_cpu), the shared vector poll-cpu (tests/vectors), read by the export's test
 * (test_export_poll_cpu), the fold's (tests/parquet/fold_attribution.test.mjs) and the viewer's
 * (viewer/test/attribution.test.mjs), each against analyze. Worker 0 (tid 100), switch records
 * on, the recording states poll_cpu "on: polls over 1000 us", the governor samples off_cpu from
 * 15 to 65 ms and from 80 to 85 ms (gaps), one poll per spawn location:
 *   covered.c  0 .. 10 ms: a read 2 .. 3 ms, covered; exact CPU 9 ms  -> io 1, on_cpu 9
 *   none.c     20 .. 30 ms: all in a gap, no PollCpuEvent: its thread was not switched out
 *                           -> on_cpu 10
 *   inexact.c  40 .. 50 ms: all in a gap, PollCpuEvent "not exact"  -> unknown 10
 *   exact.c    60 .. 70 ms: gap 60 .. 65, a read 66 .. 67 ms; exact CPU 6 ms: off-CPU 4 ms,
 *                           1 of it io, 3 in the gap -> io 1, off_cpu_uncaptured 3, on_cpu 6
 *   short.c    80 .. 80.5 ms: in a gap, under the threshold, no event -> unknown 0.5
 * Symbols last, as the recorder writes them. */
#ifndef D9_TESTS_POLL_CPU_TRACE_H
#define D9_TESTS_POLL_CPU_TRACE_H

#include "attribution_trace.h"

#define PCPU_T0 (5000 * MS)

static inline void pcpu_event(tb *t, uint64_t ts, uint64_t worker, uint64_t cpu, bool exact) {
    d9_enc_event(&t->b, &t->st, D9_SCH_POLL_CPU, ts);
    d9_put_varint(&t->b, worker);
    d9_put_varint(&t->b, cpu);
    d9_put_u8(&t->b, exact);
}

static inline void poll_cpu_trace(tb *t) {
    tb_stream(t);
    /* the builder declares the schemas up to UploadLossEvent: PollCpuEvent's too */
    d9_enc_schema(&t->b, D9_SCH_POLL_CPU, &d9_builtin_schemas[D9_SCH_POLL_CPU]);
    const char *meta[] = {"source.off_cpu", "active: perf switch records", "poll_cpu",
                          "on: polls over 1000 us with a switch inside, on threads with a task-clock page", NULL};
    tb_metadata(t, PCPU_T0, meta);
    tb_coverage(t, PCPU_T0, "full");
    uint64_t read_stack[] = {K_SCHED, K_PIPE, K_SYSCALL, U_READ, U_APP};
    uint32_t s_read = tb_stack(t, read_stack, 5);
    uint32_t l_covered = tb_string(t, "covered.c:1"), l_none = tb_string(t, "none.c:1"),
             l_inexact = tb_string(t, "inexact.c:1"), l_exact = tb_string(t, "exact.c:1"),
             l_short = tb_string(t, "short.c:1");
    /* covered.c: no gap, so its CPU time changes nothing */
    tb_poll(t, PCPU_T0, 10 * MS, 0, 0, 1, l_covered);
    pcpu_event(t, PCPU_T0 + 10 * MS + 200, 0, 9 * MS, true);
    blocked(t, PCPU_T0 + 2 * MS, PCPU_T0 + 3 * MS, s_read);
    tb_coverage(t, PCPU_T0 + 15 * MS, "sampled");
    /* none.c: the recorder writes a PollCpuEvent for every long poll with a switch: none here */
    tb_poll(t, PCPU_T0 + 20 * MS, 10 * MS, 0, 0, 2, l_none);
    /* inexact.c: switched out, its CPU time not measured */
    tb_poll(t, PCPU_T0 + 40 * MS, 10 * MS, 0, 0, 3, l_inexact);
    pcpu_event(t, PCPU_T0 + 50 * MS + 200, 0, 0, false);
    /* exact.c (the governor's records come before the polls they cover, in any reader's pass) */
    tb_coverage(t, PCPU_T0 + 65 * MS, "full");
    tb_poll(t, PCPU_T0 + 60 * MS, 10 * MS, 0, 0, 4, l_exact);
    pcpu_event(t, PCPU_T0 + 70 * MS + 200, 0, 6 * MS, true);
    blocked(t, PCPU_T0 + 66 * MS, PCPU_T0 + 67 * MS, s_read);
    /* short.c */
    tb_coverage(t, PCPU_T0 + 80 * MS, "sampled");
    tb_poll(t, PCPU_T0 + 80 * MS, 500 * US, 0, 0, 5, l_short);
    tb_coverage(t, PCPU_T0 + 85 * MS, "full");
    tb_symbol(t, K_SCHED, 0x100, "__schedule", 0, "", 0);
    tb_symbol(t, K_PIPE, 0x100, "pipe_read", 0, "", 0);
    tb_symbol(t, K_SYSCALL, 0x100, "do_syscall_64", 0, "", 0);
    tb_symbol(t, U_READ, 0x100, "read", 0, "", 0);
    tb_symbol(t, U_APP, 0x100, "handler", 0, "app.c", 10);
}

#endif
