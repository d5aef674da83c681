#include "core/clock_auto.h"

#include <stdio.h>
#include <string.h>

#include "common/small_file.h"
#include "core/clock.h"

#define CLOCKSOURCE_DIR "/sys/devices/system/clocksource/clocksource0"

/* The clocksources whose vDSO mode is the pvclock page (Linux's kvmclock.c and xen time.c set
 * VDSO_CLOCKMODE_PVCLOCK only when the page marks the TSC stable at boot). */
static bool pvclock_clocksource(const char *name) {
    return strcmp(name, "kvm-clock") == 0 || strcmp(name, "xen") == 0;
}

static int read_pvclock_self(void *ctx, uint8_t info[D9_PVCLOCK_INFO_BYTES], char *why, size_t why_len) {
    (void)ctx;
    return d9_pvclock_read_self(info, why, why_len);
}

bool d9_clock_auto_decide(const d9_clock_probe *probe, char *reason, size_t reason_len, bool *settled) {
    if (settled) *settled = true;
    const char *dir = probe->clocksource_dir ? probe->clocksource_dir : CLOCKSOURCE_DIR;
    bool invariant = probe->invariant_tsc < 0 ? d9_clock_cpu_invariant_tsc() : probe->invariant_tsc != 0;
    if (!invariant) {
        snprintf(reason, reason_len, "auto: the CPU has no invariant TSC");
        return false;
    }
    if (d9_clock_kernel_lists_tsc_in(dir)) {
        snprintf(reason, reason_len, "auto: invariant TSC, tsc a clocksource the kernel checked");
        return true;
    }
    char path[512], current[64];
    snprintf(path, sizeof path, "%s/current_clocksource", dir);
    if (d9_read_small_file(path, current, sizeof current) <= 0) current[0] = 0;
    current[strcspn(current, " \n")] = 0;
    if (!pvclock_clocksource(current)) {
        snprintf(reason, reason_len, "auto: clocksource %s, tsc not available", current[0] ? current : "unknown");
        return false;
    }
    uint8_t info[D9_PVCLOCK_INFO_BYTES];
    char why[160] = "";
    int verdict = (probe->read_pvclock ? probe->read_pvclock : read_pvclock_self)(probe->ctx, info, why, sizeof why);
    switch (verdict) {
    case D9_PVCLOCK_STABLE: break;
    case D9_PVCLOCK_UNSTABLE:
        snprintf(reason, reason_len, "auto: %s, its pvclock page does not mark the TSC stable", current);
        return false;
    case D9_PVCLOCK_GARBAGE:
        snprintf(reason, reason_len, "auto: %s, its pvclock page does not read as one", current);
        return false;
    default:
        snprintf(reason, reason_len, "auto: %s, %s", current, why[0] ? why : "the pvclock page cannot be read");
        return false;
    }
    d9_cross_cpu_result check;
    if (probe->cross_cpu) probe->cross_cpu(probe->ctx, &check);
    else d9_cross_cpu_check_tsc(probe->max_check_ns ? probe->max_check_ns : D9_CLOCK_CHECK_MAX_NS, &check);
    snprintf(reason, reason_len, "auto: %s, the vDSO's pvclock page marks the TSC stable, invariant TSC; %s",
             current, check.why);
    if (settled) *settled = check.ran && (check.passed || check.stepped_back);
    return check.passed;
}
