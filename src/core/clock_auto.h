/* DIAL9_CLOCK=auto: whether to read the TSC, and why, in one sentence for the metadata
 * (`clock_reason`). The TSC is taken when the CPU says it is invariant and either
 *  - the kernel vouches for it: `tsc` is its clocksource or an available one (it checked the
 *    TSCs agree across CPUs at bring-up and lists none it marked unstable), or
 *  - the clocksource is kvm-clock (or xen) and the hypervisor's pvclock page, the one the vDSO
 *    reads, marks the TSC stable (the vDSO's clock_gettime is then a TSC read itself), and a
 *    cross-CPU check of the TSC passes here (clock_cross_cpu.h).
 * Else CLOCK_MONOTONIC. docs/clock.md says why. */
#ifndef D9_CORE_CLOCK_AUTO_H
#define D9_CORE_CLOCK_AUTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/clock_cross_cpu.h"
#include "core/clock_pvclock.h"

/* What the choice reads, each replaceable by a test's made-up input. */
typedef struct d9_clock_probe {
    const char *clocksource_dir; /* NULL: /sys/devices/system/clocksource/clocksource0 */
    int invariant_tsc;           /* 1 / 0, or -1: ask the CPU */
    /* The pvclock page's bytes (d9_pvclock_read_self's contract); NULL: this process's. */
    int (*read_pvclock)(void *ctx, uint8_t info[D9_PVCLOCK_INFO_BYTES], char *why, size_t why_len);
    /* The cross-CPU check; NULL: the TSC on every CPU allowed, within max_check_ns. */
    void (*cross_cpu)(void *ctx, d9_cross_cpu_result *out);
    void *ctx;
    uint64_t max_check_ns;
} d9_clock_probe;

/* Whether `auto` takes the TSC; the reason into `reason` (a sentence without a final period).
 * *settled (may be NULL): false when the cross-CPU check could not finish (its threads did not
 * get their CPUs in time): asking again later may answer otherwise. */
bool d9_clock_auto_decide(const d9_clock_probe *probe, char *reason, size_t reason_len, bool *settled);

/* The bound of the cross-CPU check at d9_start (the start waits for it): 5 ms. */
#define D9_CLOCK_CHECK_MAX_NS 5000000u

#endif
