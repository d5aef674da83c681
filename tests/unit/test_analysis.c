/* The analyses of `dial9 analyze` on hand-built traces with known answers: a poll of exactly
 * 12 ms, a kernel scheduling delay of exactly 3 ms, a task that migrates exactly 4 times, a
 * wake-to-poll delay of exactly 7 ms, dropped events, samples and symbols in other streams
 * than the polls they fall into, --from/--to, SchedSwitch off-CPU time, idle workers beside
 * queued work, task leaks, a missing data source, polls split across files, and the check
 * rules on top. */
#include "check.h"
#include "test_rng.h"
#include "test_analysis_builder.h"

#include "analysis/rules.h"

#define T0 (5000 * MS) /* traces start at 5 s of CLOCK_MONOTONIC */

/* Kernel and user addresses of one off-CPU stack, leaf first: socket() blocked in the kernel
 * while growing the fd table, called from the application's handler. */
static const uint64_t offcpu_stack[] = {
    0xffffffff81a28b97ull, /* __schedule */
    0xffffffff81a290c6ull, /* schedule */
    0xffffffff811297f2ull, /* synchronize_rcu */
    0xffffffff81337192ull, /* expand_fdtable */
    0x7f0000001000ull,     /* socket (libc) */
    0x401000ull,           /* app_handle_request, inlined into app_serve */
    0x402000ull,           /* app_main */
};

/* The main scenario. Streams (in file order):
 *   1: worker 0 (tid 100): park/unpark (3 ms kernel delay), the 12 ms poll of task 7, and
 *      polls of task 9 at 10, 30, 50 ms
 *   2: worker 1 (tid 101): polls of task 9 at 20 and 40 ms: 9 runs 0,1,0,1,0 = 4 migrations
 *   3: a sampler thread: the wake of task 9 7 ms before its poll at 50 ms, an off-CPU sample
 *      inside the 12 ms poll, two CPU samples, drops
 *   4: symbols (written at the end, as dial9 does) */
static void build_main(tb *t) {
    tb_stream(t);
    const char *meta[] = {"service", "unit-test", "source.cpu_profile", "inactive: perf not allowed", NULL};
    tb_metadata(t, T0, meta);
    uint32_t loc_a = tb_string(t, "app.c:10");
    uint32_t loc_b = tb_string(t, "worker.c:20");
    tb_park(t, T0 + 1 * MS, 0, 1000 * US, 100);
    tb_unpark(t, T0 + 5 * MS, 0, 1000 * US, 3 * MS, 100); /* exactly 3 ms runnable, not running */
    tb_poll(t, T0 + 10 * MS, 100 * US, 0, 0, 9, loc_b);
    tb_poll(t, T0 + 30 * MS, 100 * US, 0, 0, 9, loc_b);
    tb_poll(t, T0 + 50 * MS, 100 * US, 0, 0, 9, loc_b);
    tb_poll(t, T0 + 60 * MS, 12 * MS, 0, 2, 7, loc_a); /* exactly 12 ms */
    tb_park(t, T0 + 80 * MS, 0, 9000 * US, 100);      /* 9 ms CPU in 75 ms busy: cpu/wall 0.12 */
    tb_unpark(t, T0 + 90 * MS, 0, 9000 * US, 0, 100);

    tb_stream(t);
    loc_b = tb_string(t, "worker.c:20");
    tb_poll(t, T0 + 20 * MS, 100 * US, 1, 0, 9, loc_b);
    tb_poll(t, T0 + 40 * MS, 100 * US, 1, 0, 9, loc_b);

    tb_stream(t);
    tb_wake(t, T0 + 43 * MS, 0, 9, 255); /* task 9's next poll is at 50 ms: exactly 7 ms */
    uint32_t stack = tb_stack(t, offcpu_stack, sizeof offcpu_stack / sizeof offcpu_stack[0]);
    uint64_t cpu_stack_addrs[] = {0x401000ull, 0x402000ull};
    uint32_t cpu_stack = tb_stack(t, cpu_stack_addrs, 2);
    tb_sample(t, T0 + 61 * MS, 0, 100, 1, stack);     /* inside the 12 ms poll */
    tb_sample(t, T0 + 65 * MS, 0, 100, 0, cpu_stack); /* inside, on CPU again */
    tb_sample(t, T0 + 85 * MS, 0, 100, 0, cpu_stack); /* while parked */
    uint32_t full = tb_string(t, "buffer_full"), werr = tb_string(t, "write_error");
    tb_drops(t, T0 + 70 * MS, 5, full, 100, 0);
    tb_drops(t, T0 + 71 * MS, 2, werr, 0, 255);

    tb_stream(t);
    tb_symbol(t, 0xffffffff81a28b97ull, 0, "__schedule", 0, "", 0);
    tb_symbol(t, 0xffffffff81a290c6ull, 0, "schedule", 0, "", 0);
    tb_symbol(t, 0xffffffff811297f2ull, 0, "synchronize_rcu", 0, "", 0);
    tb_symbol(t, 0xffffffff81337192ull, 0, "expand_fdtable", 0, "", 0);
    tb_symbol(t, 0x7f0000001000ull, 0, "socket", 0, "", 0);
    tb_symbol(t, 0x401000ull, 0, "app_serve", 0, "/src/app/server.c", 40);
    tb_symbol(t, 0x401000ull, 0, "app_handle_request", 1, "/src/app/handler.c", 12);
    tb_symbol(t, 0x402000ull, 0, "app_main", 0, "/src/app/main.c", 3);
    tb_symbol(t, 0x401000ull, 0, "app_serve", 0, "/src/app/server.c", 40); /* repeated: ignored */
}

static void test_main_scenario(void) {
    tb t = {0};
    build_main(&t);
    d9a_options opt;
    d9a_options_init(&opt);
    d9a_analysis *a;
    const d9a_report *r = tb_analyze(&a, &t, &opt);
    CHECK(r != NULL);
    if (!r) goto out;

    /* summary */
    CHECK_EQ_U64(r->trace_first_ns, T0);
    CHECK_EQ_U64(r->duration_ns, 90 * MS);
    CHECK_EQ_U64(r->nworkers, 2);
    CHECK_EQ_U64(r->late_records, 0);
    CHECK_EQ_U64(r->unmatched_poll_starts, 0);
    CHECK_EQ_U64(r->unmatched_poll_ends, 0);
    CHECK_EQ_U64(r->counts.poll_starts, 6);
    CHECK(r->symbols_present);

    /* the 12 ms poll */
    CHECK_EQ_U64(r->polls.count, 6);
    CHECK_EQ_U64(r->polls.max, 12 * MS);
    CHECK_EQ_U64(r->polls_over_warn, 1);
    CHECK_EQ_U64(r->polls_over_crit, 0);
    CHECK(r->nlong_polls == 6);
    const d9a_long_poll *p = &r->long_polls[0];
    CHECK_EQ_U64(p->duration_ns, 12 * MS);
    CHECK_EQ_U64(p->start_ns, T0 + 60 * MS);
    CHECK_EQ_U64(p->worker, 0);
    CHECK_EQ_U64(p->task, 7);
    CHECK_EQ_U64(p->local_queue, 2);
    CHECK_STR(p->location, "app.c:10");
    CHECK_EQ_U64(p->offcpu_samples, 1);
    CHECK_EQ_U64(p->cpu_samples, 1);
    CHECK_EQ_U64(p->ngroups, 2);
    /* the off-CPU group first: it has time; off-CPU from 61 ms to the next sample at 65 ms */
    CHECK(p->ngroups >= 1 && p->groups[0].source == 1);
    if (p->ngroups >= 1 && p->groups[0].stack) {
        const d9a_stack_view *v = p->groups[0].stack;
        CHECK_EQ_U64(p->groups[0].est_ns, 4 * MS);
        CHECK_STR(v->function, "synchronize_rcu");
        CHECK_STR(v->app_frame, "app_handle_request");
        CHECK(!v->preempted);
        CHECK_EQ_U64(v->naddrs, 7);
        CHECK_EQ_U64(v->nframes, 8); /* 0x401000 expands into two frames */
        if (v->nframes == 8) {
            CHECK_STR(v->frames[5].symbol, "app_handle_request");
            CHECK(v->frames[5].inlined);
            CHECK_STR(v->frames[6].symbol, "app_serve");
            CHECK(!v->frames[6].inlined);
            CHECK_EQ_U64(v->frames[6].line, 40);
            CHECK(v->frames[0].kernel);
            CHECK(!v->frames[7].kernel);
        }
    }
    /* poll duration by location */
    CHECK(r->nlocations == 2);
    if (r->nlocations == 2) {
        CHECK_STR(r->locations[0].location, "app.c:10"); /* most total time first */
        CHECK_EQ_U64(r->locations[0].polls.count, 1);
        CHECK_EQ_U64(r->locations[0].polls.p99, 12 * MS);
        CHECK_STR(r->locations[1].location, "worker.c:20");
        CHECK_EQ_U64(r->locations[1].polls.count, 5);
        CHECK_EQ_U64(r->locations[1].polls.total, 500 * US);
    }

    /* kernel scheduling delay of exactly 3 ms */
    CHECK_EQ_U64(r->sched_wait.count, 2);
    CHECK_EQ_U64(r->sched_wait.max, 3 * MS);
    CHECK_EQ_U64(r->sched_over_warn, 1);
    CHECK_EQ_U64(r->sched_over_crit, 0);
    CHECK(r->nsched_worst >= 1 && r->sched_worst[0].wait_ns == 3 * MS);
    CHECK(r->nsched_worst >= 1 && r->sched_worst[0].worker == 0 && r->sched_worst[0].tid == 100);
    CHECK(r->nsched_worst >= 1 && r->sched_worst[0].ts == T0 + 5 * MS);

    /* wake to poll: exactly 7 ms */
    CHECK_EQ_U64(r->wakes, 1);
    CHECK_EQ_U64(r->wake_delay.count, 1);
    CHECK_EQ_U64(r->wake_delay.max, 7 * MS);
    CHECK_EQ_U64(r->wake_over_warn, 1);
    CHECK(r->nwake_worst == 1 && r->wake_worst[0].task == 9 && r->wake_worst[0].delay_ns == 7 * MS);
    CHECK(r->nwake_worst == 1 && r->wake_worst[0].worker == 0);

    /* task 9: workers 0,1,0,1,0 -> exactly 4 migrations, though each worker is its own stream */
    CHECK_EQ_U64(r->migrations, 4);
    CHECK_EQ_U64(r->tasks_migrated, 1);
    CHECK_EQ_U64(r->tasks_polled, 2);
    CHECK_EQ_U64(r->migration_polls, 4);
    CHECK(r->ntop_migrating == 1 && r->top_migrating[0].task == 9 && r->top_migrating[0].hops == 4);
    CHECK(r->ntop_migrating == 1 && r->top_migrating[0].polls == 5);

    /* drops */
    CHECK_EQ_U64(r->dropped, 7);
    CHECK_EQ_U64(r->ndrops, 2);
    for (size_t i = 0; i < r->ndrops; i++) {
        if (!strcmp(r->drops_by_reason[i].name, "buffer_full")) CHECK_EQ_U64(r->drops_by_reason[i].count, 5);
        else CHECK_EQ_U64(r->drops_by_reason[i].count, 2);
    }

    /* samples: classified and grouped */
    CHECK_EQ_U64(r->offcpu_total, 1);
    CHECK_EQ_U64(r->offcpu_in_poll, 1);
    CHECK_EQ_U64(r->cpu_total, 2);
    CHECK_EQ_U64(r->cpu_in_poll, 1);
    CHECK(r->nblocking_functions == 1);
    if (r->nblocking_functions == 1) {
        CHECK_STR(r->blocking_functions[0].function, "synchronize_rcu");
        CHECK_EQ_U64(r->blocking_functions[0].in_poll_ns, 4 * MS);
        CHECK_STR(r->blocking_functions[0].example_location, "app.c:10");
    }
    CHECK(r->ncpu_functions == 1 && !strcmp(r->cpu_functions[0].function, "app_handle_request"));
    CHECK(r->ncpu_functions == 1 && r->cpu_functions[0].samples == 2 && r->cpu_functions[0].parked == 1);

    /* workers */
    const d9a_worker_report *w0 = &r->workers[0];
    CHECK_EQ_U64(w0->id, 0);
    CHECK_EQ_U64(w0->tid, 100);
    CHECK_EQ_U64(w0->polls, 4);
    CHECK_EQ_U64(w0->poll_ns, 12 * MS + 300 * US);
    CHECK_EQ_U64(w0->parks, 2);
    CHECK_EQ_U64(w0->park_ns, 14 * MS);
    CHECK_EQ_U64(w0->busy_periods, 1);
    CHECK_EQ_U64(w0->busy_wall_ns, 75 * MS);
    CHECK_EQ_U64(w0->busy_cpu_ns, 8 * MS);
    CHECK(w0->cpu_ratio > 0.106 && w0->cpu_ratio < 0.107);
    CHECK_EQ_U64(w0->polls_with_queue, 1);

    /* sources: declared and observed */
    bool saw_cpu = false;
    for (size_t i = 0; i < r->nsources; i++)
        if (!strcmp(r->sources[i].name, "cpu_profile")) {
            saw_cpu = true;
            CHECK(r->sources[i].active); /* samples are in the trace */
            CHECK_STR(r->sources[i].declared, "inactive: perf not allowed");
        }
    CHECK(saw_cpu);

    /* red flags */
    const d9a_flag *f;
    CHECK((f = tb_flag(r, "long_poll")) && f->severity == D9A_WARNING);
    CHECK((f = tb_flag(r, "sched_delay")) && f->severity == D9A_WARNING);
    CHECK((f = tb_flag(r, "wake_delay")) && f->severity == D9A_WARNING);
    CHECK((f = tb_flag(r, "dropped_events")) && f->severity == D9A_CRITICAL); /* 7 of 25 events */
    CHECK((f = tb_flag(r, "blocking_in_poll")) && strstr(f->evidence, "synchronize_rcu") &&
          strstr(f->evidence, "app_handle_request"));
    CHECK(tb_flag(r, "missing_source") == NULL);
    CHECK(tb_flag(r, "out_of_order") == NULL);
    CHECK(r->nflags > 0 && r->flags[0].severity == D9A_CRITICAL); /* critical first */

    /* check rules on the same report */
    d9a_rule rules[] = {
        {.kind = D9A_RULE_MAX_POLL, .limit = 11 * MS},
        {.kind = D9A_RULE_MAX_POLL, .limit = 12 * MS},
        {.kind = D9A_RULE_MAX_SCHED, .limit = 2 * MS},
        {.kind = D9A_RULE_MAX_SCHED, .limit = 3 * MS},
        {.kind = D9A_RULE_MAX_WAKE, .limit = 6999999},
        {.kind = D9A_RULE_MAX_WAKE, .limit = 7 * MS},
        {.kind = D9A_RULE_MAX_DROPPED, .limit = 6},
        {.kind = D9A_RULE_MAX_DROPPED, .limit = 7},
        {.kind = D9A_RULE_MAX_BLOCKING, .limit = 0},
        {.kind = D9A_RULE_MIN_EVENTS, .limit = 1000},
        {.kind = D9A_RULE_REQUIRE_SOURCE, .source = "symbols"},
        {.kind = D9A_RULE_REQUIRE_SOURCE, .source = "sched_switch"},
        {.kind = D9A_RULE_FAIL_ON, .limit = D9A_CRITICAL},
        {.kind = D9A_RULE_MAX_LIVE_TASKS, .limit = 0},
    };
    enum { NR = sizeof rules / sizeof rules[0] };
    d9a_rule_result res[NR];
    size_t broken = d9a_check_rules(r, rules, NR, res);
    const bool want_ok[NR] = {false, true, false, true, false, true, false, true,
                              false, false, true, false, false, true};
    for (size_t i = 0; i < NR; i++) {
        if (res[i].ok != want_ok[i]) fprintf(stderr, "rule %zu: %s\n", i, res[i].reason);
        CHECK(res[i].ok == want_ok[i]);
    }
    CHECK_EQ_U64(broken, 8);
    CHECK(strstr(res[0].reason, "longest poll 12.000 ms > 11.000 ms") != NULL);
    CHECK(strstr(res[0].reason, "task 0x7") && strstr(res[0].reason, "app.c:10"));
    CHECK(strstr(res[6].reason, "buffer_full 5") != NULL);
    CHECK(strstr(res[11].reason, "sched_switch is missing") != NULL);
    CHECK(strstr(res[12].reason, "dropped_events") != NULL);
out:
    d9a_free(a);
    d9_buf_free(&t.b);
}

/* --from/--to: only what starts inside the window counts; relative and absolute forms agree. */
static void test_window(void) {
    tb t = {0};
    build_main(&t);
    d9a_options opt;
    d9a_options_init(&opt);
    CHECK(d9_time_arg_parse("55ms", &opt.from, NULL, 0) == 0);
    CHECK(d9_time_arg_parse("0.2s", &opt.to, NULL, 0) == 0);
    d9a_analysis *a;
    const d9a_report *r = tb_analyze(&a, &t, &opt);
    CHECK(r != NULL);
    if (r) {
        CHECK(r->windowed);
        CHECK_EQ_U64(r->start_ns, T0 + 55 * MS);
        CHECK_EQ_U64(r->polls.count, 1); /* only the 12 ms poll starts after 55 ms */
        CHECK_EQ_U64(r->polls.max, 12 * MS);
        CHECK_EQ_U64(r->wakes, 0);
        CHECK_EQ_U64(r->migrations, 0);
        CHECK_EQ_U64(r->sched_wait.count, 1); /* the unpark at 90 ms */
    }
    d9a_free(a);

    d9a_options_init(&opt);
    char abs_from[64];
    snprintf(abs_from, sizeof abs_from, "@%" PRIu64, (uint64_t)T0);
    CHECK(d9_time_arg_parse(abs_from, &opt.from, NULL, 0) == 0);
    CHECK(d9_time_arg_parse("55ms", &opt.to, NULL, 0) == 0);
    r = tb_analyze(&a, &t, &opt);
    CHECK(r != NULL);
    if (r) {
        CHECK_EQ_U64(r->polls.count, 5);
        CHECK_EQ_U64(r->polls.max, 100 * US);
        CHECK_EQ_U64(r->migrations, 4);
        CHECK_EQ_U64(r->nlong_polls, 5);
    }
    d9a_free(a);
    d9_buf_free(&t.b);
}

/* A reordering window too small for the trace: records come late, and the report says so. */
static void test_small_window(void) {
    tb t = {0};
    build_main(&t);
    d9a_options opt;
    d9a_options_init(&opt);
    opt.window_records = 2;
    d9a_analysis *a;
    const d9a_report *r = tb_analyze(&a, &t, &opt);
    CHECK(r != NULL);
    if (r) {
        CHECK(r->late_records > 0);
        CHECK(tb_flag(r, "out_of_order") != NULL);
        CHECK_EQ_U64(r->polls.count, 6); /* pairing does not depend on the window */
        CHECK_EQ_U64(r->polls.max, 12 * MS);
    }
    d9a_free(a);
    d9_buf_free(&t.b);
}

/* Preemption inside a poll from SchedSwitchEvent; an idle worker beside queued work. */
static void test_switch_and_idle(void) {
    tb t = {0};
    tb_stream_dial9_parks(&t); /* an old trace: "no schedstat" written as cpu_time_ns 0 */
    uint32_t loc = tb_string(&t, "busy.c:1");
    tb_park(&t, T0, 1, 0, 201);          /* worker 1 parked 0 .. 20 ms */
    tb_unpark(&t, T0 + 20 * MS, 1, 0, 0, 201);
    tb_poll(&t, T0 + 2 * MS, 5 * MS, 0, 3, 1, loc); /* worker 0: 3 queued while 1 is parked */
    tb_poll(&t, T0 + 19500 * US, 100 * US, 0, 4, 1, loc); /* queued, but 1 wakes in 0.5 ms */
    tb_switch(&t, T0 + 3 * MS, 200, 0, true, true);   /* preempted 3 .. 5 ms */
    tb_switch(&t, T0 + 5 * MS, 200, 0, false, false);
    tb_switch(&t, T0 + 6 * MS, 200, 0, true, false);  /* blocked 6 .. 9 ms: 1 ms in the poll */
    tb_switch(&t, T0 + 9 * MS, 200, 0, false, false);
    tb_queue(&t, T0 + 10 * MS, 5);       /* global queue while worker 1 parked */
    tb_queue(&t, T0 + 25 * MS, 5);       /* ... and after it woke */
    d9a_analysis *a;
    const d9a_report *r = tb_analyze(&a, &t, NULL);
    CHECK(r != NULL);
    if (r) {
        const d9a_worker_report *w0 = &r->workers[0];
        CHECK_EQ_U64(w0->offcpu_in_poll_ns, 3 * MS);
        CHECK_EQ_U64(w0->preempted_in_poll_ns, 2 * MS);
        CHECK(r->nlong_polls >= 1 && r->long_polls[0].offcpu_ns == 3 * MS &&
              r->long_polls[0].preempted_ns == 2 * MS);
        CHECK_EQ_U64(r->polls_with_queue, 2);
        CHECK_EQ_U64(r->polls_with_queue_while_parked, 1);
        CHECK(r->nqueued_examples == 1 && r->queued_examples[0].worker == 0 &&
              r->queued_examples[0].parked_worker == 1 && r->queued_examples[0].local_queue == 3);
        CHECK_EQ_U64(r->queue_samples_nonzero, 2);
        CHECK_EQ_U64(r->queue_samples_nonzero_while_parked, 1);
        CHECK(tb_flag(r, "cpu_contention") != NULL); /* 2 ms preempted of 5.1 ms in polls */
        CHECK(tb_flag(r, "missing_source") != NULL); /* no wakes, no schedstat */
        CHECK_EQ_U64(r->sched_wait.count, 0);      /* an unpark without schedstat: not a 0 delay */
    }
    d9a_free(a);
    d9_buf_free(&t.b);
}

/* Parks and unparks without a schedstat reading, as the recorder writes them (cpu_time_ns
 * and sched_wait_ns absent), beside read ones: the unread are neither zero delays nor ends
 * of a busy period; a read unpark's real 0 wait counts. */
static void test_unread_schedstat_absent(void) {
    tb t = {0};
    tb_stream(&t);
    tb_park(&t, T0, 0, 1 * MS, 100);                                 /* read */
    tb_unpark(&t, T0 + 1 * MS, 0, D9_ABSENT, D9_ABSENT, 100);        /* not read */
    tb_park(&t, T0 + 2 * MS, 0, D9_ABSENT, 100);                     /* not read */
    tb_unpark(&t, T0 + 3 * MS, 0, 2 * MS, 400 * US, 100);            /* read: 400 us waited */
    tb_park(&t, T0 + 7 * MS, 0, 4 * MS, 100);                        /* read: 2 ms CPU in 4 ms */
    tb_unpark(&t, T0 + 8 * MS, 0, 4 * MS, 0, 100);                   /* read: no wait at all */
    tb_park(&t, T0 + 9 * MS, 0, D9_ABSENT, 100);                     /* not read */
    tb_unpark(&t, T0 + 10 * MS, 0, D9_ABSENT, D9_ABSENT, 100);       /* not read */
    d9a_analysis *a;
    const d9a_report *r = tb_analyze(&a, &t, NULL);
    CHECK(r != NULL);
    if (r) {
        CHECK_EQ_U64(r->counts.unparks, 4);
        CHECK_EQ_U64(r->sched_wait.count, 2); /* 400 us and a real 0, not the unread ones */
        CHECK_EQ_U64(r->sched_wait.max, 400 * US);
        CHECK_EQ_U64(r->workers[0].busy_periods, 1); /* 3 .. 7 ms: the only one read at both ends */
        CHECK_EQ_U64(r->workers[0].busy_cpu_ns, 2 * MS);
        CHECK_EQ_U64(r->workers[0].busy_wall_ns, 4 * MS);
    }
    d9a_free(a);
    d9_buf_free(&t.b);
}

/* Parks and unparks as the recorder writes them now: a CPU time at every one (the thread's CPU
 * clock) and sched_wait_ns 0 where schedstat was not read, the source stated in metadata.
 * Active: the zero waits are unread, not zero delays, and CPU times alone do not make the
 * source seen; inactive: no wait is a measurement and the missing source is flagged. */
static void test_schedstat_stated_in_metadata(void) {
    for (int active = 0; active <= 1; active++) {
        tb t = {0};
        tb_stream_dial9_parks(&t);
        const char *kv[] = {"source.schedstat", active ? "active: read at most every 1000 us per thread"
                                                       : "inactive: disabled by configuration", NULL, NULL};
        tb_metadata(&t, T0, kv);
        tb_park(&t, T0, 0, 1 * MS, 100);
        tb_unpark(&t, T0 + 1 * MS, 0, 1 * MS + 10 * US, 0, 100);          /* not read */
        tb_park(&t, T0 + 2 * MS, 0, 2 * MS, 100);
        tb_unpark(&t, T0 + 3 * MS, 0, 2 * MS + 10 * US, active ? 400 * US : 0, 100);
        tb_park(&t, T0 + 7 * MS, 0, 4 * MS, 100);
        d9a_analysis *a;
        const d9a_report *r = tb_analyze(&a, &t, NULL);
        CHECK(r != NULL);
        if (r) {
            CHECK_EQ_U64(r->counts.unparks, 2);
            CHECK_EQ_U64(r->sched_wait.count, active ? 1 : 0); /* the 400 us read alone */
            CHECK_EQ_U64(r->sched_wait.max, active ? 400 * US : 0);
            CHECK_EQ_U64(r->workers[0].busy_periods, 2);          /* CPU times at every park */
            bool flagged = false; /* the missing schedstat, told from the missing wakes */
            for (size_t i = 0; i < r->nflags; i++)
                flagged |= !strcmp(r->flags[i].title, "no kernel scheduling delay on unpark events");
            CHECK(flagged == !active);
        }
        d9a_free(a);
        d9_buf_free(&t.b);
    }
}

/* Metadata rewritten during the run (the recorder writes changed metadata, and its sources'
 * states as they close): the report takes each key's last value, the sources section says a
 * source's last state, and the changed keys are listed with their first value. What the models
 * read from the metadata stays the first one's (the recording's configuration). */
static void test_metadata_changed_during_run(void) {
    tb t = {0};
    tb_stream(&t);
    const char *first[] = {"service", "meta", "source.cpu_profile", "active: perf", "source.schedstat",
                           "inactive: disabled by configuration", "runtime.io", "0", NULL};
    tb_metadata(&t, T0, first);
    uint32_t loc = tb_string(&t, "m.c:1");
    tb_poll(&t, T0 + 1 * MS, 100 * US, 0, 0, 5, loc);
    const char *later[] = {"service", "meta", "source.cpu_profile", "closed: EACCES after setuid", "runtime.io", "0,1",
                           "source.schedstat", "active: read at most every 1000 us per thread", "governor.note",
                           "1 in 4", NULL};
    tb_metadata(&t, T0 + 2 * MS, later);
    tb_poll(&t, T0 + 3 * MS, 100 * US, 1, 0, 6, loc);
    tb_unpark(&t, T0 + 4 * MS, 0, 1 * MS, 0, 100); /* a zero wait: unread while schedstat was off */
    d9a_analysis *a;
    const d9a_report *r = tb_analyze(&a, &t, NULL);
    CHECK(r != NULL);
    if (r) {
        CHECK_EQ_U64(r->nmetadata, 5); /* each key once, in the order it first came */
        const char *want[][2] = {{"service", "meta"},
                                 {"source.cpu_profile", "closed: EACCES after setuid"},
                                 {"source.schedstat", "active: read at most every 1000 us per thread"},
                                 {"runtime.io", "0,1"},
                                 {"governor.note", "1 in 4"}};
        for (size_t i = 0; i < 5 && i < r->nmetadata; i++) {
            CHECK_STR(r->metadata[i].key, want[i][0]);
            CHECK_STR(r->metadata[i].value, want[i][1]);
        }
        CHECK_EQ_U64(r->nmetadata_changed, 4);
        const char *changed[][3] = {{"source.cpu_profile", "active: perf", "closed: EACCES after setuid"},
                                    {"source.schedstat", "inactive: disabled by configuration",
                                     "active: read at most every 1000 us per thread"},
                                    {"runtime.io", "0", "0,1"},
                                    {"governor.note", NULL, "1 in 4"}};
        for (size_t i = 0; i < 4 && i < r->nmetadata_changed; i++) {
            const d9a_kv_change *m = &r->metadata_changed[i];
            CHECK_STR(m->key, changed[i][0]);
            if (changed[i][1]) CHECK(m->first && !strcmp(m->first, changed[i][1]));
            else CHECK(m->first == NULL);
            CHECK_STR(m->last, changed[i][2]);
        }
        const char *cpu_declared = NULL;
        for (size_t i = 0; i < r->nsources; i++)
            if (!strcmp(r->sources[i].name, "cpu_profile")) cpu_declared = r->sources[i].declared;
        CHECK(cpu_declared && !strcmp(cpu_declared, "closed: EACCES after setuid"));
        /* the schedstat source as configured at the start: off, so the missing delays are flagged */
        bool flagged = false;
        for (size_t i = 0; i < r->nflags; i++)
            flagged |= !strcmp(r->flags[i].title, "no kernel scheduling delay on unpark events");
        CHECK(flagged);
    }
    d9a_free(a);
    d9_buf_free(&t.b);
}

/* A wake that comes while the task's own poll runs leaves it runnable only from that poll's end:
 * the delay to its next poll is counted from there (as dial9 and the viewer do), not from the
 * wake (that would add the rest of the poll). */
static void test_wake_during_own_poll(void) {
    tb t = {0};
    tb_stream(&t);
    uint32_t loc = tb_string(&t, "self.c:1");
    tb_poll(&t, T0, 10 * MS, 0, 0, 5, loc);            /* task 5 runs 0 .. 10 ms */
    tb_wake(&t, T0 + 2 * MS, 5, 5, 0);                 /* woken (by itself) while it runs */
    tb_wake(&t, T0 + 12 * MS, 0, 5, 0);                /* a later wake finds it queued */
    tb_poll(&t, T0 + 15 * MS, 100 * US, 0, 0, 5, loc); /* runnable since 10 ms: 5 ms */
    tb_poll(&t, T0 + 20 * MS, 1 * MS, 0, 0, 6, loc);
    tb_wake(&t, T0 + 23 * MS, 0, 6, 0);                /* after its poll: from the wake, 7 ms */
    tb_poll(&t, T0 + 30 * MS, 100 * US, 0, 0, 6, loc);
    d9a_analysis *a;
    const d9a_report *r = tb_analyze(&a, &t, NULL);
    CHECK(r != NULL);
    if (r) {
        CHECK_EQ_U64(r->wake_delay.count, 2);
        CHECK_EQ_U64(r->wake_delay.max, 7 * MS);
        CHECK_EQ_U64(r->nwake_worst, 2);
        for (size_t i = 0; i < r->nwake_worst; i++) {
            const d9a_wake_delay *w = &r->wake_worst[i];
            if (w->task == 5) {
                CHECK_EQ_U64(w->delay_ns, 5 * MS);
                CHECK_EQ_U64(w->wake_ns, T0 + 10 * MS); /* runnable from the poll's end */
                CHECK_EQ_U64(w->wakes, 2);
            } else {
                CHECK_EQ_U64(w->task, 6);
                CHECK_EQ_U64(w->delay_ns, 7 * MS);
            }
        }
    }
    d9a_free(a);
    d9_buf_free(&t.b);
}

/* A context-switch sample a few us before its SchedSwitch switch-out: the sample's off-CPU
 * time is the switch interval, not "until the end of the poll". */
static void test_sample_matches_switch(void) {
    tb t = {0};
    tb_stream(&t);
    uint32_t loc = tb_string(&t, "io.c:3");
    uint32_t stack = tb_stack(&t, offcpu_stack, 3);
    tb_poll(&t, T0, 20 * MS, 0, 0, 1, loc);
    tb_sample(&t, T0 + 5 * MS - 5 * US, 0, 300, 1, stack);
    tb_switch(&t, T0 + 5 * MS, 300, 0, true, false);
    tb_switch(&t, T0 + 8 * MS, 300, 0, false, false);
    d9a_analysis *a;
    const d9a_report *r = tb_analyze(&a, &t, NULL);
    CHECK(r != NULL);
    if (r) {
        CHECK(r->nlong_polls == 1 && r->long_polls[0].ngroups == 1);
        if (r->nlong_polls == 1 && r->long_polls[0].ngroups == 1)
            CHECK_EQ_U64(r->long_polls[0].groups[0].est_ns, 3 * MS + 5 * US);
        CHECK_EQ_U64(r->long_polls[0].offcpu_ns, 3 * MS);
        CHECK_EQ_U64(r->blocked_in_poll_ns, 3 * MS + 5 * US);
        CHECK_EQ_U64(r->blocked_in_poll, 1);
    }
    d9a_free(a);
    d9_buf_free(&t.b);
}

/* 40 tasks spawned at one location and never terminated, 10 spawned and terminated. */
static void test_task_leak(void) {
    tb t = {0};
    tb_stream(&t);
    uint32_t leak = tb_string(&t, "leak.c:1"), ok = tb_string(&t, "ok.c:2");
    for (uint64_t i = 0; i < 40; i++) {
        tb_spawn(&t, T0 + i * 25 * MS, 1000 + i, leak);
        tb_poll(&t, T0 + i * 25 * MS + MS, 10 * US, 0, 0, 1000 + i, leak);
    }
    for (uint64_t i = 0; i < 10; i++) {
        tb_spawn(&t, T0 + i * 100 * MS + 5 * MS, 2000 + i, ok);
        tb_terminate(&t, T0 + i * 100 * MS + 7 * MS, 2000 + i);
    }
    tb_terminate(&t, T0 + 8 * MS, 99); /* spawned before the trace */
    d9a_analysis *a;
    const d9a_report *r = tb_analyze(&a, &t, NULL);
    CHECK(r != NULL);
    if (r) {
        CHECK_EQ_U64(r->spawned, 50);
        CHECK_EQ_U64(r->terminated, 11);
        CHECK_EQ_U64(r->terminated_unknown, 1);
        CHECK_EQ_U64(r->live_at_end, 40);
        CHECK(r->live_growth_per_s > 30 && r->live_growth_per_s < 50);
        CHECK(r->nlive_series > 1 && r->live_series[r->nlive_series - 1].live == 40);
        const d9a_flag *f = tb_flag(r, "task_leak");
        CHECK(f && strstr(f->evidence, "leak.c:1"));
        bool found = false;
        for (size_t i = 0; i < r->nlocations; i++)
            if (!strcmp(r->locations[i].location, "leak.c:1")) {
                found = true;
                CHECK_EQ_U64(r->locations[i].spawned, 40);
                CHECK_EQ_U64(r->locations[i].live, 40);
            } else if (!strcmp(r->locations[i].location, "ok.c:2")) {
                CHECK_EQ_U64(r->locations[i].terminated, 10);
                CHECK_EQ_U64(r->locations[i].live, 0);
            }
        CHECK(found);
    }
    d9a_free(a);
    d9_buf_free(&t.b);
}

/* A 60 ms poll and no samples at all: critical long poll, and the data source that would have
 * explained it is named. */
static void test_missing_source(void) {
    tb t = {0};
    tb_stream(&t);
    uint32_t loc = tb_string(&t, "slow.c:9");
    tb_poll(&t, T0, 60 * MS, 0, 0, 1, loc);
    d9a_analysis *a;
    const d9a_report *r = tb_analyze(&a, &t, NULL);
    CHECK(r != NULL);
    if (r) {
        const d9a_flag *f = tb_flag(r, "long_poll");
        CHECK(f && f->severity == D9A_CRITICAL);
        f = tb_flag(r, "missing_source");
        CHECK(f && strstr(f->hint, "DIAL9_CPU_PROFILE_ENABLED"));
        CHECK(tb_flag(r, "dropped_events") == NULL);
    }
    d9a_free(a);
    d9_buf_free(&t.b);
}

/* A poll that starts in one segment file and ends in the next; an empty analysis. */
static void test_files(void) {
    tb f1 = {0}, f2 = {0};
    tb_stream(&f1);
    uint32_t loc = tb_string(&f1, "split.c:1");
    tb_poll_start(&f1, T0, 0, 0, 5, loc);
    tb_stream(&f2);
    tb_poll_end(&f2, T0 + 15 * MS, 0);
    tb *files[] = {&f1, &f2};
    d9a_analysis *a;
    const d9a_report *r = tb_analyze_files(&a, files, 2, NULL);
    CHECK(r != NULL);
    if (r) {
        CHECK_EQ_U64(r->polls.count, 1);
        CHECK_EQ_U64(r->polls.max, 15 * MS);
        CHECK(r->nlong_polls == 1 && !strcmp(r->long_polls[0].location, "split.c:1"));
    }
    d9a_free(a);
    d9_buf_free(&f1.b);
    d9_buf_free(&f2.b);

    tb empty = {0};
    tb_stream(&empty);
    r = tb_analyze(&a, &empty, NULL);
    CHECK(r != NULL);
    if (r) {
        CHECK_EQ_U64(r->events, 0);
        CHECK_EQ_U64(r->duration_ns, 0);
        CHECK_EQ_U64(r->nflags, 0);
        CHECK_EQ_U64(r->nworkers, 0);
    }
    d9a_free(a);
    d9_buf_free(&empty.b);
}

static d9t_rng rng = {88172645463325252ull};
static uint64_t rnd(void) { return d9t_rng_next(&rng); }

/* Random events with extreme values (worker ids past the table, timestamps going backwards
 * and near 2^64, unmatched pairs), then byte flips of a real trace: the analysis must finish
 * without crashing or tripping the sanitizers, and its report must hold together. */
static void test_robustness(void) {
    for (int round = 0; round < 20; round++) {
        tb t = {0};
        tb_stream(&t);
        uint32_t loc = tb_string(&t, "r.c:1");
        uint64_t addrs[3] = {rnd(), rnd(), 0xffffffff81000000ull};
        uint32_t stack = tb_stack(&t, addrs, 3);
        uint64_t ts = round == 7 ? UINT64_MAX - 1000 * MS : T0;
        for (int i = 0; i < 3000; i++) {
            uint64_t w = rnd() % 8 == 0 ? rnd() % 5000 : rnd() % 4;
            ts += rnd() % (2 * MS);
            if (rnd() % 50 == 0) ts -= rnd() % (10 * MS);
            switch (rnd() % 12) {
            case 0: tb_poll_start(&t, ts, w, (uint8_t)rnd(), rnd() % 50, loc); break;
            case 1: tb_poll_end(&t, ts, w); break;
            case 2: tb_park(&t, ts, w, rnd() % 1000000, (uint32_t)(rnd() % 4)); break;
            case 3: tb_unpark(&t, ts, w, rnd() % 1000000, rnd() % (20 * MS), (uint32_t)(rnd() % 4)); break;
            case 4: tb_wake(&t, ts, rnd() % 50, rnd() % 50, (uint8_t)rnd()); break;
            case 5: tb_spawn(&t, ts, rnd() % 50, loc); break;
            case 6: tb_terminate(&t, ts, rnd() % 60); break;
            case 7: tb_sample(&t, ts, w, (uint32_t)(rnd() % 4), (uint8_t)(rnd() % 3), stack); break;
            case 8: tb_switch(&t, ts, (uint32_t)(rnd() % 4), w, rnd() % 2, rnd() % 2); break;
            case 9: tb_queue(&t, ts, (uint8_t)rnd()); break;
            case 10: tb_drops(&t, ts, rnd() % 5, loc, 0, w); break;
            default: tb_symbol(&t, addrs[rnd() % 3], rnd() % 3 ? 0 : rnd() % 4096, "f", rnd() % 3, "x.c", 1); break;
            }
        }
        d9a_options opt;
        d9a_options_init(&opt);
        opt.window_records = 2 + rnd() % 2000;
        opt.top_n = 1 + rnd() % 5;
        d9a_analysis *a;
        const d9a_report *r = tb_analyze(&a, &t, &opt);
        CHECK(r != NULL);
        if (r) {
            CHECK(r->nlong_polls <= opt.top_n);
            CHECK(r->polls.count == 0 || r->polls.max >= r->polls.p99);
            CHECK(r->offcpu_in_poll + r->offcpu_parked <= r->offcpu_total);
        }
        d9a_free(a);
        d9_buf_free(&t.b);
    }
    /* byte flips of the main scenario: decoding stops somewhere, the analysis still finishes */
    tb m = {0};
    build_main(&m);
    for (int round = 0; round < 200; round++) {
        unsigned char *copy = malloc(m.b.len);
        memcpy(copy, m.b.data, m.b.len);
        for (int k = 0; k < 3; k++) copy[rnd() % m.b.len] ^= (unsigned char)(1 + rnd() % 255);
        char err[256];
        d9_decoder *d = d9_dec_open_mem(copy, m.b.len, NULL, err, sizeof err);
        d9a_analysis *a = d9a_new(NULL);
        d9a_begin_file(a);
        d9_event ev;
        while (d9_dec_next(d, &ev) > 0)
            if (d9a_feed(a, &ev, d) != 0) break;
        CHECK(d9a_finish(a) != NULL);
        d9a_free(a);
        d9_dec_close(d);
        free(copy);
    }
    d9_buf_free(&m.b);
}

/* For tests/scripts/test_analyze.sh: write the hand-built traces as files. */
static int write_traces(const char *dir) {
    tb t = {0};
    build_main(&t);
    char path[4096];
    snprintf(path, sizeof path, "%s/main.bin", dir);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(t.b.data, 1, t.b.len, f) != t.b.len) return 1;
    fclose(f);
    d9_buf_free(&t.b);
    tb s = {0};
    tb_stream(&s);
    uint32_t loc = tb_string(&s, "slow.c:9");
    tb_poll(&s, T0, 60 * MS, 0, 0, 1, loc);
    tb_poll(&s, T0 + 70 * MS, 1 * MS, 0, 0, 1, loc);
    snprintf(path, sizeof path, "%s/slow.bin", dir);
    f = fopen(path, "wb");
    if (!f || fwrite(s.b.data, 1, s.b.len, f) != s.b.len) return 1;
    fclose(f);
    d9_buf_free(&s.b);
    return 0;
}

/* lock_contention: off-CPU samples inside polls whose stack waits in a lock function,
 * grouped by the application function that took the lock (two functions here), with the
 * waits' total and worst estimated time; a poll blocked in read() is no lock contention. */
static void test_lock_contention(void) {
    tb t = {0};
    tb_stream(&t);
    uint32_t loc = tb_string(&t, "app.c:1");
    uint64_t lock_a[] = {0xffffffff81a28b97ull, 0x7f0000002000ull, 0x7f0000003000ull, 0x403000ull, 0x402000ull};
    uint64_t lock_b[] = {0xffffffff81a28b97ull, 0x7f0000002000ull, 0x7f0000003000ull, 0x404000ull, 0x402000ull};
    uint64_t reading[] = {0xffffffff81a28b97ull, 0x7f0000004000ull, 0x405000ull, 0x402000ull};
    uint32_t sa = tb_stack(&t, lock_a, 5), sb = tb_stack(&t, lock_b, 5), sr = tb_stack(&t, reading, 4);
    tb_poll(&t, T0 + 10 * MS, 4 * MS, 0, 0, 1, loc);
    tb_sample(&t, T0 + 11 * MS, 0, 100, 1, sa); /* off-CPU 11..14 ms: 3 ms */
    tb_poll(&t, T0 + 20 * MS, 2 * MS, 0, 0, 2, loc);
    tb_sample(&t, T0 + 21 * MS, 0, 100, 1, sa); /* 1 ms */
    tb_poll(&t, T0 + 30 * MS, 6 * MS, 0, 0, 3, loc);
    tb_sample(&t, T0 + 31 * MS, 0, 100, 1, sb); /* 5 ms */
    tb_poll(&t, T0 + 40 * MS, 9 * MS, 0, 0, 4, loc);
    tb_sample(&t, T0 + 41 * MS, 0, 100, 1, sr); /* 8 ms in read(): not a lock */
    tb_sample(&t, T0 + 60 * MS, 0, 100, 1, sa); /* outside any poll: not counted */
    tb_symbol(&t, 0xffffffff81a28b97ull, 0, "__schedule", 0, "", 0);
    tb_symbol(&t, 0x7f0000002000ull, 0, "__lll_lock_wait", 0, "", 0);
    tb_symbol(&t, 0x7f0000003000ull, 0, "pthread_mutex_lock", 0, "", 0);
    tb_symbol(&t, 0x7f0000004000ull, 0, "read", 0, "", 0);
    tb_symbol(&t, 0x402000ull, 0, "app_main", 0, "/src/app/main.c", 3);
    tb_symbol(&t, 0x403000ull, 0, "update_cache", 0, "/src/app/cache.c", 7);
    tb_symbol(&t, 0x404000ull, 0, "log_line", 0, "/src/app/log.c", 9);
    tb_symbol(&t, 0x405000ull, 0, "read_config", 0, "/src/app/config.c", 5);
    d9a_options opt;
    d9a_options_init(&opt);
    d9a_analysis *a;
    const d9a_report *r = tb_analyze(&a, &t, &opt);
    CHECK(r != NULL);
    if (!r) goto out;
    CHECK_EQ_U64(r->nlock_waits, 2);
    if (r->nlock_waits == 2) {
        CHECK_STR(r->lock_waits[0].app_frame, "log_line"); /* 5 ms in one wait: the most time */
        CHECK_EQ_U64(r->lock_waits[0].samples, 1);
        CHECK_EQ_U64(r->lock_waits[0].total_ns, 5 * MS);
        CHECK_STR(r->lock_waits[1].app_frame, "update_cache");
        CHECK_EQ_U64(r->lock_waits[1].samples, 2);
        CHECK_EQ_U64(r->lock_waits[1].total_ns, 4 * MS);
        CHECK_EQ_U64(r->lock_waits[1].worst_ns, 3 * MS);
        CHECK_STR(r->lock_waits[1].lock_function, "pthread_mutex_lock"); /* the outermost lock frame */
        CHECK_STR(r->lock_waits[1].example_location, "app.c:1");
    }
    const d9a_flag *f = tb_flag(r, "lock_contention");
    CHECK(f && strstr(f->title, "3 waits") && strstr(f->evidence, "log_line in pthread_mutex_lock") &&
          strstr(f->evidence, "update_cache") && !strstr(f->evidence, "read_config"));
    CHECK(tb_flag(r, "blocking_in_poll") != NULL); /* the generic flag still counts all of them */
out:
    d9a_free(a);
    d9_buf_free(&t.b);
}

int main(void) {
    const char *dir = getenv("D9_ANALYSIS_WRITE_DIR");
    if (dir && *dir) return write_traces(dir);
    test_main_scenario();
    test_window();
    test_small_window();
    test_switch_and_idle();
    test_unread_schedstat_absent();
    test_schedstat_stated_in_metadata();
    test_metadata_changed_during_run();
    test_wake_during_own_poll();
    test_sample_matches_switch();
    test_task_leak();
    test_lock_contention();
    test_missing_source();
    test_files();
    test_robustness();
    return d9t_summary("test_analysis");
}
