/* The governor's paused level closes the perf events of the switch records and stacks, and
 * leaving it opens them again (src/sources/perf_events.c, close_switch_events), twice: with the
 * defaults (no CPU profile: nothing of perf stays open on the program's threads) and with the
 * perf CPU profile (its events stay open and keep sampling). The levels are held
 * (d9_perf_hold_governor_level): which rates and costs call for which level is
 * test_source_governor's, and the ones measured here follow the host's load (at a load of 55
 * the ping-pong's rate was under what pauses a 0.1 % budget, and a reopen's CPU was over what
 * lets it leave paused):
 *  - two recording threads ping-pong through pipes until switch records arrive; the governor is
 *    then held at paused, and 2 000 more round trips run while it is so: no perf event fd is
 *    open but the rings' hosts (on the collector's thread, after a first reopen; or only the CPU
 *    profile's and those, fewer than before, and CPU samples keep arriving);
 *  - held at sampled 1 in 32, the ping-pong stops; once the governor has left paused, perf fds
 *    are open again, and a worker sleeping 5 ms at a time (~200 switches/s) runs until switch
 *    records arrive again;
 *  - in the trace: the CoverageEvent `paused` at the close and the next one, `sampled` 1 in 32
 *    at the reopen, whose previous_mode is paused and previous_since_ns the close; no switch
 *    record between them, records before and after; no switch record twice; `analyze --json`
 *    and `dial9 stats` count paused time.
 * Then a sampled level that closes its events between windows (held at 1 in 4, closing forced:
 * the decision itself is test_source_governor's), the ping-pong running:
 *  - at a point known to be between windows (the switch events' state read closed before and
 *    after, its sequence unchanged: d9_perf_switch_state), the only perf fds are the rings'
 *    hosts, fewer than in a window;
 *  - a thread created between windows (closed all along its creation) gets events at the next
 *    window's reopen: its sleep, made while a window was known to be enabled all along, has its
 *    switch-out and switch-in in the trace;
 *  - a reopen that fails (RLIMIT_NOFILE lowered so that no fd can be made: EMFILE) pauses the
 *    governor with a CoverageEvent and says so once on stderr; once fds can be made again the
 *    level comes back (sampled, a reopen that works) by itself;
 *  - held at paused then, the rings' hosts close too: no perf fd is left (a per-thread event
 *    would keep the kernel's switch hooks running over the threads' emptied contexts);
 *  - a privilege drop (as root, in a child: setuid 65534), twice. In a window (held at full,
 *    the events enabled all along, as a server dropping at its start): the first close after it
 *    finds the stacks could not be opened again (refused unprivileged at perf_event_paranoid
 *    >= 2) and keeps them open, said once; the windows after it carry the worker's
 *    context-switch stacks, and those of a worker created between windows since (it inherits
 *    them disabled). Between windows (events closed, the stacks closed while privileged): the
 *    windows go on reopening and switch records keep coming (user-only events of its own
 *    threads are allowed), the stacks' refusal is said once. At >= 3 the switch events are
 *    refused too (paused, said once). The child exits cleanly.
 * Every phase ends on the recorder's state or on counts, never on a duration; 120 s bounds are
 * only a safety net. */
#include <dirent.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
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

/* The switch events' state read twice around fn(): true with *state when it held all along
 * (the sequence is odd while it changes, and moves at every change: d9_perf_switch_state). */
static bool state_held(int *state, void (*fn)(void *), void *arg) {
    uint64_t s0, s1;
    *state = d9_perf_switch_state(&s0);
    if (s0 & 1) return false;
    fn(arg);
    d9_perf_switch_state(&s1);
    return s1 == s0;
}

static void count_fds(void *arg) {
    int *n = arg;
    n[0] = perf_fds();
    n[1] = d9_perf_ring_hosts();
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

static bool paused_without_perf(uint64_t unused) {
    int n[2] = {-1, -1}, state = -1;
    return is_paused(unused) && state_held(&state, count_fds, n) && state == D9_PERF_SWITCH_CLOSED && n[0] == 0 &&
           n[1] == 0 && is_paused(unused);
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
    cfg.overhead_budget_pct = 0.1;
    cfg.cpu_profile = cpu_profile;
    CHECK(d9_start(&cfg) == 0);
    int fds_full = perf_fds();

    pthread_t a, b, c;
    pthread_create(&b, NULL, ponger, NULL);
    pthread_create(&a, NULL, pinger, NULL);
    bool perf = fds_full > 0;
    /* held at paused once records came (the ping-pong's rate is the host's load's: at a load of
     * 55 it is under what pauses this budget; which rates pause is test_source_governor's) */
    bool paused = perf && wait_for(records_reach, 1);
    if (paused) d9_perf_hold_governor_level(D9_GOV_LEVEL_PAUSED);
    paused = paused && wait_for(is_paused, 0);
    int fds_paused = -1, hosts_paused = -1;
    if (paused) {
        /* the switches go on while closed; the CPU profile's samples too */
        CHECK(wait_for(trips_reach, atomic_load(&g_trips) + 2000));
        uint64_t st, cs;
        d9_perf_samples_read(&st, &cs);
        if (cpu_profile) CHECK(wait_for(cpu_samples_reach, cs + 5));
        /* the fds counted while paused with the events closed all along */
        for (int tries = 0; tries < 100 && fds_paused < 0 && wait_for(is_paused, 0); tries++) {
            int state, n[2];
            if (state_held(&state, count_fds, n) && state == D9_PERF_SWITCH_CLOSED && is_paused(0)) {
                fds_paused = n[0];
                hosts_paused = n[1];
            }
        }
    }
    /* out of paused at the level above it, held too: the governor's own way back depends on the
     * load as well (a reopen's CPU, which it counts per window, took 2 ms under load: over what
     * 0.1 % leaves the sampled level, and it paused again) */
    d9_perf_hold_governor_level(D9_GOV_LEVEL_SAMPLED_LAST);
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
    d9_perf_hold_governor_level(-1);
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
        /* the CPU profile's and the rings' hosts alone (hosts exist once a reopen made them) */
        if (cpu_profile) CHECK(fds_paused > 0 && fds_paused < fds_full);
        else CHECK_EQ_U64(fds_paused, hosts_paused);
        CHECK(d9_perf_ring_hosts() <= 2 * (int)sysconf(_SC_NPROCESSORS_CONF));
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

/* ---------------------------------------------------------------- closed between windows */

static bool at_sampled(void) {
    int level;
    uint64_t changes;
    d9_perf_governor_now(&level, &changes);
    return level >= D9_GOV_LEVEL_SAMPLED_FIRST && level <= D9_GOV_LEVEL_SAMPLED_LAST;
}

/* perf fds counted while the switch events were closed (between windows, after a reopen: the
 * rings' hosts exist) and while enabled (in a window), at a sampled level, and the hosts then;
 * false after the safety net */
static bool fds_between_and_in(int *between, int *in, int *hosts) {
    *between = *in = -1;
    uint64_t t0 = tt_now();
    while (*between < 0 || *in < 0) {
        if (tt_now() - t0 > SAFETY_NS) return false;
        int state, n[2] = {-1, -1};
        uint64_t closes, reopens, records;
        d9_perf_switch_events_now(&closes, &reopens, &records);
        bool sampled = at_sampled();
        if (state_held(&state, count_fds, n) && sampled && at_sampled()) {
            if (state == D9_PERF_SWITCH_CLOSED && reopens > 0) {
                *between = n[0];
                *hosts = n[1];
            }
            if (state == D9_PERF_SWITCH_ENABLED) *in = n[0];
        }
        tt_sleep_ns(1000u * 1000u);
    }
    return true;
}

/* A thread created between windows: it records, tells its tid, then sleeps 2 ms at a time
 * until one sleep lay inside an enabled window all along (state_held). */
static atomic_int g_late_tid;
static atomic_bool g_late_go, g_late_done, g_late_quit;
static uint64_t g_late_t0, g_late_t1;

static void nap(void *arg) {
    uint64_t *t = arg;
    t[0] = tt_now();
    tt_sleep_ns(2u * 1000u * 1000u);
    t[1] = tt_now();
}

static void *late_thread(void *arg) {
    (void)arg;
    d9_worker_begin("late", 2);
    atomic_store(&g_late_tid, (int)gettid());
    while (!atomic_load(&g_late_go) && !atomic_load(&g_late_quit)) tt_sleep_ns(1000u * 1000u);
    uint64_t t0 = tt_now();
    while (atomic_load(&g_late_go) && !atomic_load(&g_late_done) && tt_now() - t0 < SAFETY_NS) {
        int state;
        uint64_t t[2];
        if (state_held(&state, nap, t) && state == D9_PERF_SWITCH_ENABLED) {
            g_late_t0 = t[0];
            g_late_t1 = t[1];
            atomic_store(&g_late_done, true);
        }
    }
    d9_worker_end();
    return NULL;
}

/* A thread created after the stacks were kept open (disabled between windows): it records, tells
 * its tid, then sleeps 2 ms at a time until told to quit. */
static void *late_napper(void *arg) {
    (void)arg;
    d9_worker_begin("late", 3);
    atomic_store(&g_late_tid, (int)gettid());
    while (!atomic_load(&g_late_quit)) tt_sleep_ns(2u * 1000u * 1000u);
    d9_worker_end();
    return NULL;
}

/* Creates fn's thread while the switch events are closed all along its creation and start. */
static bool create_between_windows(pthread_t *th, void *(*fn)(void *)) {
    uint64_t t0 = tt_now();
    while (tt_now() - t0 < SAFETY_NS) {
        uint64_t s0, s1;
        if (d9_perf_switch_state(&s0) != D9_PERF_SWITCH_CLOSED || (s0 & 1) || !at_sampled()) {
            tt_sleep_ns(1000u * 1000u);
            continue;
        }
        atomic_store(&g_late_tid, 0);
        pthread_create(th, NULL, fn, NULL);
        while (atomic_load(&g_late_tid) == 0) tt_sleep_ns(100u * 1000u);
        d9_perf_switch_state(&s1);
        if (s1 == s0) return true;
        atomic_store(&g_late_quit, true); /* it may have inherited events: try again */
        pthread_join(*th, NULL);
        atomic_store(&g_late_quit, false);
    }
    return false;
}

static bool reopen_failed_once(uint64_t unused) {
    (void)unused;
    return d9_perf_reopen_failures() >= 1;
}

static uint64_t g_reopens_at_failure;
static bool reopened_after_failure(uint64_t unused) {
    (void)unused;
    uint64_t closes, reopens, records;
    d9_perf_switch_events_now(&closes, &reopens, &records);
    return reopens > g_reopens_at_failure && at_sampled();
}

/* no fd can be made while this holds: the soft limit is the lowest free fd number */
static rlim_t limit_fds(void) {
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rlim_t old = rl.rlim_cur;
    int lowest = fcntl(0, F_DUPFD, 0);
    if (lowest >= 0) close(lowest);
    rl.rlim_cur = lowest >= 0 ? (rlim_t)lowest : old;
    setrlimit(RLIMIT_NOFILE, &rl);
    return old;
}

static void restore_fds(rlim_t old) {
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = old;
    setrlimit(RLIMIT_NOFILE, &rl);
}

static size_t count_in(const char *path, const char *needle) {
    FILE *f = fopen(path, "r");
    static char buf[1 << 16];
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = 0;
    size_t count = 0;
    for (const char *p = strstr(buf, needle); p; p = strstr(p + 1, needle)) count++;
    return count;
}

static void run_windows(void) {
    printf("--- closed between windows (1 in 4, held)\n");
    g_ncov = 0;
    atomic_store(&g_stop, false);
    atomic_store(&g_late_go, false);
    atomic_store(&g_late_done, false);
    atomic_store(&g_late_quit, false);
    char *dir = d9t_mkdtemp("governor-windows");
    char errpath[512];
    snprintf(errpath, sizeof errpath, "%s/stderr.txt", dir);
    fflush(stderr);
    int saved_err = dup(2), errfd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    dup2(errfd, 2);
    close(errfd);
    d9_perf_hold_governor_level(D9_GOV_LEVEL_SAMPLED_FIRST + 1);
    d9_perf_set_window_closing(D9_PERF_CLOSE_ALWAYS);
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    CHECK(d9_start(&cfg) == 0);
    bool perf = perf_fds() > 0;

    pthread_t a, b, late;
    pthread_create(&b, NULL, ponger, NULL);
    pthread_create(&a, NULL, pinger, NULL);
    int between = -1, in = -1, hosts = -1;
    bool seen = perf && fds_between_and_in(&between, &in, &hosts);
    bool created = seen && create_between_windows(&late, late_thread);
    bool recorded = false, failed = false, back = false, hosts_closed = false;
    if (created) {
        atomic_store(&g_late_go, true);
        uint64_t t0 = tt_now();
        while (!atomic_load(&g_late_done) && tt_now() - t0 < SAFETY_NS) tt_sleep_ns(1000u * 1000u);
        recorded = atomic_load(&g_late_done);
        atomic_store(&g_late_go, false);
        pthread_join(late, NULL);
        /* every window so far started with a reopen, which opens the switch events enabled:
         * no ioctl per thread and CPU to enable them (the code before enabled them after each) */
        uint64_t w_closes, reopens, w_records;
        d9_perf_switch_events_now(&w_closes, &reopens, &w_records);
        uint64_t enables = d9_perf_switch_enables();
        printf("windows' reopens %" PRIu64 ", enables by ioctl %" PRIu64 "\n", reopens, enables);
        CHECK(reopens >= 2);
        CHECK(enables == 0);
        /* a reopen that fails: at a point between windows, no fd can be made until it did */
        uint64_t seq;
        while (tt_now() - t0 < SAFETY_NS && (d9_perf_switch_state(&seq) != D9_PERF_SWITCH_CLOSED || (seq & 1)))
            tt_sleep_ns(1000u * 1000u);
        rlim_t old = limit_fds();
        failed = wait_for(reopen_failed_once, 0);
        restore_fds(old);
        uint64_t closes, records; /* paused in between: the CoverageEvents say it, below */
        d9_perf_switch_events_now(&closes, &g_reopens_at_failure, &records);
        back = failed && wait_for(reopened_after_failure, 0);
        /* paused after the windows: the rings' hosts close with the events, nothing of perf
         * stays open (their per-thread events would keep the kernel's switch hooks on) */
        if (back) {
            d9_perf_hold_governor_level(D9_GOV_LEVEL_PAUSED);
            hosts_closed = wait_for(paused_without_perf, 0);
        }
    }
    atomic_store(&g_stop, true);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    d9_stop();
    d9_perf_hold_governor_level(-1);
    d9_perf_set_window_closing(D9_PERF_CLOSE_AUTO);
    fflush(stderr);
    dup2(saved_err, 2);
    close(saved_err);
    printf("perf fds between windows %d, in a window %d, rings' hosts %d; paused then without perf %d; reopen failures %" PRIu64
           "; the late thread's sleep %" PRIu64 "..%" PRIu64 "; a close and a reopen counted as %.2f ms\n",
           between, in, hosts, hosts_closed, d9_perf_reopen_failures(), g_late_t0, g_late_t1, d9_perf_reopen_cost_ns() / 1e6);

    tt_trace t;
    memset(&t, 0, sizeof t);
    CHECK(d9t_decode_run(d9_run_dir(), on_event, &t) == 0);
    const char *off = tt_meta(&t, "source.off_cpu");
    if (!perf || tt_starts_with(off, "inactive: perf refused")) {
        printf("SKIP: perf refused on this host\n");
    } else {
        CHECK(seen);
        CHECK(between >= 0 && between < in);
        CHECK_EQ_U64(between, hosts); /* nothing of perf on the program's threads */
        CHECK(hosts <= 2 * (int)sysconf(_SC_NPROCESSORS_CONF));
        CHECK(created);
        CHECK(recorded);
        /* the late thread's sleep: its switch-out and switch-in, inside it */
        size_t outs = 0, ins = 0;
        for (size_t i = 0; i < t.nswitches; i++) {
            const tt_switch *w = &t.switches[i];
            if ((int)w->tid != atomic_load(&g_late_tid) || w->ts < g_late_t0 || w->ts > g_late_t1) continue;
            outs += w->out;
            ins += !w->out;
        }
        printf("the late thread's switches in its sleep: %zu out, %zu in\n", outs, ins);
        CHECK(outs >= 1);
        CHECK(ins >= 1);
        /* the failed reopen: paused (a CoverageEvent from sampled), said once, then back */
        CHECK(failed);
        CHECK(back);
        CHECK(hosts_closed); /* paused after windows: no perf fd left, not even the hosts */
        size_t to_paused = 0, from_paused = 0;
        for (size_t i = 0; i < g_ncov; i++) {
            to_paused += strcmp(g_cov[i].mode, "paused") == 0 && strcmp(g_cov[i].previous, "sampled") == 0;
            from_paused += strcmp(g_cov[i].mode, "sampled") == 0 && strcmp(g_cov[i].previous, "paused") == 0;
        }
        CHECK(to_paused >= 1);
        CHECK(from_paused >= 1);
        size_t said = count_in(errpath, "reopening their perf events failed");
        printf("stderr says it %zu time(s)\n", said);
        CHECK_EQ_U64(said, 1);
        CHECK_EQ_U64(count_in(errpath, "failed (Too many open files)"), 1); /* the real cause */
    }
    tt_free(&t);
    if (!getenv("D9_KEEP")) d9t_rm_rf(dir);
    free(dir);
}

/* ---------------------------------------------------------------- a privilege drop */

static bool reopens_reach(uint64_t n) {
    uint64_t closes, reopens, records;
    d9_perf_switch_events_now(&closes, &reopens, &records);
    return reopens >= n || d9_perf_reopen_failures() > 0;
}

static bool closes_reach(uint64_t n) {
    uint64_t closes, reopens, records;
    d9_perf_switch_events_now(&closes, &reopens, &records);
    return closes >= n || d9_perf_reopen_failures() > 0;
}

static bool at_full_enabled(uint64_t unused) {
    (void)unused;
    int level;
    uint64_t changes, seq;
    d9_perf_governor_now(&level, &changes);
    return level == D9_GOV_LEVEL_FULL && d9_perf_switch_state(&seq) == D9_PERF_SWITCH_ENABLED && !(seq & 1);
}

/* stacks read since `from` (any thread's), or 20 more windows reopened since `reopens` (or a
 * failed reopen): a count of windows, not a duration, bounds the wait when no stack comes */
static uint64_t g_stacks_from, g_reopens_from;
static bool stacks_or_windows(uint64_t unused) {
    (void)unused;
    uint64_t stacks, samples;
    d9_perf_samples_read(&stacks, &samples);
    return stacks > g_stacks_from || reopens_reach(g_reopens_from + 20);
}

/* The child: 0 when it dropped and the windows went on (1: paused, said), 16 when in_window
 * and no context-switch stack of the worker's was recorded after the first close that followed
 * the drop. in_window: the drop is made while the events are open (held at full, enabled all
 * along), as a server dropping its privileges at its start does (the governor starts at full);
 * else between windows, the events closed (the stacks were closed while privileged). */
static int drop_child(const char *dir, bool in_window) {
    d9_perf_hold_governor_level(D9_GOV_LEVEL_SAMPLED_FIRST + 1);
    d9_perf_set_window_closing(D9_PERF_CLOSE_ALWAYS);
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    cfg.symbolize = false;
    /* stacks paced far above any switch rate the ping-pong reaches, and not thinned at full: the
     * pacing never pauses them, so every window has them. (Paced as by default, the debt the
     * full level runs up takes up to D9_STACKS_MAX_PAUSE_NS of its rate to repay at 1 in 4.) */
    cfg.switch_stacks_per_sec = 1000000;
    d9_perf_thin_stacks_at_full(false);
    if (d9_start(&cfg) != 0) return 10;
    atomic_store(&g_stop, false);
    pthread_t a, b;
    pthread_create(&b, NULL, ponger, NULL);
    pthread_create(&a, NULL, pinger, NULL);
    /* after a first reopen (the rings' hosts exist, mapped by root) */
    if (!wait_for(reopens_reach, 1)) return 11;
    d9_flush();
    if (d9_hand_over_files(65534, 65534) != 0) return 12;
    uint64_t t0 = tt_now(), seq = 0, seq_after;
    if (in_window) { /* held at full: the events stay enabled */
        d9_perf_hold_governor_level(D9_GOV_LEVEL_FULL);
        if (!wait_for(at_full_enabled, 0)) return 11;
    } else {
        while (tt_now() - t0 < SAFETY_NS && (d9_perf_switch_state(&seq) != D9_PERF_SWITCH_CLOSED || (seq & 1)))
            tt_sleep_ns(1000u * 1000u);
    }
    if (setgid(65534) != 0 || setuid(65534) != 0 || geteuid() != 65534) return 13;
    d9_perf_switch_state(&seq_after);
    if (!in_window && seq_after != seq) return 20; /* a window began during the drop: the parent tries again */
    uint64_t closes, reopens, records;
    d9_perf_switch_events_now(&closes, &reopens, &records);
    if (in_window) { /* windows again: the first close after the drop */
        d9_perf_hold_governor_level(D9_GOV_LEVEL_SAMPLED_FIRST + 1);
        if (!wait_for(closes_reach, closes + 1)) return 14;
    }
    uint64_t t_closed = tt_now(), stacks_at_close, samples;
    d9_perf_samples_read(&stacks_at_close, &samples);
    d9_perf_switch_events_now(&closes, &reopens, &records);
    /* two windows reopened as uid 65534, or a failed reopen */
    if (!wait_for(reopens_reach, reopens + 2)) return 14;
    bool failed = d9_perf_reopen_failures() > 0;
    if (!failed && !wait_for(records_reach, records + 1)) return 15;
    g_stacks_from = stacks_at_close;
    g_reopens_from = reopens;
    if (in_window && !failed && !wait_for(stacks_or_windows, 0)) return 15;
    /* a worker created between windows, the stacks kept open and disabled: it inherits them
     * disabled (its creator's), and the windows' enables reach the inherited copies; it naps
     * through 5 windows */
    pthread_t late;
    bool late_made = in_window && !failed && create_between_windows(&late, late_napper);
    if (late_made) {
        d9_perf_switch_events_now(&closes, &reopens, &records);
        wait_for(reopens_reach, reopens + 5);
        atomic_store(&g_late_quit, true);
        pthread_join(late, NULL);
    }
    atomic_store(&g_stop, true);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    d9_perf_switch_events_now(&closes, &reopens, &records);
    d9_stop();
    /* the worker's context-switch stacks after the first close that followed the drop */
    tt_trace t;
    size_t stacks_after = 0, late_stacks = 0;
    if (tt_load(d9_run_dir(), &t) != 0) return 17;
    for (size_t i = 0; i < t.nsamples; i++) {
        stacks_after += t.samples[i].source == 1 && t.samples[i].ts > t_closed;
        late_stacks += t.samples[i].source == 1 && late_made && (int)t.samples[i].tid == atomic_load(&g_late_tid);
    }
    printf("  %s: closes %" PRIu64 ", reopens %" PRIu64 "; context-switch stacks after the first close since the drop: %zu, "
           "of a thread created between windows since: %zu\n",
           in_window ? "dropped in a window" : "dropped between windows", closes, reopens, stacks_after, late_stacks);
    tt_free(&t);
    fflush(stdout);
    if (failed) return 1;
    if (in_window && (stacks_after == 0 || !late_made || late_stacks == 0)) return 16;
    return 0;
}

static void run_privilege_drop(bool in_window) {
    printf("--- a privilege drop %s\n", in_window ? "in a window (events open)" : "between windows (events closed)");
    if (geteuid() != 0) {
        printf("SKIP: not root\n");
        return;
    }
    char *dir = d9t_mkdtemp("governor-drop");
    chmod(dir, 0755);
    char errpath[512];
    snprintf(errpath, sizeof errpath, "%s/stderr.txt", dir);
    int status = 0;
    for (int attempt = 0; attempt < 5; attempt++) {
        fflush(stdout);
        fflush(stderr);
        pid_t pid = fork();
        if (pid == 0) {
            int fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0666);
            dup2(fd, 2);
            close(fd);
            _exit(drop_child(dir, in_window));
        }
        waitpid(pid, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 20) break;
        printf("  the drop was not between windows all along (a window began): again\n");
    }
    int paranoid = 2;
    FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
    if (f) {
        if (fscanf(f, "%d", &paranoid) != 1) paranoid = 2;
        fclose(f);
    }
    size_t stacks_said = count_in(errpath, "context-switch stacks not reopened");
    size_t kept_said = count_in(errpath, "context-switch stacks kept open");
    size_t paused_said = count_in(errpath, "reopening their perf events failed");
    printf("child exit %d (signal %d); perf_event_paranoid %d; said: stacks not reopened %zu, kept open %zu, paused %zu\n",
           WIFEXITED(status) ? WEXITSTATUS(status) : -1, WIFSIGNALED(status) ? WTERMSIG(status) : 0, paranoid,
           stacks_said, kept_said, paused_said);
    CHECK(WIFEXITED(status));
    if (!WIFEXITED(status)) return;
    int code = WEXITSTATUS(status);
    if (paranoid >= 3) { /* user-only events refused too: paused, said once */
        CHECK_EQ_U64(code, 1);
        CHECK_EQ_U64(paused_said, 1);
    } else if (in_window) {
        /* the first close after the drop found the stacks could not be reopened and kept them
         * open (disabled between windows): the windows after it carry stacks */
        CHECK_EQ_U64(code, 0);
        CHECK_EQ_U64(paused_said, 0);
        CHECK_EQ_U64(stacks_said, 0);
        CHECK_EQ_U64(kept_said, paranoid >= 2 ? 1 : 0);
    } else {
        CHECK_EQ_U64(code, 0); /* the windows went on with switch records */
        CHECK_EQ_U64(paused_said, 0);
        CHECK_EQ_U64(stacks_said, paranoid >= 2 ? 1 : 0);
    }
    if (!getenv("D9_KEEP")) d9t_rm_rf(dir);
    free(dir);
}

int main(void) {
    CHECK(pipe(g_ping) == 0 && pipe(g_pong) == 0);
    run(false);
    run(true);
    run_windows();
    run_privilege_drop(true);
    run_privilege_drop(false);
    return d9t_summary("test_mt_source_governor_close");
}
