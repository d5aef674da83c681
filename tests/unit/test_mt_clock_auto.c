/* DIAL9_CLOCK=auto on made-up machines (clock_auto.h): sysfs directories, pvclock page bytes
 * and the cross-CPU check fed by an injected reader. A reader that runs behind the others on
 * one CPU must make the check fail and auto refuse the TSC; one that all CPUs share must pass.
 * Then the real check on this host's CPUs (skipped with one CPU), which must pass here, and
 * auto's real answer, whose reason must be one of the sentences the choice can give, and
 * which a recording's metadata carries (`clock`, `clock_reason`). */
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "core/clock.h"
#include "core/clock_auto.h"
#include "dial9/dial9.h"
#include "quiet_recorder.h"
#include "trace_files_util.h"

/* ---------------------------------------------------------------- made-up inputs */

static char g_dir[64];

static void write_file(const char *name, const char *text) {
    char path[128];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

static void sysfs(const char *current, const char *available) {
    write_file("current_clocksource", current);
    write_file("available_clocksource", available);
}

typedef struct fake {
    uint8_t page[D9_PVCLOCK_INFO_BYTES];
    int page_verdict;             /* what read_pvclock returns: a verdict, or -1 */
    d9_tick_reader reader;        /* the cross-CPU check's */
    bool check_called;
    d9_cross_cpu_result last;
} fake;

static void page_with_flags(fake *f, uint8_t flags) {
    memset(f->page, 0, sizeof f->page);
    uint32_t version = 10, mul = 0xf445c8c6u;
    memcpy(f->page, &version, 4);
    memcpy(f->page + 24, &mul, 4);
    f->page[28] = 1;
    f->page[29] = flags;
    f->page_verdict = d9_pvclock_judge(f->page);
}

static int fake_read_pvclock(void *ctx, uint8_t info[D9_PVCLOCK_INFO_BYTES], char *why, size_t why_len) {
    fake *f = ctx;
    memcpy(info, f->page, sizeof f->page);
    if (f->page_verdict < 0) snprintf(why, why_len, "the vDSO maps no pvclock page (Bad address): it does not read the TSC");
    return f->page_verdict;
}

/* The CPUs the check's threads go to: this process's first two, or the one twice (they then
 * take turns on it; the fake readers need no second CPU to be told apart). */
static int g_cpus[2];

static void pick_cpus(void) {
    cpu_set_t set;
    CHECK(sched_getaffinity(0, sizeof set, &set) == 0);
    unsigned n = 0;
    for (int c = 0; c < CPU_SETSIZE && n < 2; c++)
        if (CPU_ISSET(c, &set)) g_cpus[n++] = c;
    if (n == 1) g_cpus[1] = g_cpus[0];
}

/* A counter every thread shares: monotonic across them by construction. */
static _Atomic uint64_t g_counter = 1000000000;

static uint64_t shared_counter(void *ctx, unsigned index) {
    (void)ctx, (void)index;
    return atomic_fetch_add(&g_counter, 1);
}

/* The same, 1 ms of ticks behind on the second thread's CPU: a TSC offset between CPUs. */
static uint64_t behind_on_second(void *ctx, unsigned index) {
    (void)ctx;
    return atomic_fetch_add(&g_counter, 1) - (index == 1 ? 1000000 : 0);
}

static void fake_cross_cpu(void *ctx, d9_cross_cpu_result *out) {
    fake *f = ctx;
    f->check_called = true;
    /* no time bound: the result cannot depend on how busy the machine is */
    d9_cross_cpu_check(g_cpus, 2, f->reader, NULL, 20, 0, out);
    f->last = *out;
}

static bool decide(fake *f, int invariant, char *reason, size_t len) {
    d9_clock_probe probe = {.clocksource_dir = g_dir, .invariant_tsc = invariant, .read_pvclock = fake_read_pvclock,
                            .cross_cpu = fake_cross_cpu, .ctx = f};
    f->check_called = false;
    bool settled = false;
    reason[0] = 0;
    bool tsc = d9_clock_auto_decide(&probe, reason, len, &settled);
    printf("  -> %s: %s\n", tsc ? "tsc" : "monotonic", reason);
    CHECK(settled); /* every made-up case is decided */
    return tsc;
}

static void made_up_machines(void) {
    snprintf(g_dir, sizeof g_dir, "/tmp/d9-clock-auto-XXXXXX");
    CHECK(mkdtemp(g_dir) != NULL);
    char reason[320];
    fake f = {.reader = shared_counter};

    printf("the kernel vouches: tsc is the clocksource; no check, no pvclock read\n");
    sysfs("tsc\n", "tsc kvm-clock\n");
    page_with_flags(&f, 0);
    CHECK(decide(&f, 1, reason, sizeof reason));
    CHECK(!f.check_called);
    CHECK(strstr(reason, "kernel checked") != NULL);
    CHECK(!decide(&f, 0, reason, sizeof reason)); /* but not without an invariant TSC */
    CHECK(strstr(reason, "no invariant TSC") != NULL);

    printf("kvm-clock, the TSC not available (this host), stable bit set, a shared counter\n");
    sysfs("kvm-clock\n", "kvm-clock \n");
    page_with_flags(&f, D9_PVCLOCK_TSC_STABLE_BIT);
    CHECK(decide(&f, 1, reason, sizeof reason));
    CHECK(f.check_called && f.last.passed && !f.last.stepped_back);
    CHECK(f.last.min_handovers >= 20);
    CHECK(strstr(reason, "marks the TSC stable") && strstr(reason, "check passed"));
    CHECK(!decide(&f, 0, reason, sizeof reason)); /* never without an invariant TSC */

    printf("the same, the reader 1 ms behind on one CPU: the check fails, the TSC is refused\n");
    f.reader = behind_on_second;
    CHECK(!decide(&f, 1, reason, sizeof reason));
    CHECK(f.check_called && f.last.ran && f.last.stepped_back && !f.last.passed);
    CHECK(f.last.worst_step_back >= 1000000 - 100);
    CHECK(strstr(reason, "check failed") != NULL);
    f.reader = shared_counter;

    printf("xen, stable bit set and the guest just paused\n");
    sysfs("xen\n", "xen \n");
    page_with_flags(&f, D9_PVCLOCK_TSC_STABLE_BIT | D9_PVCLOCK_GUEST_STOPPED);
    CHECK(decide(&f, 1, reason, sizeof reason));

    printf("kvm-clock, stable bit clear: no check\n");
    sysfs("kvm-clock\n", "kvm-clock \n");
    page_with_flags(&f, 0);
    CHECK(!decide(&f, 1, reason, sizeof reason));
    CHECK(!f.check_called);
    CHECK(strstr(reason, "does not mark the TSC stable") != NULL);

    printf("kvm-clock, a page of garbage\n");
    page_with_flags(&f, 0x81);
    CHECK(f.page_verdict == D9_PVCLOCK_GARBAGE);
    CHECK(!decide(&f, 1, reason, sizeof reason));
    CHECK(!f.check_called);
    CHECK(strstr(reason, "does not read as one") != NULL);

    printf("kvm-clock, no page mapped (the vDSO makes a system call)\n");
    f.page_verdict = -1;
    CHECK(!decide(&f, 1, reason, sizeof reason));
    CHECK(!f.check_called);
    CHECK(strstr(reason, "no pvclock page") != NULL);

    printf("another clocksource: the pvclock is not asked\n");
    page_with_flags(&f, D9_PVCLOCK_TSC_STABLE_BIT);
    sysfs("hpet\n", "hpet acpi_pm\n");
    CHECK(!decide(&f, 1, reason, sizeof reason));
    CHECK(!f.check_called);
    CHECK(strstr(reason, "clocksource hpet") != NULL);
    sysfs("kvm-clockx\n", "kvm-clockx\n");
    CHECK(!decide(&f, 1, reason, sizeof reason));

    char path[128];
    snprintf(path, sizeof path, "%s/current_clocksource", g_dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/available_clocksource", g_dir);
    unlink(path);
    CHECK(!decide(&f, 1, reason, sizeof reason)); /* no sysfs at all */
    CHECK(strstr(reason, "unknown") != NULL);
    CHECK(rmdir(g_dir) == 0);
}

/* ---------------------------------------------------------------- this host */

static void this_host(void) {
    cpu_set_t set;
    CHECK(sched_getaffinity(0, sizeof set, &set) == 0);
    if (CPU_COUNT(&set) < 2) {
        printf("SKIP the real cross-CPU check: this process may run on one CPU only\n");
    } else {
        d9_cross_cpu_result r;
        d9_cross_cpu_check_tsc(0, &r); /* no bound: waits for its handovers however busy */
        printf("this host's TSC: %s\n", r.why);
        CHECK(r.ran && r.passed && !r.stepped_back);
        CHECK(r.threads == (unsigned)CPU_COUNT(&set) || r.threads == 64);
    }
    d9_clock_mode mode = d9_clock_select(D9_CLOCK_AUTO);
    const char *why = d9_clock_reason();
    printf("auto here: %s (%s)\n", mode == D9_CLOCK_TSC ? "tsc" : "monotonic", why);
    CHECK(strncmp(why, "auto: ", 6) == 0);
    /* the TSC exactly when the reason says the kernel or the check vouched for it */
    CHECK((mode == D9_CLOCK_TSC) == (strstr(why, "kernel checked") || strstr(why, "check passed")));
    /* the forced modes say so */
    d9_clock_select(D9_CLOCK_MONOTONIC);
    CHECK_STR(d9_clock_reason(), "DIAL9_CLOCK=monotonic");
    d9_clock_select(D9_CLOCK_TSC);
    CHECK(strncmp(d9_clock_reason(), "DIAL9_CLOCK=tsc", 15) == 0);
}

/* ---------------------------------------------------------------- the metadata */

typedef struct meta {
    char clock[16], reason[320];
} meta;

static void copy_entry(const d9_dec_kv *kv, const char *key, char *out, size_t len) {
    if (kv->key.len == strlen(key) && !memcmp(kv->key.ptr, key, kv->key.len) && kv->value.len < len) {
        memcpy(out, kv->value.ptr, kv->value.len);
        out[kv->value.len] = 0;
    }
}

static void on_event(const d9_event *ev, void *ctx) {
    meta *m = ctx;
    if (!d9t_is(ev, "SegmentMetadataEvent")) return;
    const d9_value *v = d9_event_field(ev, "entries");
    if (!v || !v->present || v->type != D9_FT_STRING_MAP) return;
    for (uint32_t i = 0; i < v->map.count; i++) {
        copy_entry(&v->map.items[i], "clock", m->clock, sizeof m->clock);
        copy_entry(&v->map.items[i], "clock_reason", m->reason, sizeof m->reason);
    }
}

static void recorded(d9_clock_mode mode, const char *clock) {
    char *dir = d9t_mkdtemp("clock-auto");
    d9_config cfg;
    d9t_quiet_config(&cfg, dir);
    cfg.clock = mode;
    CHECK(d9_start(&cfg) == 0);
    char reason[320];
    snprintf(reason, sizeof reason, "%s", d9_clock_reason());
    d9_stop();
    meta m = {{0}, {0}};
    CHECK(d9t_decode_run(d9_run_dir(), on_event, &m) == 0);
    printf("recorded: clock=%s clock_reason=%s\n", m.clock, m.reason);
    CHECK_STR(m.reason, reason);
    if (clock) CHECK_STR(m.clock, clock);
    else CHECK_STR(m.clock, strstr(reason, "passed") || strstr(reason, "kernel checked") ? "tsc" : "monotonic");
    d9t_rm_rf(dir);
    free(dir);
}

int main(void) {
    pick_cpus();
    made_up_machines();
    this_host();
    recorded(D9_CLOCK_AUTO, NULL);
    recorded(D9_CLOCK_MONOTONIC, "monotonic");
    recorded(D9_CLOCK_TSC, "tsc");
    return d9t_summary("test_mt_clock_auto");
}
