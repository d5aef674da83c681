/* A dump ended by its give-up bound with nothing sealed says so (issue 36; docs/flight-recorder.md,
 * "Dumps"). Memory mode, hour-long segments, DIAL9_FLUSH_MS at its most and
 * DIAL9_DUMP_GIVE_UP_MS=0: the collector seals nothing unless asked, and the dump gives up at
 * its first look, before it asks: a stalled collector, by configuration rather than by timing.
 * The dump holds no segment, so it lacks its whole look-back; the old manifest gave the reason
 * "the recording started later", untrue: the window starts after the recording did (the dump
 * is asked for longer after the start than its look-back, a sleep that is never shorter). It
 * must say the window was not sealed. */
#include <stdint.h>

#include "check.h"
#include "dial9/dial9.h"
#include "flight_test_util.h"

#define LOOKBACK_MS 10
#define AFTER_START_MS 50 /* > LOOKBACK_MS */

static int record(void *arg) {
    const char *base = arg;
    ft_env(base);
    setenv("DIAL9_MODE", "memory", 1);
    setenv("DIAL9_FLIGHT_SEGMENT_MS", "3600000", 1);
    setenv("DIAL9_FLUSH_MS", "60000", 1);
    setenv("DIAL9_DUMP_GIVE_UP_MS", "0", 1);
    if (!ft_start_from_env()) return 3;
    d9_worker_begin("flight-test", 0);
    for (uint64_t task = 1; task <= 100; task++) {
        d9_poll_begin(task, D9_HERE);
        d9_poll_end();
    }
    ft_sleep_ms(AFTER_START_MS);
    if (d9_dump(LOOKBACK_MS, 0, "give-up test") != D9_OK) return 4;
    char manifest[1024];
    bool seen = ft_wait_manifest(base, manifest, sizeof manifest);
    if (!seen) fprintf(stderr, "no dump within 30 s\n");
    d9_worker_end();
    d9_stop();
    return seen ? 0 : 5;
}

int main(void) {
    char *base = d9t_mkdtemp("flight-give-up");
    CHECK_EQ_U64(ft_run_child(record, base), 0);

    int count = 0;
    char dir[800];
    char *m = ft_first_dump(base, &count, dir, sizeof dir);
    CHECK_EQ_U64(count, 1);
    CHECK(m != NULL);
    if (m) {
        printf("%s", m);
        CHECK(strstr(m, "\"segments\": 0,") != NULL); /* the bound fired before any seal */
        const char *lacks = strstr(m, "\"lacks\"");
        CHECK(lacks && strstr(lacks, "\"lookback_ms\": 10,") != NULL);
        CHECK(lacks && strstr(lacks, "\"lookback_why\": \"not sealed") != NULL);
        CHECK(strstr(m, "started later") == NULL); /* the old, untrue reason */
    }
    free(m);
    if (d9t_failed == 0 && !getenv("FT_KEEP")) d9t_rm_rf(base);
    else printf("kept %s\n", base);
    free(base);
    return d9t_summary("test_mt_flight_give_up");
}
