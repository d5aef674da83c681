/* The governor's paused level closes the perf events of the switch records and stacks, and
 * leaving it opens them again (src/sources/perf_events.c, close_switch_events), twice: with the
 * defaults (no CPU profile: nothing of perf stays open) and with the perf CPU profile (its
 * events stay open and keep sampling). A small budget (0.05 % of one CPU: paused above ~1 k
 * switches/s, back from it below ~0.7 k/s) makes the states certain on any host:
 *  - two recording threads ping-pong through pipes until the governor is paused, then 2 000
 *    more round trips while it stays so: no perf event fd is open (or only the CPU profile's,
 *    fewer than before, and CPU samples keep arriving);
 *  - the ping-pong stops; once the governor has left paused, perf fds are open again, and a
 *    worker sleeping 5 ms at a time (~200 switches/s) runs until switch records arrive again;
 *  - in the trace: the CoverageEvent `paused` at the close and the next one, `sampled` 1 in 32
 *    at the reopen, whose previous_mode is paused and previous_since_ns the close; no switch
 *    record between them, records before and after; no switch record twice; `analyze --json`
 *    and `dial9 stats` count paused time.
 * Every phase ends on the recorder's state or on counts, never on a duration; 120 s bounds are
 * only a safety net. */
#include <dirent.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "dial9/dial9.h"
#include "sources/cost_governor.h"
#include "sources/perf_events.h"
#include "pingpong_workload.h"
#include "test_source_util.h"

#define MAX_COV 4096
#define SAFETY_NS (120ull * 1000000000ull)

typedef struct cov {
    uint64_t ts, since, one_in;
    char mode[32], previous[32];
} cov;

static cov g_cov[MAX_COV];
static size_t g_ncov;

/* ~200 switches a second: the governor comes back from paused and stays out of it */
static void *sleeper(void *arg) {
    (void)arg;
    d9_worker_begin("sleeper", 1);
    for (uint64_t i = 1; !atomic_load(&g_stop); i++) {
        d9_poll_begin(i, D9_HERE);
        tt_sleep_ns(5u * 1000u * 1000u);
        d9_poll_end();
    }
    d9_worker_end();
    return NULL;
}

static void on_event(const d9_event *ev, void *ctx) {
    tt_on_event(ev, ctx);
    if (!d9t_is(ev, "CoverageEvent") || g_ncov == MAX_COV) return;
    cov *c = &g_cov[g_ncov++];
    c->ts = ev->ts_ns;
    copy_str(c->mode, ev, "mode");
    copy_str(c->previous, ev, "previous_mode");
    c->since = d9t_field_u(ev, "previous_since_ns");
    c->one_in = d9t_field_u(ev, "one_in");
}

/* perf event fds of this process */
static int perf_fds(void) {
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int n = 0;
    while (d && (e = readdir(d))) {
        char path[300], target[64];
        snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
        ssize_t len = readlink(path, target, sizeof target - 1);
        if (len <= 0) continue;
        target[len] = 0;
        if (strcmp(target, "anon_inode:[perf_event]") == 0) n++;
    }
    if (d) closedir(d);
    return n;
}

/* Waits until cond(arg) holds; false after the safety net. */
static bool wait_for(bool (*cond)(uint64_t), uint64_t arg) {
    uint64_t t0 = tt_now();
    while (!cond(arg)) {
        if (tt_now() - t0 > SAFETY_NS) return false;
        tt_sleep_ns(10u * 1000u * 1000u);
    }
    return true;
}

static bool is_paused(uint64_t unused) {
    (void)unused;
    int level;
    uint64_t changes;
    d9_perf_governor_now(&level, &changes);
    return level == D9_GOV_LEVEL_PAUSED;
}

static bool trips_reach(uint64_t n) { return atomic_load(&g_trips) >= n; }

static bool reopened(uint64_t unused) {
    (void)unused;
    uint64_t closes, reopens, records;
    d9_perf_switch_events_now(&closes, &reopens, &records);
    return reopens >= 1;
}

static bool records_reach(uint64_t n) {
    uint64_t closes, reopens, records;
    d9_perf_switch_events_now(&closes, &reopens, &records);
    return records >= n;
}

static bool cpu_samples_reach(uint64_t n) {
    uint64_t stacks, samples;
    d9_perf_samples_read(&stacks, &samples);
    return samples >= n;
}

static int cmp_switch(const void *a, const void *b) {
    const tt_switch *x = a, *y = b;
    if (x->tid != y->tid) return x->tid < y->tid ? -1 : 1;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    return (int)x->out - (int)y->out;
}

static bool run_tool(const char *tool, const char *run, char *out, size_t cap) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s/dial9' %s '%s'", getenv("D9_BUILD_DIR") ? getenv("D9_BUILD_DIR") : ".", tool, run);
    FILE *p = popen(cmd, "r");
    if (!p) return false;
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = 0;
    return pclose(p) == 0;
}

static void check_trace(const tt_trace *t, bool cpu_profile) {
    size_t closed = g_ncov, back = g_ncov;
    for (size_t i = 0; i < g_ncov; i++) {
        printf("  %" PRIu64 " %s -> %s (1 in %" PRIu64 ", since %" PRIu64 ")\n", g_cov[i].ts, g_cov[i].previous,
               g_cov[i].mode, g_cov[i].one_in, g_cov[i].since);
        if (closed == g_ncov && strcmp(g_cov[i].mode, "paused") == 0 && strcmp(g_cov[i].previous, "paused") != 0)
            closed = i;
        else if (closed < g_ncov && back == g_ncov && strcmp(g_cov[i].mode, "paused") != 0)
            back = i;
    }
    CHECK(closed < g_ncov);
    CHECK(back < g_ncov);
    if (closed == g_ncov || back == g_ncov) return;
    uint64_t t_close = g_cov[closed].ts, t_reopen = g_cov[back].ts;
    /* the way back: one level up, from paused, since the close */
    CHECK_STR(g_cov[back].mode, "sampled");
    CHECK_EQ_U64(g_cov[back].one_in, 32);
    CHECK_STR(g_cov[back].previous, "paused");
    CHECK_EQ_U64(g_cov[back].since, t_close);
    CHECK_EQ_U64(g_cov[closed].one_in, 0);
    size_t before = 0, inside = 0, after = 0;
    for (size_t i = 0; i < t->nswitches; i++) {
        uint64_t ts = t->switches[i].ts;
        if (ts <= t_close) before++;
        else if (ts < t_reopen) inside++;
        else after++;
    }
    printf("closed %.3f s: switch records before %zu, while closed %zu, after %zu\n", (double)(t_reopen - t_close) / 1e9,
           before, inside, after);
    CHECK(before > 0);
    CHECK_EQ_U64(inside, 0);
    CHECK(after > 0);
    /* nothing twice: a thread that got an inherited event and an opened one would write every record twice */
    tt_switch *sw = malloc((t->nswitches ? t->nswitches : 1) * sizeof *sw);
    memcpy(sw, t->switches, t->nswitches * sizeof *sw);
    qsort(sw, t->nswitches, sizeof *sw, cmp_switch);
    size_t twice = 0;
    for (size_t i = 1; i < t->nswitches; i++) twice += cmp_switch(&sw[i - 1], &sw[i]) == 0;
    free(sw);
    CHECK_EQ_U64(twice, 0);
    if (cpu_profile) { /* the CPU profile kept sampling while the switch events were closed */
        size_t samples_inside = 0;
        for (size_t i = 0; i < t->nsamples; i++)
            samples_inside += t->samples[i].source == 0 && t->samples[i].ts > t_close && t->samples[i].ts < t_reopen;
        printf("CPU samples while closed: %zu\n", samples_inside);
        CHECK(samples_inside > 0);
    }
}

static void run(bool cpu_profile) {
    printf("--- %s\n", cpu_profile ? "with the perf CPU profile" : "defaults (no CPU profile)");
    g_ncov = 0;
    atomic_store(&g_stop, false);
    atomic_store(&g_trips, 0);
    CHECK(perf_fds() == 0);
    char *dir = d9t_mkdtemp("governor-close");
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    cfg.overhead_budget_pct = 0.05;
    cfg.cpu_profile = cpu_profile;
    CHECK(d9_start(&cfg) == 0);
    int fds_full = perf_fds();

    pthread_t a, b, c;
    pthread_create(&b, NULL, ponger, NULL);
    pthread_create(&a, NULL, pinger, NULL);
    bool paused = wait_for(is_paused, 0);
    int fds_paused = -1;
    bool perf = fds_full > 0;
    if (paused) {
        /* the switches go on while closed; the CPU profile's samples too */
        CHECK(wait_for(trips_reach, atomic_load(&g_trips) + 2000));
        uint64_t st, cs;
        d9_perf_samples_read(&st, &cs);
        if (cpu_profile) CHECK(wait_for(cpu_samples_reach, cs + 5));
        /* the fds counted while paused all along (a ping-pong starved for a second could
         * have let the governor leave paused meanwhile: then wait for it again) */
        for (int tries = 0; tries < 100 && fds_paused < 0 && wait_for(is_paused, 0); tries++) {
            uint64_t c0, r0, r1, n;
            d9_perf_switch_events_now(&c0, &r0, &n);
            int fds = perf_fds();
            d9_perf_switch_events_now(&c0, &r1, &n);
            if (r1 == r0 && is_paused(0)) fds_paused = fds;
        }
    }
    atomic_store(&g_stop, true);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    bool back = paused && wait_for(reopened, 0);
    int fds_back = perf_fds();
    uint64_t closes, reopens, records;
    d9_perf_switch_events_now(&closes, &reopens, &records);
    atomic_store(&g_stop, false);
    pthread_create(&c, NULL, sleeper, NULL);
    if (back) CHECK(wait_for(records_reach, records + 20));
    atomic_store(&g_stop, true);
    pthread_join(c, NULL);
    d9_perf_switch_events_now(&closes, &reopens, &records);
    d9_stop();
    printf("perf fds: full %d, paused %d, back %d; closes %" PRIu64 ", reopens %" PRIu64 " (the last %" PRIu64
           " us of CPU)\n", fds_full, fds_paused, fds_back, closes, reopens, d9_perf_last_reopen_cpu_ns() / 1000);

    tt_trace t;
    memset(&t, 0, sizeof t);
    CHECK(d9t_decode_run(d9_run_dir(), on_event, &t) == 0);
    const char *off = tt_meta(&t, "source.off_cpu");
    printf("source.off_cpu = %s\n", off);
    if (!perf || tt_starts_with(off, "inactive: perf refused")) {
        printf("SKIP: perf refused on this host\n");
        CHECK_EQ_U64(g_ncov, 0);
    } else {
        CHECK(paused);
        CHECK(back);
        CHECK(closes >= 1);
        CHECK(reopens >= 1);
        if (cpu_profile) CHECK(fds_paused > 0 && fds_paused < fds_full); /* the CPU profile's alone */
        else CHECK_EQ_U64(fds_paused, 0);
        CHECK(fds_back > 0);
        check_trace(&t, cpu_profile);
        static char out[1 << 20];
        CHECK(run_tool("analyze --json", d9_run_dir(), out, sizeof out));
        const char *section = strstr(out, "\"coverage\"");
        CHECK(section != NULL);
        const char *p = section ? strstr(section, "\"paused_ns\": ") : NULL;
        CHECK(p != NULL);
        if (p) CHECK(strtoull(p + 13, NULL, 10) > 0);
        CHECK(section && (strstr(section, "\"partial\": true") != NULL));
        CHECK(run_tool("stats", d9_run_dir(), out, sizeof out));
        const char *line = strstr(out, "coverage   off_cpu PARTIAL: ");
        CHECK(line != NULL);
        if (line) printf("stats: %.200s\n", line);
        CHECK(line && strstr(line, "paused 0.000 s") == NULL);
    }
    tt_free(&t);
    if (!getenv("D9_KEEP")) d9t_rm_rf(dir);
    free(dir);
}

int main(void) {
    CHECK(pipe(g_ping) == 0 && pipe(g_pong) == 0);
    run(false);
    run(true);
    return d9t_summary("test_mt_source_governor_close");
}
