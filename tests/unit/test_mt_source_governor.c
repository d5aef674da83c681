/* The cost governor end to end, under the default budget (1 % of one CPU):
 *  - two recording threads ping-pong through pipes until switch records arrive; the governor is
 *    then held at a sampled level (d9_perf_hold_governor_level) until it is there, let go, and
 *    the ping-pong stopped; the test waits until the governor came back to full coverage by
 *    itself (its own decision on the rates it measures, calm now). The degradation is held, not
 *    earned: the ping-pong's rate depends on the host's load (at a load of 55 it made 330-360
 *    switches a second, under the ~3 800 the 1 % budget allows, and the governor never left
 *    full), and which rates degrade which level is test_source_governor's, on synthetic rates.
 *    Each phase ends on the recorder's state (switch records read, d9_perf_governor_now), not on
 *    a duration; 120 s bounds are only a safety net;
 *  - the trace's CoverageEvent records are present and consistent: each change's
 *    previous_mode is the mode before it, previous_since_ns the time of the change before it,
 *    one_in agrees with the mode, the budget is the configured one; a degraded mode was
 *    recorded, the last mode is full;
 *  - `dial9 analyze --json` and `dial9 stats` report the off-CPU coverage as partial;
 *  - the recorder's own threads (dial9-*) have no switch record and no CPU sample. */
#include <fcntl.h>
#include <stdatomic.h>
#include <unistd.h>

#include "check.h"
#include "dial9/dial9.h"
#include "sources/cost_governor.h"
#include "sources/perf_events.h"
#include "pingpong_workload.h"
#include "recorder_threads_util.h"
#include "test_source_util.h"

#define MAX_COV 4096
#define SAFETY_NS (120ull * 1000000000ull)

typedef struct cov {
    uint64_t ts, since, one_in, rate, cost, budget;
    char source[32], mode[32], previous[32];
} cov;

static cov g_cov[MAX_COV];
static size_t g_ncov;
static tt_threads g_own; /* the recorder's threads */

static size_t g_own_records;

static void on_event(const d9_event *ev, void *ctx) {
    tt_on_event(ev, ctx);
    if ((d9t_is(ev, "SchedSwitchEvent") || d9t_is(ev, "CpuSampleEvent")) && tt_threads_has(&g_own, (uint32_t)d9t_field_u(ev, "tid")))
        g_own_records++;
    if (!d9t_is(ev, "CoverageEvent") || g_ncov == MAX_COV) return;
    cov *c = &g_cov[g_ncov++];
    c->ts = ev->ts_ns;
    copy_str(c->source, ev, "source");
    copy_str(c->mode, ev, "mode");
    copy_str(c->previous, ev, "previous_mode");
    c->since = d9t_field_u(ev, "previous_since_ns");
    c->one_in = d9t_field_u(ev, "one_in");
    c->rate = d9t_field_u(ev, "rate_per_s");
    c->cost = d9t_field_u(ev, "cost_ppm");
    c->budget = d9t_field_u(ev, "budget_ppm");
}

/* Waits until the perf source has read switch records; false after the safety net. */
static bool wait_switch_records(void) {
    uint64_t t0 = tt_now(), closes, reopens, records;
    for (;;) {
        d9_perf_switch_events_now(&closes, &reopens, &records);
        if (records > 0) return true;
        if (tt_now() - t0 > SAFETY_NS) return false;
        tt_sleep_ns(20u * 1000u * 1000u);
    }
}

/* Waits until the governor is at `level`, with a change since the start; the level, or -1
 * after the safety net. */
static int wait_level(int want) {
    uint64_t t0 = tt_now();
    int level;
    uint64_t changes;
    for (;;) {
        d9_perf_governor_now(&level, &changes);
        if (level == want && changes > 0) return level;
        if (tt_now() - t0 > SAFETY_NS) return -1;
        tt_sleep_ns(20u * 1000u * 1000u);
    }
}

static void check_records(void) {
    printf("%zu coverage records\n", g_ncov);
    CHECK(g_ncov >= 3); /* the first segment's, a degradation, the way back */
    bool degraded = false;
    uint64_t last_change = g_ncov ? g_cov[0].since : 0;
    const char *mode = g_ncov ? g_cov[0].mode : "";
    uint64_t one_in = g_ncov ? g_cov[0].one_in : 0;
    for (size_t i = 0; i < g_ncov; i++) {
        const cov *c = &g_cov[i];
        printf("  %" PRIu64 " %s: %s -> %s (1 in %" PRIu64 ", %" PRIu64 " switches/s, est %" PRIu64 " / %" PRIu64 " ppm)\n",
               c->ts, c->source, c->previous, c->mode, c->one_in, c->rate, c->cost, c->budget);
        CHECK_STR(c->source, "off_cpu");
        CHECK_EQ_U64(c->budget, 10000);
        CHECK_STR(c->previous, mode);  /* the mode before this record is the one last written */
        CHECK_EQ_U64(c->since, last_change);
        CHECK(c->since <= c->ts);
        CHECK(strcmp(c->mode, "no_stacks") != 0); /* a level this governor no longer has */
        if (strcmp(c->mode, "full") == 0) CHECK_EQ_U64(c->one_in, 1);
        else if (strcmp(c->mode, "sampled") == 0) CHECK(c->one_in >= 2 && c->one_in <= 32);
        else if (strcmp(c->mode, "paused") == 0) CHECK_EQ_U64(c->one_in, 0);
        else CHECK(!"unknown mode");
        if (strcmp(c->mode, c->previous) != 0 || c->one_in != one_in) { /* a change, not a segment's restatement */
            last_change = c->ts;
            if (strcmp(c->mode, "full") != 0) {
                degraded = true;
                /* a degradation carries the rate measured in its period: the ping-pong's
                 * switches (each round trip blocks a thread in read) */
                CHECK(c->rate > 0);
            }
        }
        mode = c->mode;
        one_in = c->one_in;
    }
    CHECK(degraded);
    CHECK_STR(mode, "full");
}

static void check_analyze(const char *run) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s/dial9' analyze --json '%s'", getenv("D9_BUILD_DIR") ? getenv("D9_BUILD_DIR") : ".", run);
    FILE *p = popen(cmd, "r");
    CHECK(p != NULL);
    if (!p) return;
    static char out[1 << 20];
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = 0;
    CHECK(pclose(p) == 0);
    const char *section = strstr(out, "\"coverage\"");
    CHECK(section != NULL);
    if (!section) {
        printf("analyze --json printed %zu bytes: %.300s\n", n, out);
        return;
    }
    printf("analyze: %.300s\n", section);
    CHECK(strstr(section, "\"off_cpu\"") != NULL);
    CHECK(strstr(section, "\"partial\": true") != NULL || strstr(section, "\"partial\":true") != NULL);
}

/* `dial9 stats` names the partial coverage too */
static void check_stats(const char *run) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s/dial9' stats '%s'", getenv("D9_BUILD_DIR") ? getenv("D9_BUILD_DIR") : ".", run);
    FILE *p = popen(cmd, "r");
    CHECK(p != NULL);
    if (!p) return;
    char line[1024];
    bool partial = false;
    while (fgets(line, sizeof line, p))
        if (strncmp(line, "coverage   off_cpu PARTIAL: ", 28) == 0) {
            partial = true;
            printf("stats: %s", line);
        }
    CHECK(pclose(p) == 0);
    CHECK(partial);
}

int main(void) {
    CHECK(pipe(g_ping) == 0 && pipe(g_pong) == 0);
    char *dir = d9t_mkdtemp("governor");
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    CHECK(cfg.overhead_budget_pct == 1.0); /* the default */
    tt_threads before;
    tt_threads_before_start(&before);
    CHECK(d9_start(&cfg) == 0);
    CHECK(tt_recorder_threads(&before, &g_own)); /* before the workload's threads: all of them named */
    printf("recorder threads: %d\n", g_own.n);
    CHECK(tt_threads_named(&g_own, "dial9-collect") == 1);

    pthread_t a, b;
    pthread_create(&b, NULL, ponger, NULL);
    pthread_create(&a, NULL, pinger, NULL);
    bool recorded = wait_switch_records(); /* at full coverage: records before the degradation */
    d9_perf_hold_governor_level(D9_GOV_LEVEL_SAMPLED_FIRST);
    int level = recorded ? wait_level(D9_GOV_LEVEL_SAMPLED_FIRST) : -1;
    d9_perf_hold_governor_level(-1); /* from here the governor's own decisions */
    atomic_store(&g_stop, true);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    int off_level = level;
    if (level >= 0) level = wait_level(D9_GOV_LEVEL_FULL); /* quiet now: back to full coverage */
    d9_stop();

    tt_trace t;
    CHECK(tt_load(d9_run_dir(), &t) == 0);
    tt_free(&t);
    memset(&t, 0, sizeof t);
    CHECK(d9t_decode_run(d9_run_dir(), on_event, &t) == 0);
    const char *off = tt_meta(&t, "source.off_cpu");
    printf("source.off_cpu = %s\ngovernor = %s\n", off, tt_meta(&t, "governor"));
    if (tt_starts_with(off, "inactive: perf refused")) {
        printf("SKIP: perf refused on this host\n");
        CHECK_EQ_U64(g_ncov, 0);
    } else {
        CHECK(tt_starts_with(off, "active"));
        CHECK(tt_starts_with(tt_meta(&t, "governor"), "budget 1% of one CPU"));
        printf("degraded to level %d (%s), back: %d\n", off_level, off_level >= 0 ? d9_gov_mode_name(off_level) : "-", level);
        CHECK(recorded);
        CHECK_EQ_U64(off_level, D9_GOV_LEVEL_SAMPLED_FIRST);
        CHECK_EQ_U64(level, D9_GOV_LEVEL_FULL);
        check_records();
        check_analyze(d9_run_dir());
        check_stats(d9_run_dir());
        printf("switch records: %zu; records of the recorder's threads: %zu\n", t.nswitches, g_own_records);
        CHECK(t.nswitches > 0);
        CHECK_EQ_U64(g_own_records, 0);
    }
    tt_free(&t);
    if (!getenv("D9_KEEP")) d9t_rm_rf(dir);
    free(dir);
    return d9t_summary("test_mt_source_governor");
}
