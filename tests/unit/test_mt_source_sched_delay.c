/* Scheduling delay: two workers share CPU 0, each parking 2 ms and then polling for 300 µs.
 * Alone they leave the CPU idle most of the time, so their unparks show almost no run-queue
 * wait (sched_wait_ns). With a CPU hog (three spinning threads) pinned to the same CPU, a woken
 * worker often has to wait for a hog's time slice: unparks show multi-ms delays, and the switch
 * records show workers preempted inside their polls (every 8th poll is a long one, 20 ms: a
 * 300 µs poll usually ends within its time slice even beside the hogs, so whether one of them
 * is preempted is chance, while 20 ms of spinning beside three runnable threads of the same
 * nice on the same CPU cannot end without a preemption). Workers and hog run at nice -10 where we
 * may (root), so other load on the machine weighs little against either phase. Needs schedstat
 * (skips without it). */
#include <sys/resource.h>

#include "check.h"
#include "dial9/dial9.h"
#include "test_source_util.h"

#define ROUNDS 300 /* park/poll rounds per worker and phase: a count, not a duration, so that a
                   * starved phase on a loaded machine still has its unparks */
#define PARK_NS (2u * 1000u * 1000u)
#define POLL_NS (300u * 1000u)
#define LONG_POLL_NS (20u * 1000u * 1000u)
#define LONG_POLL_EVERY 8
#define HOGS 3
#define NICE (-10)

static _Atomic int g_stop;
static _Atomic int g_long_polls; /* in the phase with the hog */
static pid_t g_worker_tids[2];

static void spin_for(uint64_t ns) {
    uint64_t end = tt_now() + ns;
    while (tt_now() < end)
        TT_BURN_REGISTERS(1000);
}

static void *worker(void *arg) {
    uint32_t idx = (uint32_t)(uintptr_t)arg;
    tt_pin_to_cpu(0);
    setpriority(PRIO_PROCESS, 0, NICE); /* fails quietly when not allowed */
    g_worker_tids[idx] = gettid();
    d9_worker_begin("sched", idx);
    uint64_t task = (uint64_t)idx << 32;
    for (int round = 0; round < ROUNDS; round++) {
        d9_park();
        tt_sleep_ns(PARK_NS);
        d9_unpark();
        d9_poll_begin(++task, D9_HERE);
        spin_for(atomic_load(&g_long_polls) && task % LONG_POLL_EVERY == 0 ? LONG_POLL_NS : POLL_NS);
        d9_poll_end();
    }
    d9_worker_end();
    return NULL;
}

static void *hog(void *arg) {
    (void)arg;
    tt_pin_to_cpu(0);
    setpriority(PRIO_PROCESS, 0, NICE);
    while (!atomic_load(&g_stop)) spin_for(1000u * 1000u);
    return NULL;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

typedef struct phase_result {
    size_t unparks, over_1ms;
    uint64_t p50, p90, max;
    size_t preempted_in_polls;
    bool schedstat;
} phase_result;

static phase_result run_phase(bool with_hog) {
    phase_result res = {0};
    char *dir = d9t_mkdtemp("sched");
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    cfg.overhead_budget_pct = 0; /* every record: the cost governor is test_mt_source_governor's */
    CHECK(d9_start(&cfg) == 0);
    atomic_store(&g_stop, 0);
    atomic_store(&g_long_polls, with_hog);
    pthread_t w[2], h[HOGS];
    if (with_hog)
        for (int i = 0; i < HOGS; i++) pthread_create(&h[i], NULL, hog, NULL);
    for (uintptr_t i = 0; i < 2; i++) pthread_create(&w[i], NULL, worker, (void *)i);
    for (int i = 0; i < 2; i++) pthread_join(w[i], NULL);
    atomic_store(&g_stop, 1); /* the hogs */
    if (with_hog)
        for (int i = 0; i < HOGS; i++) pthread_join(h[i], NULL);
    d9_stop();

    tt_trace t;
    CHECK(tt_load(d9_run_dir(), &t) == 0);
    res.schedstat = tt_starts_with(tt_meta(&t, "source.schedstat"), "active");
    uint64_t *waits = malloc((t.nunparks + 1) * sizeof *waits);
    for (size_t i = 0; i < t.nunparks; i++) {
        waits[res.unparks++] = t.unparks[i].sched_wait;
        if (t.unparks[i].sched_wait >= 1000000) res.over_1ms++;
    }
    qsort(waits, res.unparks, sizeof *waits, cmp_u64);
    if (res.unparks) {
        res.p50 = waits[res.unparks / 2];
        res.p90 = waits[res.unparks * 9 / 10];
        res.max = waits[res.unparks - 1];
    }
    free(waits);
    /* preempted switch-outs of the workers inside their polls */
    for (size_t i = 0; i < t.nswitches; i++) {
        const tt_switch *s = &t.switches[i];
        if (!s->out || !s->preempted) continue;
        for (uint32_t w2 = 0; w2 < 256; w2++) {
            if (!t.worker_tid[w2] || t.worker_tid[w2] != s->tid) continue;
            if (tt_poll_at(&t, w2, s->ts, 0)) res.preempted_in_polls++;
        }
    }
    printf("%s: %zu unparks, sched_wait p50 %.3f ms, p90 %.3f ms, max %.3f ms, %zu >= 1 ms; "
           "%zu preempted switch-outs inside polls\n",
           with_hog ? "with a CPU hog" : "alone", res.unparks, (double)res.p50 / 1e6,
           (double)res.p90 / 1e6, (double)res.max / 1e6, res.over_1ms, res.preempted_in_polls);
    tt_free(&t);
    d9t_rm_rf(dir);
    free(dir);
    return res;
}

int main(void) {
    /* The quiet case needs a quiet CPU: other tests may run in parallel (ctest -j), so take the
     * quietest of up to three attempts, and say so rather than fail if none was quiet. */
    phase_result alone = run_phase(false);
    for (int attempt = 1; attempt < 3 && alone.over_1ms * 10 >= alone.unparks; attempt++) {
        printf("(the machine was busy: measuring alone again)\n");
        phase_result again = run_phase(false);
        if (again.over_1ms * alone.unparks < alone.over_1ms * again.unparks) alone = again;
    }
    phase_result loaded = run_phase(true);
    if (!alone.schedstat) {
        printf("SKIP: schedstat unavailable here\n");
        return d9t_summary("source_sched_delay");
    }
    CHECK(alone.unparks >= 2 * ROUNDS && loaded.unparks >= 2 * ROUNDS);
    /* with the hog: multi-ms delays, on a good share of unparks */
    CHECK(loaded.max >= 2000000);
    CHECK(loaded.over_1ms * 100 >= loaded.unparks * 15);
    CHECK(loaded.preempted_in_polls > 0);
    /* Alone, the CPU is mostly idle and a wake-up runs at once: fewer than 1 in 10 unparks wait
     * 1 ms (so p90 < 1 ms). Where every attempt saw more, the machine was busy: say so, and skip
     * the quiet-case check rather than fail. (The bound is the same on both sides: a skip at
     * "more than 10 %" with a check of p90 < 1 ms failed at exactly 60 of 600, soak run 41.) */
    if (alone.over_1ms * 10 >= alone.unparks) {
        printf("SKIP quiet-case checks: CPU 0 was busy in every attempt (%zu of %zu unparks >= 1 ms)\n",
               alone.over_1ms, alone.unparks);
        return d9t_summary("source_sched_delay");
    }
    /* ... and the hog makes long waits more frequent. Twice as frequent at least: "alone" may be
     * up to 10 % busy with the rest of a parallel suite (4x failed 2 of 24 soak runs on a
     * machine at load 20), while a hog sharing the worker's CPU gives 15 % and more. */
    CHECK(loaded.over_1ms * alone.unparks >= 2 * alone.over_1ms * loaded.unparks);
    return d9t_summary("source_sched_delay");
}
