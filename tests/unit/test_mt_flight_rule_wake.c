/* A poll_ms rule's poll end wakes the collector (docs/flight-recorder.md, "Where the latency
 * goes"): memory mode, hour-long segments, and DIAL9_FLUSH_MS at its most (60 s), so that no
 * periodic drain comes while the program runs. A poll longer than the threshold among ordinary
 * ones must still give its dump while the program records: its end asked for a drain, the
 * collector matched the rule in that drain (the manifest's trigger.drain is "woken"), and the
 * flight thread's request to seal woke the collector too. The old collector slept its 60 s,
 * so nothing was matched before the wait below gave up. That wait (30 s) only bounds a failure;
 * nothing here depends on how long a wake takes. */
#include <stdint.h>
#include <time.h>

#include "check.h"
#include "core/flight_rule_wake.h"
#include "dial9/dial9.h"
#include "flight_test_util.h"

#define ROUNDS 2000
#define LONG_ROUND 1000


static int record(void *arg) {
    const char *base = arg;
    ft_memory_rule_env(base, "poll_ms>100");
    setenv("DIAL9_FLUSH_MS", "60000", 1); /* no periodic drain during the test */
    if (!ft_start_from_env()) return 3;
    uint64_t wakes_before = d9_rule_wake_count();
    d9_worker_begin("flight-test", 0);
    for (int i = 0; i < ROUNDS; i++) {
        d9_poll_begin((uint64_t)i + 1, D9_HERE);
        if (i == LONG_ROUND) ft_sleep_ms(150); /* never shorter than asked: > 100 ms for sure */
        d9_poll_end();
    }
    return ft_rule_wake_end(base, wakes_before, "poll-end", "the long poll's end sent no wake");
}

static void on_event(const d9_event *ev, void *ctx) {
    uint64_t *long_poll = ctx;
    static uint64_t start, task;
    if (d9t_is(ev, "PollStartEvent")) {
        start = ev->ts_ns;
        task = d9t_field_u(ev, "task_id");
    } else if (d9t_is(ev, "PollEndEvent") && task == LONG_ROUND + 1) {
        *long_poll = ev->ts_ns - start;
    }
}

int main(void) {
    char *base = d9t_mkdtemp("flight-rule-wake");
    CHECK_EQ_U64(ft_run_child(record, base), 0);

    int dumps = 0;
    char dir[800];
    char *m = ft_first_dump(base, &dumps, dir, sizeof dir);
    CHECK_EQ_U64(dumps, 1);
    if (dumps >= 1) {
        CHECK(m != NULL);
        CHECK(m && strstr(m, "\"rule\": \"poll_ms>100\"") != NULL);
        CHECK(m && strstr(m, "\"drain\": \"woken\"") != NULL); /* matched in the drain the end asked for */
        const char *after = m ? strstr(m, "\"requested_after_ms\": ") : NULL;
        if (after) printf("event -> dump requested: %.3f ms\n", strtod(after + strlen("\"requested_after_ms\": "), NULL));
        const char *matched = m ? strstr(m, "\"matched_after_ms\": ") : NULL;
        if (matched) printf("event -> matched by the collector: %.3f ms\n", strtod(matched + strlen("\"matched_after_ms\": "), NULL));
        free(m);
        uint64_t long_poll = 0;
        CHECK_EQ_U64(d9t_decode_run(dir, on_event, &long_poll), 0);
        CHECK(long_poll >= 150ull * 1000 * 1000); /* the dump holds the poll that fired */
    }
    if (d9t_failed == 0 && !getenv("FT_KEEP")) d9t_rm_rf(base);
    else printf("kept %s\n", base);
    free(base);
    return d9t_summary("test_mt_flight_rule_wake");
}
