/* A hand-built trace for the one rule of whose worker a switch record and a context-switch
 * sample are (model/thread_worker.h), the shared vector worker-change (tests/vectors), read by
 * the export's test (test_export_worker_change), the fold's
 * (tests/parquet/fold_attribution.test.mjs) and the viewer's (viewer/test/attribution.test.mjs),
 * each against analyze. Thread 100 is worker 0, then changes worker mid-run (d9_worker_end,
 * d9_worker_begin: its unpark names worker 1); its context-switch samples carry no worker id
 * and some switch records name none or its former worker (as another writer may leave them):
 *   a.c  worker 0, 0.1 .. 10.1 ms: a lock wait 2 .. 4 ms, its sample without a worker id
 *                              -> lock 2, on_cpu 8
 *   b.c  worker 1, 20 .. 30 ms: a nanosleep 22 .. 25 ms, switch-out without a worker id, its
 *                              sample without one; preempted 26 .. 27 ms, the switch-out naming
 *                              worker 0, the switch-in worker 1 (it overrides)
 *                              -> sleep 3, runnable 1, on_cpu 6
 * Switch-out's worker only and samples without a worker id skipped would give a.c blocked_other
 * 2 and b.c on_cpu 10. Timer samples (source 0) without a worker id, on CPU in each poll: one
 * in a.c (6 ms), two in b.c (21 and 28 ms) -> CPU samples in polls: worker 0 one, worker 1 two,
 * every reader (none for worker 255). Symbols last, as the recorder writes them. */
#ifndef D9_TESTS_WORKER_CHANGE_TRACE_H
#define D9_TESTS_WORKER_CHANGE_TRACE_H

#include "attribution_trace.h"

#define WCH_T0 (5000 * MS)

static inline void worker_change_trace(tb *t) {
    tb_stream(t);
    const char *meta[] = {"source.off_cpu", "active: perf switch records", NULL};
    tb_metadata(t, WCH_T0, meta);
    tb_coverage(t, WCH_T0, "full");
    uint64_t lock_stack[] = {K_SCHED, K_FUTEX, K_SYSCALL, U_LOCK, U_APP};
    uint64_t sleep_stack[] = {K_SCHED, K_NSLEEP, K_SYSCALL, U_SLEEP, U_APP};
    uint64_t burn_stack[] = {U_APP};
    uint32_t s_lock = tb_stack(t, lock_stack, 5), s_sleep = tb_stack(t, sleep_stack, 5);
    uint32_t s_burn = tb_stack(t, burn_stack, 1);
    uint32_t l_a = tb_string(t, "a.c:1"), l_b = tb_string(t, "b.c:1");

    /* thread 100 as worker 0 */
    tb_unpark(t, WCH_T0, 0, 0, 0, 100);
    tb_poll_start(t, WCH_T0 + 100 * US, 0, 0, 1, l_a);
    tb_sample(t, WCH_T0 + 2 * MS - 2 * US, D9_WORKER_NONE, 100, 1, s_lock);
    tb_switch(t, WCH_T0 + 2 * MS, 100, 0, true, false);
    tb_switch(t, WCH_T0 + 4 * MS, 100, 0, false, false);
    tb_sample(t, WCH_T0 + 6 * MS, D9_WORKER_NONE, 100, 0, s_burn);
    tb_poll_end(t, WCH_T0 + 10 * MS + 100 * US, 0);
    tb_park(t, WCH_T0 + 12 * MS, 0, 0, 100);

    /* the same thread as worker 1 */
    tb_unpark(t, WCH_T0 + 19 * MS, 1, 0, 0, 100);
    tb_poll_start(t, WCH_T0 + 20 * MS, 1, 0, 2, l_b);
    tb_sample(t, WCH_T0 + 21 * MS, D9_WORKER_NONE, 100, 0, s_burn);
    tb_sample(t, WCH_T0 + 22 * MS - 2 * US, D9_WORKER_NONE, 100, 1, s_sleep);
    tb_switch(t, WCH_T0 + 22 * MS, 100, D9_WORKER_NONE, true, false);
    tb_switch(t, WCH_T0 + 25 * MS, 100, 1, false, false);
    tb_switch(t, WCH_T0 + 26 * MS, 100, 0, true, true);
    tb_switch(t, WCH_T0 + 27 * MS, 100, 1, false, false);
    tb_sample(t, WCH_T0 + 28 * MS, D9_WORKER_NONE, 100, 0, s_burn);
    tb_poll_end(t, WCH_T0 + 30 * MS, 1);
    tb_park(t, WCH_T0 + 32 * MS, 1, 0, 100);

    tb_symbol(t, K_SCHED, 0x100, "__schedule", 0, "", 0);
    tb_symbol(t, K_FUTEX, 0x100, "futex_wait_queue", 0, "", 0);
    tb_symbol(t, K_NSLEEP, 0x100, "hrtimer_nanosleep", 0, "", 0);
    tb_symbol(t, K_SYSCALL, 0x100, "do_syscall_64", 0, "", 0);
    tb_symbol(t, U_LOCK, 0x100, "__lll_lock_wait", 0, "", 0);
    tb_symbol(t, U_SLEEP, 0x100, "clock_nanosleep", 0, "", 0);
    tb_symbol(t, U_APP, 0x100, "handler", 0, "app.c", 10);
}

#endif
