/* Memory mode with a rule (docs/flight-recorder.md): a program runs thousands of polls, one of
 * them long at a random round; with DIAL9_MODE=memory and DIAL9_TRIGGERS=poll_ms>400 exactly
 * one dump is written, holding that poll and the rounds around it, its manifest naming the rule
 * and the window; nothing else reaches the disk (the trace directory stays empty). */
#include <stdint.h>
#include <time.h>

#include "check.h"
#include "dial9/dial9.h"
#include "flight_test_util.h"

#define ROUNDS 6000

static int g_long_round;

static int record(void *arg) {
    ft_env(arg);
    setenv("DIAL9_MODE", "memory", 1);
    setenv("DIAL9_TRIGGERS", "poll_ms>400", 1);
    setenv("DIAL9_FLIGHT_SEGMENT_MS", "50", 1);
    setenv("DIAL9_DUMP_LOOKBACK_SECS", "2", 1);
    setenv("DIAL9_DUMP_LOOKFORWARD_SECS", "1", 1);
    if (!ft_start_from_env()) return 3;
    d9_worker_begin("flight-test", 0);
    for (int i = 0; i < ROUNDS; i++) {
        d9_poll_begin((uint64_t)i + 1, D9_HERE);
        if (i == g_long_round) { /* a sleep is never shorter than asked: > 400 ms for sure */
            struct timespec ts = {0, 600 * 1000 * 1000};
            while (nanosleep(&ts, &ts) != 0) {
            }
        }
        d9_poll_end();
        if (i % 500 == 0) d9_flush(); /* drained at known points: no round is dropped */
    }
    d9_worker_end();
    d9_stop();
    return 0;
}

typedef struct found {
    uint64_t polls;            /* PollStartEvents */
    uint64_t long_start;       /* ts of the long round's poll (0: not seen) */
    uint64_t long_ns;          /* and how long it lasted */
    uint64_t open_start, open_task;
    bool before, after;        /* the rounds just before and after it */
} found;

static void on_event(const d9_event *ev, void *ctx) {
    found *f = ctx;
    if (d9t_is(ev, "PollStartEvent")) {
        uint64_t task = d9t_field_u(ev, "task_id");
        f->polls++;
        f->open_start = ev->ts_ns;
        f->open_task = task;
        if (task == (uint64_t)g_long_round) f->before = true;     /* round g_long_round - 1 */
        if (task == (uint64_t)g_long_round + 2) f->after = true;  /* round g_long_round + 1 */
    } else if (d9t_is(ev, "PollEndEvent") && f->open_task == (uint64_t)g_long_round + 1) {
        f->long_start = f->open_start;
        f->long_ns = ev->ts_ns - f->open_start;
        f->open_task = 0;
    }
}

int main(void) {
    char *base = d9t_mkdtemp("flight-rule");
    srand((unsigned)time(NULL) ^ (unsigned)getpid());
    g_long_round = 1000 + rand() % (ROUNDS - 2000);
    printf("long poll at round %d of %d\n", g_long_round, ROUNDS);
    CHECK_EQ_U64(ft_run_child(record, base), 0);

    char path[512], names[16][256];
    /* nothing on disk but the dump: no run directory, no file in the trace directory */
    snprintf(path, sizeof path, "%s/traces", base);
    int in_traces = ft_entries(path, names, 16);
    CHECK_EQ_U64(in_traces, 0);
    for (int i = 0; i < in_traces && i < 16; i++) printf("  unexpected in traces: %s\n", names[i]);

    int dumps = 0;
    char dir[800];
    char *m = ft_first_dump(base, &dumps, dir, sizeof dir);
    CHECK_EQ_U64(dumps, 1);
    if (dumps >= 1) {
        CHECK(m != NULL);
        if (m) {
            CHECK(strstr(m, "\"kind\": \"rule\"") != NULL);
            CHECK(strstr(m, "\"rule\": \"poll_ms>400\"") != NULL);
            CHECK(strstr(m, "\"mode\": \"memory\"") != NULL);
            CHECK(strstr(m, "\"lookback_ms\": 2000") != NULL);
            CHECK(strstr(m, "\"lookforward_ms\": 1000") != NULL);
            CHECK(strstr(m, "\"merged_triggers\": 0") != NULL);
            free(m);
        }
        found f = {0};
        CHECK_EQ_U64(d9t_decode_run(dir, on_event, &f), 0); /* every segment decodes alone */
        CHECK(f.long_start != 0);
        CHECK(f.long_ns >= 600ull * 1000 * 1000);
        CHECK(f.before);
        CHECK(f.after);
        printf("dump %s: %llu polls, the long one %.1f ms\n", dir, (unsigned long long)f.polls, f.long_ns / 1e6);
    }
    if (d9t_failed == 0 && !getenv("FT_KEEP")) d9t_rm_rf(base);
    else printf("kept %s\n", base);
    free(base);
    return d9t_summary("test_mt_flight_rule_dump");
}
