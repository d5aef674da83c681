/* A rule fires while the segment holding its event is still open (docs/flight-recorder.md):
 * memory mode with segments of an hour, a poll longer than the rule's threshold among ordinary
 * ones, and no d9_flush: the dump must appear while the program still records. The collector
 * checks the rules as it merges and the flight thread then asks it to seal; the old path, which
 * matched rules only in sealed segments, waited for the hour (or for d9_stop). The wait for the
 * manifest is bounded (30 s) only to fail rather than hang; the pass condition is that it
 * appears at all before d9_stop. The time from the event to the dump's request (the manifest's
 * requested_after_ms) is printed as a figure, not asserted. */
#include <stdint.h>
#include <time.h>

#include "check.h"
#include "dial9/dial9.h"
#include "flight_test_util.h"

#define ROUNDS 2000
#define LONG_ROUND 1000


static int record(void *arg) {
    const char *base = arg;
    ft_memory_rule_env(base, "poll_ms>100");
    if (!ft_start_from_env()) return 3;
    d9_worker_begin("flight-test", 0);
    for (int i = 0; i < ROUNDS; i++) {
        d9_poll_begin((uint64_t)i + 1, D9_HERE);
        if (i == LONG_ROUND) ft_sleep_ms(150); /* never shorter than asked: > 100 ms for sure */
        d9_poll_end();
    }
    /* still recording, the segment still open: the dump must come now */
    char manifest[1024];
    bool seen = ft_wait_manifest(base, manifest, sizeof manifest);
    d9_worker_end();
    d9_stop();
    if (!seen) fprintf(stderr, "no dump within 30 s while the segment was open\n");
    return seen ? 0 : 4;
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
    char *base = d9t_mkdtemp("flight-open-segment");
    CHECK_EQ_U64(ft_run_child(record, base), 0);

    int dumps = 0;
    char dir[800];
    char *m = ft_first_dump(base, &dumps, dir, sizeof dir);
    CHECK_EQ_U64(dumps, 1);
    if (dumps >= 1) {
        CHECK(m != NULL);
        const char *after = m ? strstr(m, "\"requested_after_ms\": ") : NULL;
        CHECK(m && strstr(m, "\"rule\": \"poll_ms>100\"") != NULL);
        CHECK(after != NULL);
        if (after) printf("event -> dump requested: %.3f ms\n", strtod(after + strlen("\"requested_after_ms\": "), NULL));
        const char *matched = m ? strstr(m, "\"matched_after_ms\": ") : NULL; /* the collector's part of it */
        if (matched) printf("event -> matched by the collector: %.3f ms\n", strtod(matched + strlen("\"matched_after_ms\": "), NULL));
        const char *drain = m ? strstr(m, "\"drain\": \"") : NULL; /* woken by the poll's end, or periodic */
        if (drain) {
            drain += strlen("\"drain\": \"");
            printf("matched in a %.*s drain\n", (int)strcspn(drain, "\""), drain);
        }
        free(m);
        uint64_t long_poll = 0;
        CHECK_EQ_U64(d9t_decode_run(dir, on_event, &long_poll), 0);
        CHECK(long_poll >= 150ull * 1000 * 1000); /* the dump holds the poll that fired */
    }
    if (d9t_failed == 0 && !getenv("FT_KEEP")) d9t_rm_rf(base);
    else printf("kept %s\n", base);
    free(base);
    return d9t_summary("test_mt_flight_rule_open_segment");
}
