/* Context-switch stacks are unwound where the diagnosis is, and only there
 * (core/collector_switch_stack.h): a worker, in each of ROUNDS rounds, parks and blocks in
 * read() in blocked_while_parked, then polls and blocks in read() in blocked_in_poll (another
 * thread writes only once the worker sleeps in that read, 2 ms later for the poll, so every
 * read blocks and every poll lasts over 1 ms however the machine schedules the threads).
 *   - every poll has a context-switch sample inside it whose stack names blocked_in_poll;
 *   - every parked read has a sample, and those samples carry their kernel frames alone (no
 *     user frame: nobody unwound them). Before, they named blocked_while_parked.
 * The worker flushes the recorder after its park (d9_flush returns once a drain that read its
 * ring after the park is written), so the drain that reads the parked read's sample sees the
 * park: which of the worker's samples lie in a poll is then known at every drain, whatever
 * the collector's timing (the rule's conservative case, a sample later than the records a
 * drain could see, cannot arise for them). Counts of rounds, no duration is judged. */
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"
#include "dial9/dial9.h"
#include "test_source_util.h"

#define ROUNDS 12
#define KERNEL_ADDR 0xffff800000000000ull

static int g_poll_pipe[2], g_park_pipe[2];
static _Atomic pid_t g_worker_tid;
static _Atomic int g_step; /* 2 i + 1: round i's parked read is next; 2 i + 2: its poll's read */
static uint64_t g_parked_from[ROUNDS], g_parked_to[ROUNDS]; /* after the flush .. before the unpark */

/* external, so the symbol table names them (tt_function_range) */
void blocked_while_parked(void);
void blocked_in_poll(void);

TT_NOINLINE void blocked_while_parked(void) {
    char c;
    if (read(g_park_pipe[0], &c, 1) != 1) perror("read");
    __asm__ volatile("" ::: "memory"); /* a frame of its own: the read is no tail call */
}

TT_NOINLINE void blocked_in_poll(void) {
    char c;
    if (read(g_poll_pipe[0], &c, 1) != 1) perror("read");
    __asm__ volatile("" ::: "memory");
}

static void wait_step(int step) {
    while (atomic_load(&g_step) < step) tt_sleep_ns(200000);
}

static void *writer(void *arg) {
    (void)arg;
    for (int i = 0; i < ROUNDS; i++) {
        char c = 'x';
        wait_step(2 * i + 1);
        CHECK(tt_wait_blocked_in(atomic_load(&g_worker_tid), SYS_read, (uint64_t)g_park_pipe[0]));
        if (write(g_park_pipe[1], &c, 1) != 1) perror("write");
        wait_step(2 * i + 2);
        CHECK(tt_wait_blocked_in(atomic_load(&g_worker_tid), SYS_read, (uint64_t)g_poll_pipe[0]));
        tt_sleep_ns(2000000); /* the poll lasts over 1 ms: analyze's coverage counts it */
        if (write(g_poll_pipe[1], &c, 1) != 1) perror("write");
    }
    return NULL;
}

static void *worker(void *arg) {
    (void)arg;
    atomic_store(&g_worker_tid, gettid());
    d9_worker_begin("in_poll", 0);
    for (int i = 0; i < ROUNDS; i++) {
        d9_park();
        d9_flush();
        g_parked_from[i] = tt_now();
        atomic_store(&g_step, 2 * i + 1);
        blocked_while_parked();
        g_parked_to[i] = tt_now();
        d9_unpark();
        d9_poll_begin(100 + (uint64_t)i, D9_HERE);
        atomic_store(&g_step, 2 * i + 2);
        blocked_in_poll();
        d9_poll_end();
    }
    d9_worker_end();
    return NULL;
}

static bool user_frames(const tt_sample *s) {
    for (uint32_t k = 0; k < s->n; k++)
        if (s->frames[k] < KERNEL_ADDR) return true;
    return false;
}

static void check_stacks(const tt_trace *t) {
    uint32_t tid = (uint32_t)atomic_load(&g_worker_tid);
    tt_range in_poll = tt_function_range("blocked_in_poll", (const void *)blocked_in_poll);
    tt_range parked = tt_function_range("blocked_while_parked", (const void *)blocked_while_parked);
    CHECK(in_poll.hi > in_poll.lo && parked.hi > parked.lo);
    size_t polls = 0, named = 0;
    for (size_t i = 0; i < t->npolls; i++) {
        const tt_poll *p = &t->polls[i];
        if (p->task < 100 || p->task >= 100 + ROUNDS) continue;
        polls++;
        bool found = false;
        for (size_t j = 0; j < t->nsamples && !found; j++) {
            const tt_sample *s = &t->samples[j];
            found = s->source == 1 && s->tid == tid && s->ts >= p->start && s->ts <= p->end &&
                    tt_stack_has(s->frames, s->n, in_poll);
        }
        named += found;
        if (!found) printf("poll %" PRIu64 ": no context-switch sample naming blocked_in_poll\n", p->task);
    }
    size_t rounds_sampled = 0, parked_samples = 0, parked_with_user = 0, parked_named = 0;
    for (int r = 0; r < ROUNDS; r++) {
        bool any = false;
        for (size_t j = 0; j < t->nsamples; j++) {
            const tt_sample *s = &t->samples[j];
            if (s->source != 1 || s->tid != tid || s->ts < g_parked_from[r] || s->ts > g_parked_to[r]) continue;
            any = true;
            parked_samples++;
            parked_with_user += user_frames(s);
            parked_named += tt_stack_has(s->frames, s->n, parked);
        }
        rounds_sampled += any;
    }
    printf("polls %zu, with a stack naming blocked_in_poll %zu; parked reads sampled %zu of %d: %zu samples, "
           "%zu with user frames, %zu naming blocked_while_parked\n",
           polls, named, rounds_sampled, ROUNDS, parked_samples, parked_with_user, parked_named);
    CHECK_EQ_U64(polls, ROUNDS);
    CHECK_EQ_U64(named, ROUNDS);
    CHECK_EQ_U64(rounds_sampled, ROUNDS);
    CHECK_EQ_U64(parked_with_user, 0);
}

int main(void) {
    CHECK(pipe(g_poll_pipe) == 0 && pipe(g_park_pipe) == 0);
    char *dir = d9t_mkdtemp("stack_in_poll");
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    cfg.overhead_budget_pct = 0;         /* every switch record: the governor is not what this checks */
    cfg.switch_stacks_per_sec = 1000000; /* every stack: nor is the pacing */
    CHECK(d9_start(&cfg) == 0);
    pthread_t w, r;
    pthread_create(&r, NULL, writer, NULL);
    pthread_create(&w, NULL, worker, NULL);
    pthread_join(w, NULL);
    pthread_join(r, NULL);
    d9_stop();

    tt_trace t;
    CHECK(tt_load(d9_run_dir(), &t) == 0);
    const char *stacks = tt_meta(&t, "source.switch_stacks");
    printf("source.switch_stacks = %s\n", stacks);
    if (tt_starts_with(stacks, "active")) {
        check_stacks(&t);
    } else {
        CHECK(tt_starts_with(stacks, "inactive: "));
        printf("SKIP: no context-switch stacks on this host (%s)\n", stacks);
    }
    tt_free(&t);
    d9t_rm_rf(dir);
    free(dir);
    return d9t_summary("source_switch_stack_in_poll");
}
