/* The poll-end wake-up of a poll_ms rule (flight_rule_wake.h). */
#include "core/flight_rule_wake.h"

#include <stdatomic.h>

#include "core/clock.h"
#include "core/collector_wake.h"
#include "core/records.h"
#include "core/schedstat.h"
#include "core/thread_cpu_clock.h"

bool d9_rule_wake_on;
bool d9_rule_wake_sched_on;
bool d9_rule_wake_in_drain;

static uint64_t g_poll_ticks = UINT64_MAX; /* the lowest threshold in ticks, a hair under it */
static uint64_t g_gap_ticks;               /* 1 ms in ticks: the wakes' rate limit */
static _Atomic uint64_t g_last_wake;       /* ticks of the last wake, any thread */
static _Atomic bool g_pending;             /* a wake the collector has not taken yet */
static _Atomic uint64_t g_wakes;
static uint64_t g_sched_ns = UINT64_MAX;   /* the lowest sched_delay_ms threshold, a hair under */

/* The thread's last schedstat reading that reached its ring, as the collector keeps it
 * (c_ss_wait): the delay of an unpark is its reading minus this one. `run`: the recording it
 * was read in (d9_schedstat_run), so a restart's first unpark measures nothing. */
static __thread struct {
    uint64_t wait;
    uint32_t run;
} t_last_read __attribute__((tls_model("initial-exec"))) = {D9_NS_UNKNOWN, 0};

/* ticks per ns, once per arming (a spin of at most 200 us); 0 when the clock cannot say */
static double ticks_per_ns(void) {
    double per_ns = d9_clock_ticks_per_ns(200 * 1000);
    if (!(per_ns > 0)) return 0;
    __atomic_store_n(&g_gap_ticks, (uint64_t)(1e6 * per_ns), __ATOMIC_RELAXED);
    atomic_store_explicit(&g_last_wake, 0, memory_order_relaxed);
    return per_ns;
}

void d9_rule_wake_arm(uint64_t poll_ns) {
    __atomic_store_n(&d9_rule_wake_on, false, __ATOMIC_RELEASE);
    if (poll_ns == UINT64_MAX) return;
    /* ticks per ns from the clock's selection to now (a spin of at most 200 us, once): a
     * 1% margin below the threshold, so that the rate's error costs a needless drain at
     * worst, never a missed one */
    double per_ns = ticks_per_ns();
    if (!(per_ns > 0)) return;
    __atomic_store_n(&g_poll_ticks, (uint64_t)((double)poll_ns * per_ns * 0.99), __ATOMIC_RELAXED);
    __atomic_store_n(&d9_rule_wake_on, true, __ATOMIC_RELEASE);
}

void d9_rule_wake_arm_sched(uint64_t sched_ns) {
    __atomic_store_n(&d9_rule_wake_sched_on, false, __ATOMIC_RELEASE);
    if (sched_ns == UINT64_MAX) return;
    if (!__atomic_load_n(&g_gap_ticks, __ATOMIC_RELAXED) && !(ticks_per_ns() > 0)) return;
    /* schedstat's delays are ns already: the same 1% margin, for the same reason (the hook's
     * difference and the collector's are of the same readings, so none is needed but for
     * safety) */
    __atomic_store_n(&g_sched_ns, sched_ns - sched_ns / 100, __ATOMIC_RELAXED);
    __atomic_store_n(&d9_rule_wake_sched_on, true, __ATOMIC_RELEASE);
}

void d9_rule_wake_disarm(void) {
    __atomic_store_n(&d9_rule_wake_on, false, __ATOMIC_RELEASE);
    __atomic_store_n(&d9_rule_wake_sched_on, false, __ATOMIC_RELEASE);
}

/* At most one wake per ms for all threads and both rules: one held back by the limit is taken
 * by the drain 1 ms after the last wake's. */
static void wake_limited(uint64_t ticks) {
    uint64_t last = atomic_load_explicit(&g_last_wake, memory_order_relaxed);
    if (last && ticks >= last && ticks - last < __atomic_load_n(&g_gap_ticks, __ATOMIC_RELAXED)) return;
    if (!atomic_compare_exchange_strong_explicit(&g_last_wake, &last, ticks, memory_order_relaxed, memory_order_relaxed))
        return; /* another thread's wake, this same instant */
    atomic_store_explicit(&g_pending, true, memory_order_relaxed);
    atomic_fetch_add_explicit(&g_wakes, 1, memory_order_relaxed);
    d9_collector_wake(); /* release: the committed record, then the word */
}

void d9_rule_wake_poll_end_slow(uint64_t ticks) {
    uint64_t begin = d9__tls_cpu_clock.poll_ticks; /* every poll's begin (poll_cpu.h) */
    /* acquire: the thresholds the arming thread stored before it turned the wake on */
    if (!__atomic_load_n(&d9_rule_wake_on, __ATOMIC_ACQUIRE)) return;
    if (!begin || begin > ticks || ticks - begin <= __atomic_load_n(&g_poll_ticks, __ATOMIC_RELAXED)) return;
    wake_limited(ticks);
}

void d9_rule_wake_schedstat_slow(bool unpark, uint64_t wait, uint64_t ticks) {
    if (wait == D9_NS_NOT_READ) return; /* the collector keeps its last reading too */
    uint32_t run = __atomic_load_n(&d9_schedstat_run, __ATOMIC_RELAXED);
    uint64_t last = t_last_read.wait;
    bool same_run = t_last_read.run == run;
    t_last_read.wait = wait;
    t_last_read.run = run;
    /* acquire: the threshold the arming thread stored before it turned the wake on */
    if (!unpark || !same_run || wait == D9_NS_UNKNOWN || last == D9_NS_UNKNOWN || wait < last ||
        !__atomic_load_n(&d9_rule_wake_sched_on, __ATOMIC_ACQUIRE))
        return;
    if (wait - last > __atomic_load_n(&g_sched_ns, __ATOMIC_RELAXED)) wake_limited(ticks);
}

void d9_rule_wake_poll_end_begin_slow(uint64_t ticks) {
    d9_rule_wake_poll_end_slow(ticks); /* poll_cpu.h's part, after it, keeps the new begin */
}

bool d9_rule_wake_take(void) { return atomic_exchange_explicit(&g_pending, false, memory_order_acquire); }

uint64_t d9_rule_wake_count(void) { return atomic_load_explicit(&g_wakes, memory_order_relaxed); }
