/* Per-poll and per-span attribution (model/attribution.h, model/spans.h) of a real recording
 * with planted causes, ROUNDS polls of one spawn location each:
 *   lock   the poll takes a mutex another thread holds until the poll waits for it, and 3 ms more
 *   read   the poll reads a pipe another thread writes once the poll sleeps in read(), 3 ms later
 *   sleep  the poll sleeps 3 ms in nanosleep
 *   burn   the poll burns 3 ms of its thread's CPU time
 *   hog    the poll burns 3 ms of CPU pinned to one CPU with a hog thread that never sleeps,
 *          and goes on until the hog has run during the poll (so the poll waited for the CPU)
 *   timer  a span begins in a poll of a task, whose loop then sleeps 3 ms (its timer) and wakes
 *          the task, whose next poll ends the span
 * and a span around each lock wait, whose in-poll part by cause must hold the same lock time
 * as its polls' attribution.
 * On a busy machine the nominal 3 ms is not what happened, so the program measures what it
 * planted, bracketing each recorded timestamp between two clock reads: the wall and thread
 * CPU clocks around the poll (outside its begin and end: an upper bound) and inside them (a
 * lower bound), around the planted call, and the thread's voluntary and involuntary switch
 * counts (getrusage). The thread's CPU clock is perf's task clock, which starts and stops
 * where the kernel writes the switch records; CLOCK_THREAD_CPUTIME_ID charges a woken thread
 * from its wake-up, not from its switch-in (task_clock_test_util.h), which put ~130 us a sleep
 * poll on CPU that the trace rightly had off CPU, and failed on_cpu under load. Each part of
 * the attribution must lie within 5 % (or 100 us per round) of the measured interval that
 * holds it:
 *   on_cpu    between the thread CPU time inside and around the polls;
 *   lock / io / sleep, planted in a blocking call: at least the off-CPU time of the call in
 *             the rounds without an involuntary switch (all of it was then blocked, in that
 *             call), at most the off-CPU time around the polls;
 *   runnable, planted by burn and hog: at least the off-CPU time inside the polls of the
 *             rounds without a voluntary switch (all of it was then a run-queue wait), at most
 *             the off-CPU time around them; for the hog schedstat's run_delay around them is
 *             printed beside, not bounded: it ends at the run queue's clock at the switch,
 *             where CLOCK_THREAD_CPUTIME_ID begins, short of the switch-in record (the trace's
 *             runnable was over it by up to 59 us a round in 40 loaded runs);
 *   the timer span's poll / queued / wait parts: between the brackets of the recorded begin,
 *             poll end, wake, poll start and end; nothing unknown.
 * These bounds hold by construction whatever the scheduler does (a preemption only widens a
 * bracket); each check can fail (a part counted in another, a lost interval). Nothing is
 * unknown when the recorder dropped nothing (the governor is off). Skipped, saying so, where
 * perf refuses switch records; the causes are checked where the context-switch stacks are
 * recorded. */
#include <sys/resource.h>
#include <sys/syscall.h>
#include <fcntl.h>
#include <sched.h>
#include <semaphore.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "check.h"
#include "dial9/dial9.h"
#include "task_clock_test_util.h"
#include "test_source_util.h"

#define ROUNDS 10
#define PLANT_NS (3u * 1000u * 1000u)
#define SLACK_PER_ROUND_NS 100000u /* the "or 100 us", per poll */

enum { S_LOCK, S_READ, S_SLEEP, S_BURN, S_HOG, S_COUNT };
static const char *const scenario_names[S_COUNT] = {"lock", "read", "sleep", "burn", "hog"};
static char g_loc[S_COUNT][512]; /* each scenario's spawn location, as the recorder names it */

static void note_loc(int s, const d9_loc *l) {
    snprintf(g_loc[s], sizeof g_loc[s], "%s:%u", l->file, l->line);
}

/* ---- what a thread measures: its clocks and switch counts at one instant */
typedef struct meter {
    uint64_t wall, cpu;
    long vol, invol; /* voluntary / involuntary context switches so far */
} meter;

static uint64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Each measuring thread's task clock (task_clock_test_util.h); where perf refuses it,
 * CLOCK_THREAD_CPUTIME_ID, said (the switch records, and with them the bounds, are then most
 * likely refused too). */
static _Thread_local int t_task_clock = -1;
static _Atomic int g_task_clock_errno; /* the first refusal's */

static void meter_thread_begin(void) {
    int fd = tt_task_clock_open();
    int none = 0;
    if (fd >= 0) t_task_clock = fd;
    else atomic_compare_exchange_strong(&g_task_clock_errno, &none, -fd);
}

static void meter_thread_end(void) {
    if (t_task_clock >= 0) close(t_task_clock);
    t_task_clock = -1;
}

static void meter_read(meter *m) {
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    m->vol = ru.ru_nvcsw;
    m->invol = ru.ru_nivcsw;
    m->cpu = t_task_clock >= 0 ? tt_task_clock_ns(t_task_clock) : tt_thread_cpu_ns();
    m->wall = mono_ns();
}

static uint64_t off_between(const meter *a, const meter *b) {
    uint64_t wall = b->wall - a->wall, cpu = b->cpu - a->cpu;
    return wall > cpu ? wall - cpu : 0;
}

/* One scenario's measured bounds, summed over its rounds (see the top comment). */
typedef struct measured {
    uint64_t cpu_in, cpu_out;   /* thread CPU time inside / around the polls */
    uint64_t off_out;           /* off-CPU time around the polls */
    uint64_t planted_lo;        /* the planted part's lower bound */
    uint64_t run_delay;         /* hog: schedstat's run-queue wait around the polls */
    int clean;                  /* rounds that gave planted_lo their time */
} measured;
static measured g_m[S_COUNT];

/* A poll measured: o0 before its begin, i0 after it, i1 before its end, o1 after it. */
static void account_poll(measured *m, const meter *o0, const meter *i0, const meter *i1, const meter *o1) {
    m->cpu_in += i1->cpu - i0->cpu;
    m->cpu_out += o1->cpu - o0->cpu;
    m->off_out += off_between(o0, o1);
}

/* A blocking call [c0, c1) inside the poll [o0, o1): when nothing preempted the thread in the
 * poll, every off-CPU interval of the call was a block in it. */
static void account_call(measured *m, const meter *o0, const meter *c0, const meter *c1, const meter *o1) {
    if (o1->invol != o0->invol) return;
    m->planted_lo += off_between(c0, c1);
    m->clean++;
}

/* A poll that never blocks: when it made no voluntary switch, all its off-CPU time inside
 * [i0, i1) was a run-queue wait. */
static void account_run(measured *m, const meter *o0, const meter *i0, const meter *i1, const meter *o1) {
    if (o1->vol != o0->vol) return;
    m->planted_lo += off_between(i0, i1);
    m->clean++;
}

/* A span inside each lock poll, around its wait: its in-poll part by cause (model/spans.h)
 * holds the poll's lock time exactly, the off-CPU interval lying inside it. */
#define LOCK_SPAN "planted_lock"

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
    meter_thread_begin();
    atomic_store(&g_lock_worker, gettid());
    for (int i = 0; i < ROUNDS; i++) {
        sem_wait(&g_held);
        const d9_loc *here = D9_HERE;
        note_loc(S_LOCK, here);
        meter o0, i0, c0, c1, i1, o1;
        meter_read(&o0);
        d9_poll_begin(100 + (uint64_t)i, here);
        d9_span_begin(D9_SPAN_NAME(LOCK_SPAN), (uint64_t)i); /* around the wait */
        meter_read(&i0);
        meter_read(&c0);
        pthread_mutex_lock(&g_mutex);
        meter_read(&c1);
        pthread_mutex_unlock(&g_mutex);
        meter_read(&i1);
        d9_span_end(D9_SPAN_NAME(LOCK_SPAN), (uint64_t)i);
        d9_poll_end();
        meter_read(&o1);
        account_poll(&g_m[S_LOCK], &o0, &i0, &i1, &o1);
        account_call(&g_m[S_LOCK], &o0, &c0, &c1, &o1);
        sem_post(&g_got);
    }
    d9_worker_end();
    meter_thread_end();
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
    meter_thread_begin();
    atomic_store(&g_reader, gettid());
    for (int i = 0; i < ROUNDS; i++) {
        const d9_loc *here = D9_HERE;
        note_loc(S_READ, here);
        meter o0, i0, c0, c1, i1, o1;
        /* before the poll: the writer it wakes may preempt this thread, which would leave the
         * round out of the lower bound (the writer waits until read() blocks anyway) */
        sem_post(&g_reading);
        meter_read(&o0);
        d9_poll_begin(200 + (uint64_t)i, here);
        meter_read(&i0);
        char c;
        meter_read(&c0);
        if (read(g_pipe[0], &c, 1) != 1) perror("read");
        meter_read(&c1);
        meter_read(&i1);
        d9_poll_end();
        meter_read(&o1);
        account_poll(&g_m[S_READ], &o0, &i0, &i1, &o1);
        account_call(&g_m[S_READ], &o0, &c0, &c1, &o1);
    }
    d9_worker_end();
    meter_thread_end();
    return NULL;
}

/* ---- sleep and burn: the worker alone */
static void *sleep_worker(void *arg) {
    (void)arg;
    d9_worker_begin("planted", S_SLEEP);
    meter_thread_begin();
    for (int i = 0; i < ROUNDS; i++) {
        const d9_loc *here = D9_HERE;
        note_loc(S_SLEEP, here);
        meter o0, i0, c0, c1, i1, o1;
        meter_read(&o0);
        d9_poll_begin(300 + (uint64_t)i, here);
        meter_read(&i0);
        meter_read(&c0);
        tt_sleep_ns(PLANT_NS);
        meter_read(&c1);
        meter_read(&i1);
        d9_poll_end();
        meter_read(&o1);
        account_poll(&g_m[S_SLEEP], &o0, &i0, &i1, &o1);
        account_call(&g_m[S_SLEEP], &o0, &c0, &c1, &o1);
    }
    d9_worker_end();
    meter_thread_end();
    return NULL;
}

static volatile uint64_t g_sink;

static void burn_cpu_ns(uint64_t ns) {
    uint64_t until = tt_thread_cpu_ns() + ns;
    while (tt_thread_cpu_ns() < until) g_sink = g_sink * 31 + 7;
}

static void *burn_worker(void *arg) {
    (void)arg;
    d9_worker_begin("planted", S_BURN);
    meter_thread_begin();
    for (int i = 0; i < ROUNDS; i++) {
        const d9_loc *here = D9_HERE;
        note_loc(S_BURN, here);
        meter o0, i0, i1, o1;
        meter_read(&o0);
        d9_poll_begin(400 + (uint64_t)i, here);
        meter_read(&i0);
        burn_cpu_ns(PLANT_NS);
        meter_read(&i1);
        d9_poll_end();
        meter_read(&o1);
        account_poll(&g_m[S_BURN], &o0, &i0, &i1, &o1);
        account_run(&g_m[S_BURN], &o0, &i0, &i1, &o1);
        tt_sleep_ns(1000000); /* between polls: the next poll starts on a fresh time slice */
    }
    d9_worker_end();
    meter_thread_end();
    return NULL;
}

/* ---- hog: a thread that never sleeps, pinned with the worker to one CPU */
static int g_hog_cpu;
static _Atomic bool g_hog_stop;
static _Atomic uint64_t g_hog_spins;
static clockid_t g_hog_clock;
static sem_t g_hog_ready;

static void *hog_thread(void *arg) {
    (void)arg;
    tt_pin_to_cpu(g_hog_cpu);
    pthread_getcpuclockid(pthread_self(), &g_hog_clock);
    sem_post(&g_hog_ready);
    while (!atomic_load_explicit(&g_hog_stop, memory_order_relaxed))
        atomic_fetch_add_explicit(&g_hog_spins, 1, memory_order_relaxed);
    return NULL;
}

static uint64_t clock_ns(clockid_t c) {
    struct timespec ts;
    clock_gettime(c, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* This thread's run-queue wait so far (the second field of /proc/thread-self/schedstat). */
static uint64_t run_delay_ns(void) {
    char buf[128];
    int fd = open("/proc/thread-self/schedstat", O_RDONLY);
    if (fd < 0) return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return 0;
    buf[n] = 0;
    unsigned long long on_cpu = 0, delay = 0;
    if (sscanf(buf, "%llu %llu", &on_cpu, &delay) != 2) return 0;
    return delay;
}

static void *hog_worker(void *arg) {
    (void)arg;
    tt_pin_to_cpu(g_hog_cpu);
    pthread_t hog;
    pthread_create(&hog, NULL, hog_thread, NULL);
    sem_wait(&g_hog_ready);
    d9_worker_begin("planted", S_HOG);
    meter_thread_begin();
    for (int i = 0; i < ROUNDS; i++) {
        const d9_loc *here = D9_HERE;
        note_loc(S_HOG, here);
        meter o0, i0, i1, o1;
        uint64_t d0 = run_delay_ns();
        meter_read(&o0);
        d9_poll_begin(500 + (uint64_t)i, here);
        meter_read(&i0);
        /* burn until the hog ran meanwhile: on one CPU, the poll then waited for it */
        uint64_t hog0 = clock_ns(g_hog_clock);
        burn_cpu_ns(PLANT_NS);
        while (clock_ns(g_hog_clock) == hog0) burn_cpu_ns(100000);
        meter_read(&i1);
        d9_poll_end();
        meter_read(&o1);
        uint64_t d1 = run_delay_ns();
        g_m[S_HOG].run_delay += d1 - d0;
        account_poll(&g_m[S_HOG], &o0, &i0, &i1, &o1);
        account_run(&g_m[S_HOG], &o0, &i0, &i1, &o1);
    }
    d9_worker_end();
    meter_thread_end();
    atomic_store(&g_hog_stop, true);
    pthread_join(hog, NULL);
    return NULL;
}

/* ---- timer: a span waits for its task's timer between two polls */
#define TIMER_SPAN "planted_timer"
typedef struct span_measured {
    uint64_t poll_lo, poll_hi, queued_lo, queued_hi, wait_lo, wait_hi;
} span_measured;
static span_measured g_span;

static void *timer_worker(void *arg) {
    (void)arg;
    d9_worker_begin("planted", S_COUNT);
    for (int i = 0; i < ROUNDS; i++) {
        uint64_t task = 600 + (uint64_t)i;
        d9_poll_begin(task, D9_HERE);
        uint64_t b_lo = mono_ns();
        d9_span_begin(D9_SPAN_NAME(TIMER_SPAN), (uint64_t)i);
        uint64_t b_hi = mono_ns();
        uint64_t e_lo = mono_ns();
        d9_poll_end();
        uint64_t e_hi = mono_ns();
        tt_sleep_ns(PLANT_NS); /* the loop waits for the task's timer */
        uint64_t w_lo = mono_ns();
        d9_wake(task);
        uint64_t w_hi = mono_ns();
        uint64_t p_lo = mono_ns();
        d9_poll_begin(task, D9_HERE);
        uint64_t p_hi = mono_ns();
        uint64_t x_lo = mono_ns();
        d9_span_end(D9_SPAN_NAME(TIMER_SPAN), (uint64_t)i);
        uint64_t x_hi = mono_ns();
        d9_poll_end();
        /* in polls: begin .. first poll's end, second poll's start .. end */
        g_span.poll_lo += (e_lo - b_hi) + (x_lo - p_hi);
        g_span.poll_hi += (e_hi - b_lo) + (x_hi - p_lo);
        g_span.wait_lo += w_lo - e_hi; /* first poll's end .. wake */
        g_span.wait_hi += w_hi - e_lo;
        g_span.queued_lo += p_lo - w_hi; /* wake .. second poll's start */
        g_span.queued_hi += p_hi - w_lo;
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

/* 5 % of what was measured, or 100 us per round, whichever is larger. */
static uint64_t slack(uint64_t measured_ns) {
    uint64_t pct = measured_ns / 20, abs = (uint64_t)ROUNDS * SLACK_PER_ROUND_NS;
    return pct > abs ? pct : abs;
}

/* part in [lo - slack(lo), hi + slack(hi)], printed */
static bool within(const char *what, uint64_t part, uint64_t lo, uint64_t hi) {
    uint64_t s_lo = slack(lo), floor = lo > s_lo ? lo - s_lo : 0, ceil = hi + slack(hi);
    bool ok = part >= floor && part <= ceil;
    printf("  %-22s %9.3f ms, measured %9.3f .. %9.3f ms%s\n", what, (double)part / 1e6, (double)lo / 1e6,
           (double)hi / 1e6, ok ? "" : "  <- OUT OF BOUNDS");
    return ok;
}

static void check_on_cpu(int s, const d9a_location_report *l) {
    CHECK(within("on_cpu", l->parts.ns[D9M_PART_ON_CPU], g_m[s].cpu_in, g_m[s].cpu_out));
}

/* A blocking call's cause: the planted part holds the call's blocked time. */
static void check_blocked(int s, const d9a_location_report *l, d9m_part planted) {
    const measured *m = &g_m[s];
    char what[64];
    snprintf(what, sizeof what, "%s (%d clean rounds)", d9m_part_names[planted], m->clean);
    CHECK(within(what, l->parts.ns[planted], m->planted_lo, m->off_out));
}

/* A run-queue wait: runnable holds the poll's off-CPU time. */
static void check_runnable(int s, const d9a_location_report *l) {
    const measured *m = &g_m[s];
    char what[64];
    snprintf(what, sizeof what, "runnable (%d clean rounds)", m->clean);
    CHECK(within(what, l->parts.ns[D9M_PART_RUNNABLE], m->planted_lo, m->off_out));
    if (s == S_HOG) {
        printf("  schedstat run_delay    %9.3f ms\n", (double)m->run_delay / 1e6);
        CHECK(l->parts.ns[D9M_PART_RUNNABLE] > 0); /* the hog ran inside every poll */
    }
}

static const d9a_span_report *find_span(const d9a_report *r, const char *name) {
    for (size_t i = 0; i < r->nspans; i++)
        if (!strcmp(r->spans[i].name, name)) return &r->spans[i];
    return NULL;
}

static void check_timer_span(const d9a_report *r, bool complete) {
    const d9a_span_report *sp = find_span(r, TIMER_SPAN);
    CHECK(sp != NULL);
    if (!sp) return;
    printf("timer  %2" PRIu64 " spans, %8.3f ms\n", sp->count, (double)sp->elapsed.total / 1e6);
    CHECK_EQ_U64(sp->count, ROUNDS);
    CHECK_EQ_U64(sp->unended, 0);
    CHECK_EQ_U64(sp->poll_ns + sp->queued_ns + sp->wait_ns + sp->unknown_ns, sp->elapsed.total);
    CHECK(within("span poll", sp->poll_ns, g_span.poll_lo, g_span.poll_hi));
    CHECK(within("span queued", sp->queued_ns, g_span.queued_lo, g_span.queued_hi));
    CHECK(within("span wait (the timer)", sp->wait_ns, g_span.wait_lo, g_span.wait_hi));
    if (complete) CHECK_EQ_U64(sp->unknown_ns, 0);
    CHECK_EQ_U64(d9m_parts_total(&sp->poll_parts), sp->poll_ns);
}

/* The lock span's poll part by cause against its location's (the same polls, the wait inside
 * the span): the same lock time, nothing unknown. */
static void check_lock_span(const d9a_report *r, const d9a_location_report *l, bool complete) {
    const d9a_span_report *sp = find_span(r, LOCK_SPAN);
    CHECK(sp != NULL);
    if (!sp || !l) return;
    printf("lock span %2" PRIu64 " spans, %8.3f ms in polls: lock %.3f ms\n", sp->count, (double)sp->poll_ns / 1e6,
           (double)sp->poll_parts.ns[D9M_PART_LOCK] / 1e6);
    CHECK_EQ_U64(sp->count, ROUNDS);
    CHECK_EQ_U64(sp->poll_ns, sp->elapsed.total);
    CHECK_EQ_U64(d9m_parts_total(&sp->poll_parts), sp->poll_ns);
    CHECK_EQ_U64(sp->poll_parts.ns[D9M_PART_LOCK], l->parts.ns[D9M_PART_LOCK]);
    if (complete) CHECK_EQ_U64(sp->poll_parts.ns[D9M_PART_UNKNOWN], 0);
}

/* The first CPU this process may run on: the hog and its worker share it. */
static int first_allowed_cpu(void) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set)) return c;
    return 0;
}

int main(void) {
    CHECK(pipe(g_pipe) == 0);
    sem_init(&g_held, 0, 0);
    sem_init(&g_got, 0, 0);
    sem_init(&g_reading, 0, 0);
    sem_init(&g_hog_ready, 0, 0);
    g_hog_cpu = first_allowed_cpu();
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
    run_pair(hog_worker, NULL);
    run_pair(timer_worker, NULL);
    d9_stop();

    tt_trace t;
    CHECK(tt_load(d9_run_dir(), &t) == 0);
    const char *off = tt_meta(&t, "source.off_cpu");
    const char *stacks = tt_meta(&t, "source.switch_stacks");
    printf("source.off_cpu = %s\nsource.switch_stacks = %s\ndropped: %" PRIu64 "\n", off, stacks, t.lost);
    int refused = atomic_load(&g_task_clock_errno);
    if (refused) printf("thread CPU time: CLOCK_THREAD_CPUTIME_ID (perf's task clock refused: %s)\n", strerror(refused));
    symbolize_run();
    d9a_analysis *a;
    const d9a_report *r = analyze_run(&a);
    CHECK(r != NULL);
    if (r) check_timer_span(r, t.lost == 0); /* from the trace's own marks: needs no perf */
    if (!tt_starts_with(off, "active")) {
        printf("SKIP: no switch records on this host (%s)\n", off);
    } else if (r) {
        bool causes = tt_starts_with(stacks, "active");
        for (int s = 0; s < S_COUNT; s++) {
            const d9a_location_report *l = find_loc(r, s);
            CHECK(l != NULL);
            if (!l) continue;
            print_parts(scenario_names[s], l);
            CHECK_EQ_U64(l->polls.count, ROUNDS);
            CHECK_EQ_U64(d9m_parts_total(&l->parts), l->polls.total);
            if (t.lost == 0) CHECK_EQ_U64(l->parts.ns[D9M_PART_UNKNOWN], 0);
            check_on_cpu(s, l);
            if (s == S_BURN || s == S_HOG) check_runnable(s, l);
            else if (causes) check_blocked(s, l, s == S_LOCK ? D9M_PART_LOCK : s == S_READ ? D9M_PART_IO : D9M_PART_SLEEP);
            if (s == S_LOCK) check_lock_span(r, l, t.lost == 0);
        }
        if (!causes) printf("SKIP causes: no context-switch stacks (%s)\n", stacks);
    }
    d9a_free(a);
    tt_free(&t);
    if (d9t_failed) printf("trace kept in %s\n", dir);
    else d9t_rm_rf(dir);
    free(dir);
    return d9t_summary("attribution_planted");
}
