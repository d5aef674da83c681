/* The slow half of poll_cpu.h: a long poll with a switch inside gets its CPU time. */
#include "core/poll_cpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/plain_number.h"
#include "core/last_error.h"
#include "core/thread_buffer.h"
#include "core/thread_cpu_clock_lazy.h"
#include "dial9/dial9.h"

static __thread uint64_t t_events;

static uint64_t g_min_ns; /* 0: off */
static const d9_event_type *g_type;
static char g_reason[320] = "off: not started";

int d9_poll_cpu_min_us(uint64_t *min_us) {
    *min_us = D9_POLL_CPU_DEFAULT_MIN_US;
    const char *env = getenv("DIAL9_POLL_CPU_MIN_US");
    if (env && !d9_plain_u64(env, 0, 10000000, min_us)) /* config.c checked it */ {
        d9_set_error("DIAL9_POLL_CPU_MIN_US=\"%s\": expected 0 (off) to 10000000 microseconds", env);
        return -1;
    }
    return 0;
}

int d9_poll_cpu_start(bool page) {
    uint64_t min_us;
    if (d9_poll_cpu_min_us(&min_us) != 0) return -1;
    static const d9_field fields[] = {{"worker_id", D9_U64}, {"cpu_time_ns", D9_U64}, {"exact", D9_BOOL}};
    if (!g_type) g_type = d9_event_type_define("PollCpuEvent", fields, 3);
    uint64_t min_ns = 0;
    if (!g_type) snprintf(g_reason, sizeof g_reason, "off: %s", d9_last_error());
    else if (!min_us) snprintf(g_reason, sizeof g_reason, "off: DIAL9_POLL_CPU_MIN_US=0");
    else if (!page) snprintf(g_reason, sizeof g_reason, "off: no task-clock page (thread_cpu_clock)");
    else if (d9_tcc_lazy_on()) {
        min_ns = min_us * 1000;
        snprintf(g_reason, sizeof g_reason,
                 "on: polls over %llu us with a switch inside, on threads with a task-clock page (DIAL9_THREAD_CPU=lazy: "
                 "from their first poll over %llu us, whose PollCpuEvent says exact false, as every such poll before "
                 "a page)",
                 (unsigned long long)min_us, (unsigned long long)min_us);
    } else {
        min_ns = min_us * 1000;
        snprintf(g_reason, sizeof g_reason,
                 "on: polls over %llu us with a switch inside, on threads with a task-clock page (from their first park or unpark)",
                 (unsigned long long)min_us);
    }
    __atomic_store_n(&g_min_ns, min_ns, __ATOMIC_RELAXED);
    double ns_per_tick;
    __atomic_load(&d9_thread_cpu_ns_per_tick, &ns_per_tick, __ATOMIC_RELAXED);
    d9_poll_cpu_set_ns_per_tick(ns_per_tick);
    return 0;
}

uint64_t d9_poll_cpu_lazy_min_ticks;

void d9_poll_cpu_set_ns_per_tick(double ns_per_tick) {
    uint64_t min_ns = __atomic_load_n(&g_min_ns, __ATOMIC_RELAXED);
    /* rounded down: a poll at the bound goes to the slow twin, whose test is the exact one */
    uint64_t ticks = min_ns && ns_per_tick > 0 ? (uint64_t)((double)min_ns / ns_per_tick) : 0;
    __atomic_store_n(&d9_poll_cpu_lazy_min_ticks, ticks, __ATOMIC_RELAXED);
}

const char *d9_poll_cpu_reason(void) { return g_reason; }

uint64_t d9_poll_cpu_events(void) { return t_events; }

uint64_t d9_poll_cpu_min_ns(void) { return __atomic_load_n(&g_min_ns, __ATOMIC_RELAXED); }

static void record(uint64_t cpu_ns, bool exact) {
    d9_thread *t = d9__tls_thread;
    uint64_t worker = t ? atomic_load_explicit(&t->worker_id, memory_order_relaxed) : 255;
    d9_arg args[3] = {{.u = worker}, {.u = cpu_ns}, {.b = exact}};
    d9__emit(g_type, args);
    t_events++;
}

void d9_poll_cpu_record_unknown(void) {
    if (g_type) record(0, false);
}

void d9_poll_cpu_begin_slow(uint64_t ticks) {
    d9_tcc_state *s = &d9__tls_cpu_clock;
    if (s->poll_page == &d9_tcc_lazy_page) return; /* no page yet: its end measures the poll */
    if (!__atomic_load_n(&g_min_ns, __ATOMIC_RELAXED) || !__atomic_load_n(&d9_thread_cpu_clock_gen, __ATOMIC_RELAXED))
        return;
    /* twice at most: a page of a past recording is reopened by the first, whose value is then
     * not taken under the new page's lock */
    for (int i = 0; i < 2 && s->poll_page->lock != s->lock; i++)
        if (d9_thread_cpu_clock_slow(s, D9_TCC_EXACT, ticks) == D9_TCC_NONE) break;
    s->poll_lock = s->lock; /* the line the poll begins on */
    /* a read that ended late is stamped at its end (thread_cpu_clock.c), past a switch that may
     * have come after `ticks`: the poll's CPU time counts from there (the line's point), not
     * back along the line over that off-CPU time */
    if ((int64_t)(s->ticks - ticks) > 0) s->poll_ticks = s->ticks;
}

void d9_poll_cpu_end_begin_slow(uint64_t ticks) {
    d9_tcc_state *s = &d9__tls_cpu_clock;
    uint64_t begin_ticks = s->poll_ticks;
    s->poll_ticks = ticks;
    d9_poll_cpu_end_slow(ticks, begin_ticks);
    s->poll_lock = s->lock; /* the next poll's begin */
    if (s->poll_page->lock != s->lock) d9_poll_cpu_begin_slow(ticks); /* a short poll's: not read */
}

bool d9_poll_cpu_end_due(uint64_t end_ticks, uint64_t begin_ticks) {
    d9_tcc_state *s = &d9__tls_cpu_clock;
    uint64_t min_ns = __atomic_load_n(&g_min_ns, __ATOMIC_RELAXED);
    uint32_t gen = __atomic_load_n(&d9_thread_cpu_clock_gen, __ATOMIC_RELAXED);
    double ns_per_tick;
    __atomic_load(&d9_thread_cpu_ns_per_tick, &ns_per_tick, __ATOMIC_RELAXED);
    if (!min_ns || !gen || ns_per_tick <= 0) return false;
    if ((s->gen != gen || !s->page) && !d9_tcc_lazy_is(s, gen)) return false; /* a lazy thread's: to say unknown */
    int64_t wall_ticks = (int64_t)(end_ticks - begin_ticks);
    return wall_ticks > 0 && (double)wall_ticks * ns_per_tick >= (double)min_ns;
}

void d9_poll_cpu_end_slow(uint64_t end_ticks, uint64_t begin_ticks) {
    if (!d9_poll_cpu_end_due(end_ticks, begin_ticks)) return;
    d9_tcc_state *s = &d9__tls_cpu_clock;
    if (!s->page) { /* a lazy thread's first long poll (thread_cpu_clock_lazy.h) */
        d9_tcc_lazy_long_poll(end_ticks);
        return;
    }
    s->long_poll_ticks = end_ticks; /* a lazily opened page stays while it measures long polls */
    double ns_per_tick;
    __atomic_load(&d9_thread_cpu_ns_per_tick, &ns_per_tick, __ATOMIC_RELAXED);
    int64_t wall_ticks = (int64_t)(end_ticks - begin_ticks);
    /* the begin's CPU time: on the line the begin checked (or took), the thread's still when it
     * took no new anchor since (estimates move along it), else the one kept when a park or
     * unpark inside the poll replaced it; the wall time from that line's point to the begin */
    bool known = true;
    uint64_t line_cpu = s->cpu_ns, line_ticks = s->ticks;
    if (s->lock != s->poll_lock) {
        known = s->poll_line_lock == s->poll_lock;
        line_cpu = s->poll_line_cpu;
        line_ticks = s->poll_line_ticks;
    }
    uint64_t begin_cpu = 0;
    if (known) begin_cpu = line_cpu + (uint64_t)(int64_t)((double)(int64_t)(begin_ticks - line_ticks) * ns_per_tick);
    /* the end's: exact (a snapshot, then read() of the event) after a switch since the thread's
     * last value, else that value's line when the poll began on it; a line a park or unpark
     * inside the poll made is read instead (D9_TCC_READ: an unpark's page value lacks what the
     * thread ran between its sched-in and the hook, which belongs to this poll; ~ms under TSan,
     * test_mt_poll_cpu_park_inside's late unparks). Also the thread's next anchor. */
    uint64_t end_cpu = d9_thread_cpu_clock_slow(s, known && s->lock != s->poll_lock ? D9_TCC_READ : D9_TCC_EXACT, end_ticks);
    if (end_cpu == D9_TCC_NONE) return; /* the event is gone: the thread reads by system call now */
    if (!known) {
        record(0, false);
        return;
    }
    uint64_t wall_ns = (uint64_t)((double)wall_ticks * ns_per_tick);
    uint64_t cpu = end_cpu > begin_cpu ? end_cpu - begin_cpu : 0;
    record(cpu < wall_ns ? cpu : wall_ns, true);
}
