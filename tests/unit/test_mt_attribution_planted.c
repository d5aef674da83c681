/* Per-poll attribution (model/attribution.h) of a real recording with planted causes, one
 * spawn location each, ROUNDS polls each:
 *   lock   the poll takes a mutex another thread holds until the poll waits for it, and 3 ms more
 *   read   the poll reads a pipe another thread writes once the poll sleeps in read(), 3 ms later
 *   sleep  the poll sleeps 3 ms in nanosleep
 *   burn   the poll burns 3 ms of its thread's CPU time
 * Each cause is there however the machine schedules the threads (the helpers act once the
 * worker really waits, tt_wait_blocked_in), and each planted wait lasts at least 3 ms, so the
 * checks are: the planted part is the largest blocked part of its location, and with the
 * blocked time whose cause was not recorded it is at least ROUNDS x 3 ms (x 8/10: the switch
 * records' and the recorder's clocks); a burn is on-CPU at least that long; nothing is unknown
 * when the recorder dropped nothing (the governor is off). A busy machine only adds run-queue
 * waits (runnable, or the cause of the wait they follow), never removes a planted part.
 * Skipped, saying so, where perf refuses switch records; the causes are checked where the
 * context-switch stacks are recorded. */
#include <sys/syscall.h>
#include <semaphore.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "check.h"
#include "dial9/dial9.h"
#include "test_source_util.h"

#define ROUNDS 10
#define PLANT_NS (3u * 1000u * 1000u)

enum { S_LOCK, S_READ, S_SLEEP, S_BURN, S_COUNT };
static const char *const scenario_names[S_COUNT] = {"lock", "read", "sleep", "burn"};
static char g_loc[S_COUNT][512]; /* each scenario's spawn location, as the recorder names it */

static void note_loc(int s, const d9_loc *l) {
    snprintf(g_loc[s], sizeof g_loc[s], "%s:%u", l->file, l->line);
}

/* ---- lock: a holder keeps the mutex until the worker waits for it, then 3 ms */
static pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;
static sem_t g_held, g_got;
static _Atomic pid_t g_lock_worker;

static void *lock_holder(void *arg) {
    (void)arg;
    for (int i = 0; i < ROUNDS; i++) {
        pthread_mutex_lock(&g_mutex);
        sem_post(&g_held);
        while (!atomic_load(&g_lock_worker)) tt_sleep_ns(1000000);
        CHECK(tt_wait_blocked_in(atomic_load(&g_lock_worker), SYS_futex, (uint64_t)(uintptr_t)&g_mutex));
        tt_sleep_ns(PLANT_NS);
        pthread_mutex_unlock(&g_mutex);
        sem_wait(&g_got);
    }
    return NULL;
}

static void *lock_worker(void *arg) {
    (void)arg;
    d9_worker_begin("planted", S_LOCK);
    atomic_store(&g_lock_worker, gettid());
    for (int i = 0; i < ROUNDS; i++) {
        sem_wait(&g_held);
        const d9_loc *here = D9_HERE;
        note_loc(S_LOCK, here);
        d9_poll_begin(100 + (uint64_t)i, here);
        pthread_mutex_lock(&g_mutex);
        pthread_mutex_unlock(&g_mutex);
        d9_poll_end();
        sem_post(&g_got);
    }
    d9_worker_end();
    return NULL;
}

/* ---- read: a writer answers 3 ms after the worker sleeps in read() */
static int g_pipe[2];
static _Atomic pid_t g_reader;
static sem_t g_reading;

static void *pipe_writer(void *arg) {
    (void)arg;
    for (int i = 0; i < ROUNDS; i++) {
        sem_wait(&g_reading);
        CHECK(tt_wait_blocked_in(atomic_load(&g_reader), SYS_read, (uint64_t)g_pipe[0]));
        tt_sleep_ns(PLANT_NS);
        char c = 'x';
        if (write(g_pipe[1], &c, 1) != 1) perror("write");
    }
    return NULL;
}

static void *read_worker(void *arg) {
    (void)arg;
    d9_worker_begin("planted", S_READ);
    atomic_store(&g_reader, gettid());
    for (int i = 0; i < ROUNDS; i++) {
        const d9_loc *here = D9_HERE;
        note_loc(S_READ, here);
        d9_poll_begin(200 + (uint64_t)i, here);
        sem_post(&g_reading);
        char c;
        if (read(g_pipe[0], &c, 1) != 1) perror("read");
        d9_poll_end();
    }
    d9_worker_end();
    return NULL;
}

/* ---- sleep and burn: the worker alone */
static void *sleep_worker(void *arg) {
    (void)arg;
    d9_worker_begin("planted", S_SLEEP);
    for (int i = 0; i < ROUNDS; i++) {
        const d9_loc *here = D9_HERE;
        note_loc(S_SLEEP, here);
        d9_poll_begin(300 + (uint64_t)i, here);
        tt_sleep_ns(PLANT_NS);
        d9_poll_end();
    }
    d9_worker_end();
    return NULL;
}

static volatile uint64_t g_sink;

static void *burn_worker(void *arg) {
    (void)arg;
    d9_worker_begin("planted", S_BURN);
    for (int i = 0; i < ROUNDS; i++) {
        const d9_loc *here = D9_HERE;
        note_loc(S_BURN, here);
        d9_poll_begin(400 + (uint64_t)i, here);
        uint64_t until = tt_thread_cpu_ns() + PLANT_NS;
        while (tt_thread_cpu_ns() < until) g_sink = g_sink * 31 + 7;
        d9_poll_end();
        tt_sleep_ns(1000000); /* between polls: the next poll starts on a fresh time slice */
    }
    d9_worker_end();
    return NULL;
}

static void run_pair(void *(*a)(void *), void *(*b)(void *)) {
    pthread_t x, y;
    pthread_create(&x, NULL, a, NULL);
    if (b) pthread_create(&y, NULL, b, NULL);
    pthread_join(x, NULL);
    if (b) pthread_join(y, NULL);
}

/* `dial9 symbolize` of the run (the CLI next to this test): the recorder's own symbols at
 * stop have a bounded time, and the causes are read from the names of the frames. */
static void symbolize_run(void) {
    const char *bd = getenv("D9_BUILD_DIR");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s/dial9' symbolize -q '%s' >/dev/null 2>&1", bd && *bd ? bd : ".", d9_run_dir());
    int rc = system(cmd);
    if (rc != 0) printf("dial9 symbolize: exit %d (the recorder's own symbols are used)\n", rc);
}

static const d9a_report *analyze_run(d9a_analysis **out) {
    char **files;
    int n = d9t_list_segments(d9_run_dir(), &files);
    d9a_analysis *a = d9a_new(NULL);
    *out = a;
    for (int i = 0; a && i < n; i++) {
        char err[256];
        d9_decoder *d = d9_dec_open_path(files[i], NULL, err, sizeof err);
        if (!d) {
            fprintf(stderr, "open %s: %s\n", files[i], err);
            continue;
        }
        d9a_begin_file(a);
        d9_event ev;
        while (d9_dec_next(d, &ev) > 0)
            if (d9a_feed(a, &ev, d) != 0) break;
        d9_dec_close(d);
    }
    d9t_free_list(files, n);
    return a ? d9a_finish(a) : NULL;
}

static const d9a_location_report *find_loc(const d9a_report *r, int s) {
    for (size_t i = 0; i < r->nlocations; i++)
        if (!strcmp(r->locations[i].location, g_loc[s])) return &r->locations[i];
    return NULL;
}

static void print_parts(const char *name, const d9a_location_report *l) {
    printf("%-6s %2" PRIu64 " polls, %8.3f ms:", name, l->polls.count, (double)l->polls.total / 1e6);
    for (int k = 0; k < D9M_PARTS; k++)
        if (l->parts.ns[k]) printf(" %s %.3f ms", d9m_part_names[k], (double)l->parts.ns[k] / 1e6);
    printf("\n");
}

/* The planted part is the largest blocked part, and with blocked_other (a blocked interval
 * whose switch-out stack was not matched: its cause not recorded) it holds the planted time. */
static void check_cause(const d9a_location_report *l, d9m_part planted) {
    const uint64_t floor = (uint64_t)ROUNDS * PLANT_NS * 8 / 10;
    CHECK(l->parts.ns[planted] + l->parts.ns[D9M_PART_BLOCKED_OTHER] >= floor);
    for (int k = D9M_PART_LOCK; k <= D9M_PART_BLOCKED_OTHER; k++)
        if (k != (int)planted) CHECK(l->parts.ns[k] < l->parts.ns[planted]);
}

int main(void) {
    CHECK(pipe(g_pipe) == 0);
    sem_init(&g_held, 0, 0);
    sem_init(&g_got, 0, 0);
    sem_init(&g_reading, 0, 0);
    char *dir = d9t_mkdtemp("planted");
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    cfg.overhead_budget_pct = 0;         /* every switch record: coverage is complete */
    cfg.switch_stacks_per_sec = 1000000; /* a stack at every switch */
    CHECK(d9_start(&cfg) == 0);
    run_pair(lock_worker, lock_holder);
    run_pair(read_worker, pipe_writer);
    run_pair(sleep_worker, NULL);
    run_pair(burn_worker, NULL);
    d9_stop();

    tt_trace t;
    CHECK(tt_load(d9_run_dir(), &t) == 0);
    const char *off = tt_meta(&t, "source.off_cpu");
    const char *stacks = tt_meta(&t, "source.switch_stacks");
    printf("source.off_cpu = %s\nsource.switch_stacks = %s\ndropped: %" PRIu64 "\n", off, stacks, t.lost);
    if (!tt_starts_with(off, "active")) {
        printf("SKIP: no switch records on this host (%s)\n", off);
    } else {
        symbolize_run();
        d9a_analysis *a;
        const d9a_report *r = analyze_run(&a);
        CHECK(r != NULL);
        const d9a_location_report *l[S_COUNT] = {0};
        for (int s = 0; r && s < S_COUNT; s++) {
            l[s] = find_loc(r, s);
            CHECK(l[s] != NULL);
            if (!l[s]) continue;
            print_parts(scenario_names[s], l[s]);
            CHECK_EQ_U64(l[s]->polls.count, ROUNDS);
            CHECK_EQ_U64(d9m_parts_total(&l[s]->parts), l[s]->polls.total);
            if (t.lost == 0) CHECK_EQ_U64(l[s]->parts.ns[D9M_PART_UNKNOWN], 0);
        }
        if (r && l[S_BURN]) {
            CHECK(l[S_BURN]->parts.ns[D9M_PART_ON_CPU] >= (uint64_t)ROUNDS * PLANT_NS * 8 / 10);
            uint64_t blocked = 0;
            for (int k = D9M_PART_LOCK; k <= D9M_PART_BLOCKED_OTHER; k++) blocked += l[S_BURN]->parts.ns[k];
            CHECK(blocked < l[S_BURN]->parts.ns[D9M_PART_ON_CPU]);
        }
        if (r && tt_starts_with(stacks, "active") && l[S_LOCK] && l[S_READ] && l[S_SLEEP]) {
            check_cause(l[S_LOCK], D9M_PART_LOCK);
            check_cause(l[S_READ], D9M_PART_IO);
            check_cause(l[S_SLEEP], D9M_PART_SLEEP);
        } else if (r) {
            printf("SKIP causes: no context-switch stacks (%s)\n", stacks);
        }
        d9a_free(a);
    }
    tt_free(&t);
    d9t_rm_rf(dir);
    free(dir);
    return d9t_summary("attribution_planted");
}
