/* A hand-built trace with known off-CPU intervals and causes, shared by the attribution tests
 * of analyze (test_analysis_attribution) and of the export (test_export_attribution). Worker 0
 * (tid 100), one poll per spawn location:
 *   lock.c   0 .. 10 ms: lock 1 .. 5 ms, runnable 6 .. 7 ms, blocked without a stack 8 .. 8.5 ms
 *   sleep.c  20 .. 30 ms: sleep 21 .. 29 ms
 *   io.c     38 .. 48 ms: io 39 .. 41 ms; the governor samples 40 .. 45 ms (unknown)
 *   drop.c   50 .. 60 ms: a drop of worker 0 at 55 ms (50 .. 55 unknown)
 *   after.c  65 .. 70 ms: sleep 66 .. 69 ms, its stack stamped 3 us after the switch-out
 * Symbols come last, as the recorder writes them. `switches` false: no switch records, and
 * source.off_cpu inactive. */
#ifndef D9_TESTS_ATTRIBUTION_TRACE_H
#define D9_TESTS_ATTRIBUTION_TRACE_H

#include "test_analysis_builder.h"

#define ATTR_T0 (5000 * MS)

/* Kernel and user addresses, one function each (symbols written at the end). */
enum {
    K_SCHED = 0xffffffff81000000ull,
    K_FUTEX = 0xffffffff81001000ull,
    K_NSLEEP = 0xffffffff81002000ull,
    K_PIPE = 0xffffffff81003000ull,
    K_SYSCALL = 0xffffffff81004000ull,
    U_LOCK = 0x7f0000001000ull,
    U_SLEEP = 0x7f0000002000ull,
    U_READ = 0x7f0000003000ull,
    U_APP = 0x401000ull,
};

static inline void tb_coverage(tb *t, uint64_t ts, const char *mode) {
    uint32_t src = tb_string(t, "off_cpu"), m = tb_string(t, mode);
    d9_enc_event(&t->b, &t->st, D9_SCH_COVERAGE, ts);
    d9_put_u32(&t->b, src);
    d9_put_u32(&t->b, m);
    d9_put_u32(&t->b, m);
    d9_put_varint(&t->b, ts);
    d9_put_varint(&t->b, 1);
    d9_put_varint(&t->b, 0);
    d9_put_varint(&t->b, 0);
    d9_put_varint(&t->b, 0);
}

/* A context-switch sample with `stack` 2 us before the switch-out, as the recorder takes it. */
static inline void blocked(tb *t, uint64_t out, uint64_t in, uint32_t stack) {
    if (stack) tb_sample(t, out - 2 * US, 0, 100, 1, stack);
    tb_switch(t, out, 100, 0, true, false);
    tb_switch(t, in, 100, 0, false, false);
}

static inline void attribution_trace(tb *t, bool switches) {
    tb_stream(t);
    const char *meta[] = {"source.off_cpu", switches ? "active: perf switch records" : "inactive: no perf",
                          NULL};
    tb_metadata(t, ATTR_T0, meta);
    tb_coverage(t, ATTR_T0, "full");
    uint64_t lock_stack[] = {K_SCHED, K_FUTEX, K_SYSCALL, U_LOCK, U_APP};
    uint64_t sleep_stack[] = {K_SCHED, K_NSLEEP, K_SYSCALL, U_SLEEP, U_APP};
    uint64_t read_stack[] = {K_SCHED, K_PIPE, K_SYSCALL, U_READ, U_APP};
    uint32_t s_lock = tb_stack(t, lock_stack, 5), s_sleep = tb_stack(t, sleep_stack, 5),
             s_read = tb_stack(t, read_stack, 5);
    uint32_t l_lock = tb_string(t, "lock.c:1"), l_sleep = tb_string(t, "sleep.c:1"),
             l_io = tb_string(t, "io.c:1"), l_drop = tb_string(t, "drop.c:1");

    /* lock.c: 10 ms; a lock wait 1 ms .. 5 ms, preempted 6 .. 7 ms, blocked without a stack
     * 8 .. 8.5 ms */
    tb_poll(t, ATTR_T0, 10 * MS, 0, 0, 1, l_lock);
    if (switches) {
        blocked(t, ATTR_T0 + 1 * MS, ATTR_T0 + 5 * MS, s_lock);
        tb_switch(t, ATTR_T0 + 6 * MS, 100, 0, true, true);
        tb_switch(t, ATTR_T0 + 7 * MS, 100, 0, false, false);
        blocked(t, ATTR_T0 + 8 * MS, ATTR_T0 + 8500 * US, 0);
    }
    /* sleep.c: 10 ms; nanosleep 21 .. 29 ms */
    tb_poll(t, ATTR_T0 + 20 * MS, 10 * MS, 0, 0, 2, l_sleep);
    if (switches) blocked(t, ATTR_T0 + 21 * MS, ATTR_T0 + 29 * MS, s_sleep);
    /* io.c: 38 .. 48 ms; a read 39 .. 41 ms; the governor samples 40 .. 45 ms, where a switch
     * 42 .. 44 ms was recorded (in one of its windows): not counted, all of 40 .. 45 unknown */
    tb_coverage(t, ATTR_T0 + 40 * MS, "sampled");
    tb_coverage(t, ATTR_T0 + 45 * MS, "full");
    tb_poll(t, ATTR_T0 + 38 * MS, 10 * MS, 0, 0, 3, l_io);
    if (switches) {
        blocked(t, ATTR_T0 + 39 * MS, ATTR_T0 + 41 * MS, s_read);
        blocked(t, ATTR_T0 + 42 * MS, ATTR_T0 + 44 * MS, s_read);
    }
    /* drop.c: 50 .. 60 ms; events of worker 0 dropped before 55 ms */
    tb_poll(t, ATTR_T0 + 50 * MS, 10 * MS, 0, 0, 4, l_drop);
    tb_drops(t, ATTR_T0 + 55 * MS, 3, tb_string(t, "buffer_full"), 100, 0);
    /* after.c: 65 .. 70 ms; nanosleep 66 .. 69 ms, its stack's sample stamped 3 us after the
     * switch-out (two perf events: either may come first) */
    uint32_t l_after = tb_string(t, "after.c:1");
    tb_poll(t, ATTR_T0 + 65 * MS, 5 * MS, 0, 0, 5, l_after);
    if (switches) {
        tb_switch(t, ATTR_T0 + 66 * MS, 100, 0, true, false);
        tb_sample(t, ATTR_T0 + 66 * MS + 3 * US, 0, 100, 1, s_sleep);
        tb_switch(t, ATTR_T0 + 69 * MS, 100, 0, false, false);
    }
    /* symbols last, as the background symbolizer writes them */
    tb_symbol(t, K_SCHED, 0x100, "__schedule", 0, "", 0);
    tb_symbol(t, K_FUTEX, 0x100, "futex_wait_queue", 0, "", 0);
    tb_symbol(t, K_NSLEEP, 0x100, "hrtimer_nanosleep", 0, "", 0);
    tb_symbol(t, K_PIPE, 0x100, "pipe_read", 0, "", 0);
    tb_symbol(t, K_SYSCALL, 0x100, "do_syscall_64", 0, "", 0);
    tb_symbol(t, U_LOCK, 0x100, "__lll_lock_wait", 0, "", 0);
    tb_symbol(t, U_SLEEP, 0x100, "clock_nanosleep", 0, "", 0);
    tb_symbol(t, U_READ, 0x100, "read", 0, "", 0);
    tb_symbol(t, U_APP, 0x100, "handler", 0, "app.c", 10);
}

#endif
