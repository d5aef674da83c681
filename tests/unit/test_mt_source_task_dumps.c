/* Task dumps are sampled over idle time: a task that stays suspended for 50 ms nearly always
 * gets a TaskDumpEvent whose stack contains the function that suspended it (and whose time is
 * inside the poll that suspended it), while tasks suspended for a few microseconds rarely do.
 * Statistical, with bounds loose enough never to flake: P(dump) is 1 - exp(-50/10) = 99.3%
 * for the long task and about 0.1% for the short ones. Also: disabled by configuration, none. */
#include "check.h"
#include "dial9/dial9.h"
#include "sources/task_dump.h"
#include "test_source_util.h"

#define ROUNDS 40
#define SHORTS 50
#define LONG_TASK 7
#define IDLE_NS (50u * 1000u * 1000u)

static volatile uint64_t g_sink; /* one thread writes it */

TT_NOINLINE static void wait_for_reply(uint64_t task) {
    d9_task_suspend(task); /* "registers its continuation" and returns to the loop */
    g_sink++;
}

TT_NOINLINE static void wait_for_timer(uint64_t task) {
    d9_task_suspend(task);
    g_sink++;
}

static void spin_ns(uint64_t ns) {
    uint64_t end = tt_now() + ns;
    while (tt_now() < end) g_sink++;
}

static void *event_loop(void *arg) {
    (void)arg;
    d9_worker_begin("dumps", 0);
    for (int round = 0; round <= ROUNDS; round++) {
        /* the long task resumes (after its 50 ms wait) and suspends again */
        d9_poll_begin(LONG_TASK, D9_HERE);
        if (round < ROUNDS) wait_for_reply(LONG_TASK);
        d9_poll_end();
        /* short tasks suspend and are resumed a few µs later */
        for (uint64_t j = 0; j < SHORTS; j++) {
            uint64_t task = 1000 + (uint64_t)round * SHORTS + j;
            d9_poll_begin(task, D9_HERE);
            wait_for_timer(task);
            d9_poll_end();
            spin_ns(5000);
            d9_poll_begin(task, D9_HERE);
            d9_poll_end();
        }
        if (round < ROUNDS) {
            d9_park();
            tt_sleep_ns(IDLE_NS);
            d9_unpark();
        }
    }
    d9_worker_end();
    return NULL;
}

static void run(bool enabled) {
    char *dir = d9t_mkdtemp("dumps");
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    cfg.task_dumps = enabled;
    CHECK(d9_start(&cfg) == 0);
    d9_task_dump_counters before, after;
    d9_task_dump_counters_get(&before);
    pthread_t th;
    pthread_create(&th, NULL, event_loop, NULL);
    pthread_join(th, NULL);
    d9_task_dump_counters_get(&after);
    d9_stop();

    tt_trace t;
    CHECK(tt_load(d9_run_dir(), &t) == 0);
    const char *note = tt_meta(&t, "source.task_dumps");
    printf("source.task_dumps = %s\n", note);
    if (!enabled) {
        CHECK(tt_starts_with(note, "inactive: disabled"));
        CHECK_EQ_U64(t.ndumps, 0);
        CHECK_EQ_U64(after.suspends - before.suspends, 0);
        tt_free(&t);
        d9t_rm_rf(dir);
        free(dir);
        return;
    }
    CHECK(tt_starts_with(note, "active"));
    tt_range reply = tt_function_range("wait_for_reply", (const void *)wait_for_reply);
    tt_range timer = tt_function_range("wait_for_timer", (const void *)wait_for_timer);
    tt_range loop = tt_function_range("event_loop", (const void *)event_loop);
    size_t long_dumps = 0, long_named = 0, long_in_poll = 0, short_dumps = 0, short_named = 0, loop_seen = 0;
    for (size_t i = 0; i < t.ndumps; i++) {
        const tt_dump *d = &t.dumps[i];
        if (d->task == LONG_TASK) {
            long_dumps++;
            /* the leaf, or the next frame when the d9_task_suspend wrapper was not inlined (-O0) */
            long_named += tt_stack_has(d->frames, d->n < 2 ? d->n : 2, reply);
            for (size_t p = 0; p < t.npolls; p++)
                if (t.polls[p].task == LONG_TASK && d->ts >= t.polls[p].start && d->ts <= t.polls[p].end)
                    long_in_poll++;
        } else if (d->task >= 1000) {
            short_dumps++;
            short_named += tt_stack_has(d->frames, d->n < 2 ? d->n : 2, timer);
        }
        loop_seen += tt_stack_has(d->frames, d->n, loop);
    }
    uint64_t suspends = after.suspends - before.suspends;
    printf("suspends %" PRIu64 ", captured %" PRIu64 ", emitted %" PRIu64 ", dropped as resumed %" PRIu64
           ", unknown %" PRIu64 "\n",
           suspends, after.captured - before.captured, after.emitted - before.emitted,
           after.resumed - before.resumed, after.unknown - before.unknown);
    printf("long task: %zu dumps of %d suspensions (%zu name wait_for_reply, %zu inside its poll); "
           "short tasks: %zu dumps of %d suspensions\n",
           long_dumps, ROUNDS, long_named, long_in_poll, short_dumps, ROUNDS * SHORTS);
    CHECK_EQ_U64(suspends, ROUNDS + (ROUNDS + 1) * SHORTS);
    CHECK(long_dumps >= ROUNDS * 3 / 4 && long_dumps <= ROUNDS);
    CHECK_EQ_U64(long_named, long_dumps);          /* names the suspending function */
    CHECK_EQ_U64(long_in_poll, long_dumps);        /* stamped when it suspended */
    CHECK_EQ_U64(short_named, short_dumps);
    CHECK(short_dumps * 50 <= (size_t)ROUNDS * SHORTS); /* <= 2 %; ~0.1 % expected */
    CHECK_EQ_U64(loop_seen, t.ndumps);             /* the walk goes up through the caller */
    CHECK_EQ_U64(after.unknown - before.unknown, 0);
    tt_free(&t);
    d9t_rm_rf(dir);
    free(dir);
}

int main(void) {
    run(true);
    run(false);
    return d9t_summary("source_task_dumps");
}
