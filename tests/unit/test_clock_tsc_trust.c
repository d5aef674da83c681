/* d9_clock_tsc_trustworthy asks the CPU (CPUID) instead of reading /proc/cpuinfo. Its answer
 * must be the one the kernel's view gives: the clocksource is "tsc" and the CPU flags have
 * both constant_tsc and nonstop_tsc. Read here from /proc, as the oracle. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "core/clock.h"

static bool kernel_says_tsc_clocksource(void) {
    char src[64] = {0};
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
    if (!f) return false;
    bool tsc = fgets(src, sizeof src, f) && strncmp(src, "tsc", 3) == 0;
    fclose(f);
    return tsc;
}

/* -1: no flags line to compare with */
static int kernel_says_invariant_tsc(void) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return -1;
    static char line[1 << 16];
    int answer = -1;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "flags", 5) != 0) continue;
        answer = strstr(line, " constant_tsc") && strstr(line, " nonstop_tsc");
        break;
    }
    fclose(f);
    return answer;
}

int main(void) {
    int invariant = kernel_says_invariant_tsc();
    if (invariant < 0) {
        printf("SKIP: no flags line in /proc/cpuinfo to compare with\n");
        return 0;
    }
    bool expected = kernel_says_tsc_clocksource() && invariant;
    printf("clocksource tsc: %d, constant_tsc+nonstop_tsc: %d, trustworthy: %d\n",
           kernel_says_tsc_clocksource(), invariant, d9_clock_tsc_trustworthy());
    CHECK(d9_clock_tsc_trustworthy() == expected);
    CHECK(d9_clock_select(D9_CLOCK_AUTO) == (expected ? D9_CLOCK_TSC : D9_CLOCK_MONOTONIC));
    return d9t_summary("test_clock_tsc_trust");
}
