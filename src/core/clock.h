/* Event timestamps: the hot path reads a raw tick (the TSC, or CLOCK_MONOTONIC ns where the
 * TSC cannot be trusted); the background thread converts ticks to CLOCK_MONOTONIC ns by
 * interpolating between (tick, monotonic) anchors it takes on every drain, so conversion
 * stays within a few hundred ns of clock_gettime without any calibration delay at start. */
#ifndef D9_CORE_CLOCK_H
#define D9_CORE_CLOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <x86intrin.h>

#include "dial9/dial9.h"

extern bool d9_clock_use_tsc;

static inline uint64_t d9_mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t d9_clock_ticks(void) {
    if (__builtin_expect(__atomic_load_n(&d9_clock_use_tsc, __ATOMIC_RELAXED), 1)) return __rdtsc();
    return d9_mono_ns();
}

/* "auto", "tsc" or "monotonic", in any case (DIAL9_CLOCK's values) -> *out; false for anything
 * else (*out untouched). */
bool d9_clock_mode_parse(const char *s, d9_clock_mode *out);
/* Decide the tick source. Returns the mode chosen (TSC or MONOTONIC). */
d9_clock_mode d9_clock_select(d9_clock_mode requested);
/* Whether DIAL9_CLOCK=auto takes the TSC on this machine (clock_auto.h: the kernel vouches for
 * it, or a kvm-clock guest's pvclock page marks it stable and a cross-CPU check passes). Asked
 * once per process (the check: a few ms); d9_clock_reason says why after a d9_clock_select. */
bool d9_clock_tsc_trustworthy(void);
/* auto's verdict kept in `dir` (the trace directory, clock_verdict.h) for the other processes
 * of this boot: load it before d9_clock_select when this process has none; store this
 * process's own settled verdict there (once; nothing when it came from the file). */
void d9_clock_auto_load_from(const char *dir);
void d9_clock_auto_store_in(const char *dir);
/* In a forked child: the lock of auto's choice, which a thread of the parent may have held. */
void d9_clock_forget_after_fork(void);
/* Why the last d9_clock_select chose its clock: a sentence (metadata `clock_reason`). */
const char *d9_clock_reason(void);
/* The CPU's invariant TSC (CPUID 0x80000007 EDX bit 8). */
bool d9_clock_cpu_invariant_tsc(void);
/* Whether the kernel vouches for its TSC: `tsc` is the current_clocksource or an
 * available_clocksource in `clocksource_dir` (a TSC it marked unstable is not listed). */
bool d9_clock_kernel_lists_tsc_in(const char *clocksource_dir);
/* That and an invariant TSC. */
bool d9_clock_tsc_trustworthy_in(const char *clocksource_dir);

typedef struct d9_anchor {
    uint64_t ticks;
    uint64_t mono_ns;
} d9_anchor;

/* A tick and the CLOCK_MONOTONIC time it was read at (within ~100 ns). */
d9_anchor d9_clock_anchor_now(void);

/* Ticks per ns (1 when ticks are ns), measured from the last d9_clock_select to now, over at
 * least min_span_ns: it waits (spins) only for what the start has not spent since. */
double d9_clock_ticks_per_ns(uint64_t min_span_ns);

/* Tick → ns conversion, owned by the background thread. */
#define D9_CLOCK_ANCHORS 64
typedef struct d9_clock_map {
    d9_anchor anchors[D9_CLOCK_ANCHORS]; /* ring, newest at (count - 1) % N */
    uint32_t count;
    d9_anchor first;                     /* long baseline for extrapolation */
    /* Slopes (ns per tick) computed once per anchor, not once per event: between the two
     * newest anchors (where most events of a drain fall), and first → newest (beyond it). */
    double slope_recent, slope_long;
    /* The span between the two newest anchors, where most ticks of a drain fall: converted
     * inline by d9_clock_map_to_ns_fast (fast_span 0: no such span, take the general path). */
    uint64_t fast_lo, fast_span, fast_ns;
} d9_clock_map;

void d9_clock_map_init(d9_clock_map *m);
/* Take a new anchor now (retries a read interrupted by preemption). Returns it. */
d9_anchor d9_clock_map_sample(d9_clock_map *m);
/* Take a given anchor (the sample's second half; tests give their own). */
void d9_clock_map_add(d9_clock_map *m, d9_anchor a);
/* Convert raw ticks to CLOCK_MONOTONIC ns. */
uint64_t d9_clock_map_to_ns(const d9_clock_map *m, uint64_t ticks);
static inline uint64_t d9_clock_map_to_ns_fast(const d9_clock_map *m, uint64_t ticks) {
    uint64_t off = ticks - m->fast_lo;
    /* the product is below the span's ns (between two anchors, far below 2^63): the signed
     * conversion gives the unsigned one's value for ~5 instructions fewer (per collected event) */
    if (__builtin_expect(off < m->fast_span, 1))
        return m->fast_ns + (uint64_t)(int64_t)((double)(int64_t)off * m->slope_recent);
    /* ticks that are CLOCK_MONOTONIC ns already (no fast span then): no call per event */
    if (!__atomic_load_n(&d9_clock_use_tsc, __ATOMIC_RELAXED)) return ticks;
    return d9_clock_map_to_ns(m, ticks);
}
/* Restore the high 8 bits of a 56-bit tick stored in a record, given a recent full tick. */
static inline uint64_t d9_ticks_unwrap56(uint64_t low56, uint64_t recent) {
    /* The tick nearest to `recent` with these low bits: add the difference, taken modulo 2^56
     * and sign-extended (an arithmetic shift), to `recent`. */
    int64_t delta = (int64_t)((low56 - recent) << 8) >> 8;
    return recent + (uint64_t)delta;
}


/* CLOCK_MONOTONIC and CLOCK_REALTIME read back to back (for ClockSyncEvent). */
void d9_clock_realtime_pair(uint64_t *mono_ns, uint64_t *real_ns);
#endif
