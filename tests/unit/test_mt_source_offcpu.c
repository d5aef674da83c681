/* Off-CPU evidence inside polls:
 *  - a poll blocked in read() on a pipe that another thread writes 5 ms later shows, in the
 *    switch records, a voluntary switch-out and a switch-in 5 ms or more later, both inside
 *    the poll;
 *  - polls that wait for a mutex another thread holds for 3 ms carry context-switch samples
 *    (CpuSampleEvent source 1) whose kernel frames are the futex wait path (checked by name
 *    through /proc/kallsyms when it is readable); only when the host allows those samples
 *    (paranoid <= 1 or root), else the metadata must say why not.
 * The writer and the holder act only once the other thread sleeps in read() / on the mutex
 * (tt_wait_blocked_in), so every poll blocks however the machine schedules the threads; a
 * loaded machine only makes the off-CPU intervals longer. */
#include <sys/syscall.h>
#include <fcntl.h>
#include <semaphore.h>
#include <unistd.h>

#include "check.h"
#include "dial9/dial9.h"
#include "test_source_util.h"

#define READ_POLLS 10
#define BLOCK_NS (5u * 1000u * 1000u)
#define LOCK_POLLS 20
#define HOLD_NS (3u * 1000u * 1000u)

static int g_pipe[2];
static pid_t g_reader_tid, g_writer_tid;
static _Atomic pid_t g_locker_tid;
static pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t g_step_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_step_cond = PTHREAD_COND_INITIALIZER;
static int g_step;        /* the reader announces each poll; the writer answers 5 ms later */
static sem_t g_held, g_done; /* the holder has the mutex / the worker got it */
static uint64_t g_read_started[READ_POLLS];

static void *pipe_writer(void *arg) {
    (void)arg;
    g_writer_tid = gettid();
    for (int i = 0; i < READ_POLLS; i++) {
        pthread_mutex_lock(&g_step_lock);
        while (g_step <= i) pthread_cond_wait(&g_step_cond, &g_step_lock);
        pthread_mutex_unlock(&g_step_lock);
        CHECK(tt_wait_blocked_in(g_reader_tid, SYS_read, (uint64_t)g_pipe[0]));
        tt_sleep_ns(BLOCK_NS);
        char c = 'x';
        d9_wake(1000 + (uint64_t)i); /* records, so it is a registered thread, not a worker */
        if (write(g_pipe[1], &c, 1) != 1) perror("write");
    }
    return NULL;
}

static void *pipe_reader(void *arg) {
    (void)arg;
    g_reader_tid = gettid();
    d9_worker_begin("offcpu", 0);
    for (int i = 0; i < READ_POLLS; i++) {
        d9_poll_begin(1000 + (uint64_t)i, D9_HERE);
        g_read_started[i] = tt_now();
        pthread_mutex_lock(&g_step_lock);
        g_step = i + 1;
        pthread_cond_signal(&g_step_cond);
        pthread_mutex_unlock(&g_step_lock);
        char c;
        if (read(g_pipe[0], &c, 1) != 1) perror("read");
        d9_poll_end();
        tt_sleep_ns(2u * 1000u * 1000u);
    }
    d9_worker_end();
    return NULL;
}

static void *mutex_holder(void *arg) {
    (void)arg;
    for (int i = 0; i < LOCK_POLLS; i++) {
        pthread_mutex_lock(&g_mutex);
        sem_post(&g_held);
        while (!atomic_load(&g_locker_tid)) tt_sleep_ns(1000000);
        CHECK(tt_wait_blocked_in(atomic_load(&g_locker_tid), SYS_futex, (uint64_t)(uintptr_t)&g_mutex));
        tt_sleep_ns(HOLD_NS);
        pthread_mutex_unlock(&g_mutex);
        sem_wait(&g_done);
    }
    return NULL;
}

static void *mutex_worker(void *arg) {
    (void)arg;
    g_locker_tid = gettid();
    d9_worker_begin("offcpu", 1);
    for (int i = 0; i < LOCK_POLLS; i++) {
        sem_wait(&g_held); /* the lock is held until this thread waits for it, and 3 ms more */
        d9_poll_begin(2000 + (uint64_t)i, D9_HERE);
        pthread_mutex_lock(&g_mutex);
        pthread_mutex_unlock(&g_mutex);
        d9_poll_end();
        sem_post(&g_done);
    }
    d9_worker_end();
    return NULL;
}

/* ---------------------------------------------------------------- kernel symbols */

typedef struct ksym {
    uint64_t addr;
    char *name;
} ksym;
static ksym *g_ksyms;
static size_t g_nksyms;

static int by_addr(const void *a, const void *b) {
    uint64_t x = ((const ksym *)a)->addr, y = ((const ksym *)b)->addr;
    return (x > y) - (x < y);
}

static bool load_kallsyms(void) {
    FILE *f = fopen("/proc/kallsyms", "r");
    if (!f) return false;
    size_t cap = 0;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        unsigned long long a;
        char type, name[256];
        if (sscanf(line, "%llx %c %255s", &a, &type, name) != 3 || a == 0) continue;
        if (type != 't' && type != 'T') continue;
        ksym k = {a, strdup(name)};
        TT_PUSH(g_ksyms, g_nksyms, cap, k);
    }
    fclose(f);
    qsort(g_ksyms, g_nksyms, sizeof *g_ksyms, by_addr);
    return g_nksyms > 1000;
}

static const char *ksym_name(uint64_t a) {
    size_t lo = 0, hi = g_nksyms;
    if (!g_nksyms || a < g_ksyms[0].addr) return NULL;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (g_ksyms[mid].addr <= a) lo = mid;
        else hi = mid;
    }
    return g_ksyms[lo].name;
}

/* ---------------------------------------------------------------- checks */

static void check_pipe_reads(const tt_trace *t) {
    uint32_t w = tt_worker_of(t, g_reader_tid);
    CHECK(w != 255);
    int good = 0;
    for (size_t i = 0; i < t->npolls; i++) {
        const tt_poll *p = &t->polls[i];
        if (p->worker != w) continue;
        /* the longest voluntary off-CPU interval of the reader inside this poll */
        uint64_t best = tt_longest_voluntary_off_cpu(t, g_reader_tid, p->start, p->end, NULL);
        bool ok = best >= BLOCK_NS * 8 / 10; /* 5 ms at least; 8/10: the clocks of two sources */
        good += ok;
        printf("read poll %" PRIu64 ": %.2f ms long, off-CPU %.2f ms in the switch records%s\n", p->task,
               (double)(p->end - p->start) / 1e6, (double)best / 1e6, ok ? "" : "  <- unexpected");
    }
    CHECK_EQ_U64(good, READ_POLLS);
}

static void check_lock_waits(const tt_trace *t, bool have_kallsyms) {
    uint32_t w = tt_worker_of(t, g_locker_tid);
    CHECK(w != 255);
    int polls = 0, with_sample = 0, with_futex = 0, kernel_frames = 0;
    for (size_t i = 0; i < t->npolls; i++) {
        const tt_poll *p = &t->polls[i];
        if (p->worker != w) continue;
        polls++;
        bool sample = false, futex = false;
        for (size_t j = 0; j < t->nsamples; j++) {
            const tt_sample *s = &t->samples[j];
            if (s->source != 1 || s->tid != (uint32_t)g_locker_tid || s->ts < p->start || s->ts > p->end) continue;
            sample = true;
            CHECK_EQ_U64(s->worker, w);
            for (uint32_t k = 0; k < s->n; k++) {
                if (s->frames[k] < 0xffff800000000000ull) continue;
                kernel_frames++;
                const char *name = have_kallsyms ? ksym_name(s->frames[k]) : NULL;
                if (name && strstr(name, "futex")) futex = true;
            }
        }
        with_sample += sample;
        with_futex += futex;
        if (!sample) {
            int outs = 0;
            for (size_t j = 0; j < t->nswitches; j++)
                if (t->switches[j].tid == (uint32_t)g_locker_tid && t->switches[j].out &&
                    t->switches[j].ts >= p->start && t->switches[j].ts <= p->end) outs++;
            printf("lock poll %" PRIu64 ": %.2f ms, no context-switch sample, %d switch-outs\n", p->task,
                   (double)(p->end - p->start) / 1e6, outs);
        }
    }
    printf("lock polls: %d, with a context-switch sample: %d, with a futex kernel frame: %d\n", polls,
           with_sample, with_futex);
    CHECK_EQ_U64(polls, LOCK_POLLS);
    CHECK_EQ_U64(with_sample, LOCK_POLLS);
    CHECK(kernel_frames > 0);
    if (have_kallsyms) CHECK_EQ_U64(with_futex, LOCK_POLLS);
    else printf("kernel symbols unreadable: futex frames not checked by name\n");
    /* context-switch samples are kept for workers only: none for the writer, which records
     * (wakes) but is no worker, though it blocks on every round */
    size_t writer_samples = 0, writer_switches = 0;
    for (size_t j = 0; j < t->nsamples; j++)
        writer_samples += t->samples[j].source == 1 && t->samples[j].tid == (uint32_t)g_writer_tid;
    for (size_t j = 0; j < t->nswitches; j++) writer_switches += t->switches[j].tid == (uint32_t)g_writer_tid;
    printf("writer (registered, not a worker): %zu switch records, %zu context-switch samples\n",
           writer_switches, writer_samples);
    CHECK(writer_switches > 0);
    CHECK_EQ_U64(writer_samples, 0);
}

int main(void) {
    CHECK(pipe(g_pipe) == 0);
    sem_init(&g_held, 0, 0);
    sem_init(&g_done, 0, 0);
    char *dir = d9t_mkdtemp("offcpu");
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    cfg.overhead_budget_pct = 0; /* every record: the cost governor is test_mt_source_governor's */
    CHECK(cfg.schedule_profile); /* on by default */
    cfg.switch_stacks_per_sec = 1000000; /* every stack: pacing is not what this test checks */
    CHECK(d9_start(&cfg) == 0);

    pthread_t r, wr, h, m;
    pthread_create(&wr, NULL, pipe_writer, NULL);
    pthread_create(&r, NULL, pipe_reader, NULL);
    pthread_join(r, NULL);
    pthread_join(wr, NULL);
    pthread_create(&h, NULL, mutex_holder, NULL);
    pthread_create(&m, NULL, mutex_worker, NULL);
    pthread_join(m, NULL);
    pthread_join(h, NULL);
    d9_stop();

    tt_trace t;
    CHECK(tt_load(d9_run_dir(), &t) == 0);
    const char *off = tt_meta(&t, "source.off_cpu");
    const char *stacks = tt_meta(&t, "source.switch_stacks");
    printf("source.off_cpu = %s\nsource.switch_stacks = %s\n", off, stacks);
    if (tt_starts_with(off, "inactive: perf refused")) {
        printf("SKIP: perf refused on this host\n");
    } else {
        CHECK(tt_starts_with(off, "active"));
        CHECK(t.nswitches > 0);
        check_pipe_reads(&t);
        if (tt_starts_with(stacks, "active")) {
            check_lock_waits(&t, load_kallsyms());
        } else {
            CHECK(tt_starts_with(stacks, "inactive: "));
            CHECK(strstr(stacks, "paranoid") != NULL || strstr(stacks, "yields no samples") != NULL);
            printf("SKIP lock-contention stacks: %s\n", stacks);
        }
    }
    printf("dropped: %" PRIu64 "\n", t.lost);
    tt_free(&t);
    d9t_rm_rf(dir);
    free(dir);
    return d9t_summary("source_offcpu");
}
