/* d9_clock_tsc_trustworthy_in asks the CPU (CPUID) instead of reading /proc/cpuinfo. Its answer
 * must be the one the kernel's view gives: the clocksource is "tsc", or "tsc" is among the
 * available ones (the kernel lists no TSC it marked unstable), and the CPU flags have both
 * constant_tsc and nonstop_tsc. Read here from /proc, as the oracle. The clocksource part is
 * also checked against made-up sysfs directories: current kvm-clock with the TSC available
 * (as on a KVM guest whose administrator chose kvm-clock), the TSC marked unstable (gone from
 * the list, as on a host booted with tsc=unstable), names that only contain "tsc". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "core/clock.h"

/* Whether a clocksource file's line has the word "tsc", by strtok: another reading than
 * the library's. */
static bool file_lists_tsc(const char *path) {
    char line[512] = {0};
    FILE *f = fopen(path, "r");
    if (!f) return false;
    bool found = false;
    if (fgets(line, sizeof line, f)) {
        char *save = NULL;
        for (char *w = strtok_r(line, " \n", &save); w; w = strtok_r(NULL, " \n", &save))
            if (strcmp(w, "tsc") == 0) found = true;
    }
    fclose(f);
    return found;
}

static bool kernel_says_tsc_clocksource(void) {
    return file_lists_tsc("/sys/devices/system/clocksource/clocksource0/current_clocksource") ||
           file_lists_tsc("/sys/devices/system/clocksource/clocksource0/available_clocksource");
}

static char g_dir[64];

static void write_file(const char *name, const char *text) {
    char path[128];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    if (!text) {
        unlink(path);
        return;
    }
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

/* current, available (NULL: no such file) -> whether the clocksource part says yes */
static void check_dir(const char *current, const char *available, bool tsc_listed, bool invariant) {
    write_file("current_clocksource", current);
    write_file("available_clocksource", available);
    bool got = d9_clock_tsc_trustworthy_in(g_dir);
    if (got != (tsc_listed && invariant))
        printf("current \"%.*s\", available \"%.*s\": got %d\n",
               current ? (int)strcspn(current, "\n") : 6, current ? current : "(none)",
               available ? (int)strcspn(available, "\n") : 6, available ? available : "(none)", got);
    CHECK(got == (tsc_listed && invariant));
}

static void made_up_directories(bool invariant) {
    snprintf(g_dir, sizeof g_dir, "/tmp/d9-clocksource-XXXXXX");
    CHECK(mkdtemp(g_dir) != NULL);
    check_dir("tsc\n", "tsc hpet acpi_pm \n", true, invariant);
    check_dir("tsc\n", NULL, true, invariant);
    check_dir("kvm-clock\n", "kvm-clock tsc acpi_pm \n", true, invariant);
    check_dir("xen\n", "xen tsc\n", true, invariant);
    check_dir("hyperv_clocksource_tsc_page\n", "hyperv_clocksource_tsc_page tsc \n", true, invariant);
    check_dir(NULL, "kvm-clock tsc \n", true, invariant);
    check_dir("kvm-clock\n", "kvm-clock \n", false, invariant);       /* tsc=unstable */
    check_dir("hyperv_clocksource_tsc_page\n", "hyperv_clocksource_tsc_page acpi_pm \n", false, invariant);
    check_dir("tsc-early\n", "tsc-early kvm-clock \n", false, invariant);
    check_dir("kvm-clock\n", "kvm-clock notsc tscx xtsc\n", false, invariant);
    check_dir("\n", "\n", false, invariant);
    check_dir(NULL, NULL, false, invariant);
    CHECK(rmdir(g_dir) == 0);
    CHECK(!d9_clock_tsc_trustworthy_in("/nonexistent/clocksource"));
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
    bool vouched = d9_clock_tsc_trustworthy_in("/sys/devices/system/clocksource/clocksource0");
    printf("clocksource tsc: %d, constant_tsc+nonstop_tsc: %d, trustworthy: %d\n",
           kernel_says_tsc_clocksource(), invariant, vouched);
    CHECK(vouched == expected);
    CHECK(d9_clock_cpu_invariant_tsc() == (invariant == 1));
    made_up_directories(invariant);
    /* Where the kernel vouches, auto takes the TSC; where it does not, a kvm-clock guest's
     * pvclock page may still give it (test_mt_clock_auto). */
    if (expected) CHECK(d9_clock_select(D9_CLOCK_AUTO) == D9_CLOCK_TSC);
    return d9t_summary("test_clock_tsc_trust");
}
