#include "core/clock.h"

#include <cpuid.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/small_file.h"
#include "core/clock_auto.h"
#include "core/clock_verdict.h"

bool d9_clock_use_tsc;

/* CPUID leaf 0x80000007, EDX bit 8: the invariant TSC, from which the kernel sets both
 * constant_tsc and nonstop_tsc. Asked of the CPU: /proc/cpuinfo would cost ~0.1 ms here and
 * far more on a large host (the kernel reads every CPU's frequency for it). */
bool d9_clock_cpu_invariant_tsc(void) {
    /* Two CPUID instructions, not the four that two __get_cpuid calls make (each asks for the
     * highest leaf first): a hypervisor traps every one (8-14 µs each on our VM). */
    if ((unsigned)__get_cpuid_max(0x80000000u, NULL) < 0x80000007u) return false; /* int in clang's cpuid.h */
    unsigned a, b, c, d;
    __cpuid(0x80000007u, a, b, c, d);
    (void)a, (void)b, (void)c;
    return (d >> 8) & 1u;
}

/* Whether `list` (a sysfs clocksource line: names separated by spaces) names "tsc" itself
 * ("tsc-early" is the boot-time stand-in, not the checked clocksource). */
static bool names_tsc(const char *list) {
    for (const char *p = list; (p = strstr(p, "tsc")) != NULL; p += 3) {
        bool starts = p == list || p[-1] == ' ';
        bool ends = p[3] == '\0' || p[3] == ' ' || p[3] == '\n';
        if (starts && ends) return true;
    }
    return false;
}

bool d9_clock_kernel_lists_tsc_in(const char *clocksource_dir) {
    char path[512], line[256];
    /* The kernel's current clocksource is the TSC: it checked it (synchronized across CPUs at
     * bring-up, watched against another clock unless the hypervisor vouches for it). */
    snprintf(path, sizeof path, "%s/current_clocksource", clocksource_dir);
    bool kernel_trusts = d9_read_small_file(path, line, sizeof line) > 0 && names_tsc(line);
    /* Or it is one the kernel could switch to: another was preferred (kvm-clock, xen,
     * hyperv_clocksource_tsc_page, by rating or by the administrator), but the TSC passed the
     * same checks. One marked unstable (a failed check, or "tsc=unstable" on the command
     * line) loses its high-resolution flag, and with it its place in this list whenever the
     * tick is one-shot (NO_HZ or high-resolution timers, the norm). */
    if (!kernel_trusts) {
        snprintf(path, sizeof path, "%s/available_clocksource", clocksource_dir);
        kernel_trusts = d9_read_small_file(path, line, sizeof line) > 0 && names_tsc(line);
    }
    return kernel_trusts;
}

bool d9_clock_tsc_trustworthy_in(const char *clocksource_dir) {
    /* Also require the CPU to advertise an invariant TSC so frequency changes and idle states
     * do not skew it. */
    return d9_clock_kernel_lists_tsc_in(clocksource_dir) && d9_clock_cpu_invariant_tsc();
}

/* auto's choice, made once per process when it was conclusive: the hardware does not change
 * between two d9_start, and the cross-CPU check costs a few ms. An inconclusive check (its
 * threads did not get their CPUs in time) is asked again at the next start. */
static pthread_mutex_t g_auto_lock = PTHREAD_MUTEX_INITIALIZER;
static bool g_auto_known, g_auto_tsc;
static char g_auto_reason[320];

bool d9_clock_tsc_trustworthy(void) {
    pthread_mutex_lock(&g_auto_lock);
    if (!g_auto_known) {
        d9_clock_probe probe = {.invariant_tsc = -1};
        g_auto_tsc = d9_clock_auto_decide(&probe, g_auto_reason, sizeof g_auto_reason, &g_auto_known);
    }
    bool tsc = g_auto_tsc;
    pthread_mutex_unlock(&g_auto_lock);
    return tsc;
}

/* auto's verdict shared through the trace directory (clock_verdict.h): taken from there when
 * this process has none yet, written there once when this process's own check settled it. */
static bool g_auto_from_file, g_auto_stored;

void d9_clock_auto_load_from(const char *dir) {
    char boot[64], reason[sizeof g_auto_reason - 64];
    bool tsc;
    pthread_mutex_lock(&g_auto_lock);
    if (!g_auto_known && d9_clock_boot_id(boot, sizeof boot) &&
        d9_clock_verdict_load(dir, boot, &tsc, reason, sizeof reason)) {
        g_auto_known = g_auto_from_file = true;
        g_auto_tsc = tsc;
        snprintf(g_auto_reason, sizeof g_auto_reason, "%s (checked earlier in this boot: %s)", reason,
                 D9_CLOCK_VERDICT_FILE);
    }
    pthread_mutex_unlock(&g_auto_lock);
}

void d9_clock_auto_store_in(const char *dir) {
    char boot[64];
    pthread_mutex_lock(&g_auto_lock);
    if (g_auto_known && !g_auto_from_file && !g_auto_stored && d9_clock_boot_id(boot, sizeof boot))
        g_auto_stored = d9_clock_verdict_store(dir, boot, g_auto_tsc, g_auto_reason);
    pthread_mutex_unlock(&g_auto_lock);
}

void d9_clock_forget_after_fork(void) {
    /* a fork while another thread ran the check: the child has the lock held by no thread */
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    g_auto_lock = m;
}

/* Why the last d9_clock_select chose its clock. */
static char g_reason[sizeof g_auto_reason];

const char *d9_clock_reason(void) { return g_reason; }

bool d9_clock_mode_parse(const char *s, d9_clock_mode *out) {
    if (strcasecmp(s, "auto") == 0) *out = D9_CLOCK_AUTO;
    else if (strcasecmp(s, "tsc") == 0) *out = D9_CLOCK_TSC;
    else if (strcasecmp(s, "monotonic") == 0) *out = D9_CLOCK_MONOTONIC;
    else return false;
    return true;
}

/* Taken when the tick source is chosen: the start of the span d9_clock_ticks_per_ns measures. */
static d9_anchor g_selected_at;

d9_clock_mode d9_clock_select(d9_clock_mode requested) {
    bool tsc = requested == D9_CLOCK_TSC ||
               (requested == D9_CLOCK_AUTO && d9_clock_tsc_trustworthy());
    if (requested == D9_CLOCK_AUTO) {
        pthread_mutex_lock(&g_auto_lock);
        memcpy(g_reason, g_auto_reason, sizeof g_reason);
        pthread_mutex_unlock(&g_auto_lock);
    } else {
        snprintf(g_reason, sizeof g_reason, "DIAL9_CLOCK=%s", tsc ? "tsc (not checked)" : "monotonic");
    }
    __atomic_store_n(&d9_clock_use_tsc, tsc, __ATOMIC_RELAXED); /* hooks may be reading it */
    g_selected_at = d9_clock_anchor_now();
    return tsc ? D9_CLOCK_TSC : D9_CLOCK_MONOTONIC;
}

double d9_clock_ticks_per_ns(uint64_t min_span_ns) {
    if (!__atomic_load_n(&d9_clock_use_tsc, __ATOMIC_RELAXED)) return 1.0;
    d9_anchor from = g_selected_at, now = d9_clock_anchor_now();
    while (now.mono_ns - from.mono_ns < min_span_ns) now = d9_clock_anchor_now();
    if (now.mono_ns <= from.mono_ns || now.ticks <= from.ticks) return 1.0;
    return (double)(now.ticks - from.ticks) / (double)(now.mono_ns - from.mono_ns);
}

void d9_clock_map_init(d9_clock_map *m) {
    memset(m, 0, sizeof *m);
    m->first = d9_clock_map_sample(m);
}

d9_anchor d9_clock_anchor_now(void) {
    d9_anchor best = {0, 0};
    uint64_t best_gap = UINT64_MAX;
    /* Bracket the tick read by two clock reads; keep the tightest of a few tries so a
     * preemption between the reads does not skew the anchor. */
    for (int i = 0; i < 5; i++) {
        uint64_t a = d9_mono_ns();
        uint64_t t = d9_clock_ticks();
        uint64_t b = d9_mono_ns();
        if (b - a < best_gap) {
            best_gap = b - a;
            best.ticks = t;
            best.mono_ns = a + (b - a) / 2;
        }
        if (best_gap < 200) break;
    }
    return best;
}

d9_anchor d9_clock_map_sample(d9_clock_map *m) {
    d9_anchor best = d9_clock_anchor_now();
    d9_clock_map_add(m, best);
    return best;
}

void d9_clock_map_add(d9_clock_map *m, d9_anchor best) {
    d9_anchor prev = m->count ? m->anchors[(m->count - 1) % D9_CLOCK_ANCHORS] : best;
    m->anchors[m->count % D9_CLOCK_ANCHORS] = best;
    m->count++;
    m->fast_span = 0;
    if (best.ticks > prev.ticks) {
        m->slope_recent = (double)(int64_t)(best.mono_ns - prev.mono_ns) / (double)(int64_t)(best.ticks - prev.ticks);
        if (m->slope_recent > 0 && __atomic_load_n(&d9_clock_use_tsc, __ATOMIC_RELAXED)) {
            m->fast_lo = prev.ticks;
            m->fast_span = best.ticks - prev.ticks;
            m->fast_ns = prev.mono_ns;
        }
    }
    if (m->count > 1 && best.ticks > m->first.ticks)
        m->slope_long = (double)(int64_t)(best.mono_ns - m->first.mono_ns) / (double)(int64_t)(best.ticks - m->first.ticks);
}

static uint64_t along(d9_anchor a, double slope, uint64_t ticks) {
    int64_t off = (int64_t)((double)(int64_t)(ticks - a.ticks) * slope);
    if (off < 0 && (uint64_t)(-off) > a.mono_ns) return 0;
    return a.mono_ns + (uint64_t)off;
}

static uint64_t interpolate(d9_anchor a, d9_anchor b, uint64_t ticks) {
    if (b.ticks == a.ticks) return a.mono_ns;
    /* Differences stay small, so doubles keep ns precision however long the uptime. */
    double slope = (double)(int64_t)(b.mono_ns - a.mono_ns) / (double)(int64_t)(b.ticks - a.ticks);
    int64_t off = (int64_t)((double)(int64_t)(ticks - a.ticks) * slope);
    if (off < 0 && (uint64_t)(-off) > a.mono_ns) return 0;
    return a.mono_ns + (uint64_t)off;
}

uint64_t d9_clock_map_to_ns(const d9_clock_map *m, uint64_t ticks) {
    if (!__atomic_load_n(&d9_clock_use_tsc, __ATOMIC_RELAXED)) return ticks;
    if (m->count == 0) return 0;
    uint32_t n = m->count < D9_CLOCK_ANCHORS ? m->count : D9_CLOCK_ANCHORS;
    uint32_t newest = (m->count - 1) % D9_CLOCK_ANCHORS;
    d9_anchor hi = m->anchors[newest];
    /* The common cases, without a division: after the newest anchor, or just before it. */
    if (n > 1 && ticks >= hi.ticks && m->slope_long > 0) return along(hi, m->slope_long, ticks);
    if (n > 1 && m->slope_recent > 0) {
        d9_anchor prev = m->anchors[(newest + D9_CLOCK_ANCHORS - 1) % D9_CLOCK_ANCHORS];
        if (ticks >= prev.ticks && ticks < hi.ticks) return along(prev, m->slope_recent, ticks);
    }
    /* Long-baseline slope for points outside the anchor history. */
    d9_anchor base = m->first.ticks < hi.ticks ? m->first : hi;
    if (ticks >= hi.ticks || n == 1) return interpolate(base.ticks == hi.ticks ? hi : base, hi, ticks);
    /* Walk back to the pair that brackets the tick. */
    for (uint32_t k = 1; k < n; k++) {
        d9_anchor lo = m->anchors[(newest + D9_CLOCK_ANCHORS - k) % D9_CLOCK_ANCHORS];
        if (ticks >= lo.ticks) return interpolate(lo, hi, ticks);
        hi = lo;
    }
    return interpolate(base, m->anchors[(newest + D9_CLOCK_ANCHORS - (n - 1)) % D9_CLOCK_ANCHORS],
                       ticks);
}

void d9_clock_realtime_pair(uint64_t *mono_ns, uint64_t *real_ns) {
    struct timespec r;
    uint64_t a = d9_mono_ns();
    clock_gettime(CLOCK_REALTIME, &r);
    uint64_t b = d9_mono_ns();
    *mono_ns = a + (b - a) / 2;
    *real_ns = (uint64_t)r.tv_sec * 1000000000u + (uint64_t)r.tv_nsec;
}
