/* A rule in disk mode (docs/flight-recorder.md), with the pipeline compressing sealed segments
 * (DIAL9_COMPRESS=gzip): the rule reads each segment through the file opened at its seal, and
 * the dump pins the file under the name it has then (.bin or .bin.gz) and holds the triggering
 * event. One marked round among thousands -> exactly one dump. (Whether the pipeline compresses
 * a segment before or after the flight thread reads it is their race: not forced here.) */
#include <stdint.h>
#include <time.h>

#include "check.h"
#include "dial9/dial9.h"
#include "flight_test_util.h"

#define ROUNDS 4000

static int g_mark_round;

static int record(void *arg) {
    ft_env(arg);
    setenv("DIAL9_TRIGGERS", "event:FlightMarkEvent", 1);
    setenv("DIAL9_DUMP_LOOKBACK_SECS", "0", 1);
    setenv("DIAL9_DUMP_LOOKFORWARD_SECS", "0", 1);
    setenv("DIAL9_COMPRESS", "gzip", 1);
    setenv("DIAL9_ROTATION_SECS", "1", 1);
    static const d9_field fields[] = {{"round", D9_U64}};
    const d9_event_type *mark = d9_event_type_define("FlightMarkEvent", fields, 1);
    d9_config cfg;
    if (!mark || d9_config_from_env(&cfg) != D9_OK || d9_start(&cfg) != D9_OK) return 3;
    d9_worker_begin("flight-test", 0);
    for (uint64_t i = 0; i < ROUNDS; i++) {
        d9_poll_begin(i + 1, D9_HERE);
        if (i == (uint64_t)g_mark_round) D9_EMIT(mark, {.u = i});
        d9_poll_end();
        if (i % 500 == 0) d9_flush(); /* several writes, so that the pipeline works meanwhile */
    }
    d9_worker_end();
    d9_stop();
    return 0;
}

static uint64_t g_marks, g_marked_round = UINT64_MAX;
static void on_event(const d9_event *ev, void *ctx) {
    (void)ctx;
    if (d9t_is(ev, "FlightMarkEvent")) {
        g_marks++;
        g_marked_round = d9t_field_u(ev, "round");
    }
}

int main(void) {
    char *base = d9t_mkdtemp("flight-disk-rule");
    srand((unsigned)time(NULL) ^ (unsigned)getpid());
    g_mark_round = 500 + rand() % (ROUNDS - 1000);
    CHECK_EQ_U64(ft_run_child(record, base), 0);
    int dumps = 0;
    char dir[800], file[5000];
    char *m = ft_first_dump(base, &dumps, dir, sizeof dir);
    CHECK_EQ_U64(dumps, 1);
    if (dumps >= 1) {
        CHECK(m && strstr(m, "\"rule\": \"event:FlightMarkEvent\"") && strstr(m, "\"mode\": \"disk\""));
        free(m);
        char seg_names[16][256];
        int n = ft_entries(dir, seg_names, 16);
        for (int i = 0; i < n && i < 16; i++) {
            if (strncmp(seg_names[i], "trace.", 6) != 0) continue;
            snprintf(file, sizeof file, "%s/%s", dir, seg_names[i]);
            CHECK_EQ_U64(d9t_decode_file(file, on_event, NULL), D9_DEC_END);
        }
        CHECK_EQ_U64(g_marks, 1);
        CHECK_EQ_U64(g_marked_round, (uint64_t)g_mark_round);
    }
    if (d9t_failed == 0) d9t_rm_rf(base);
    else printf("kept %s\n", base);
    free(base);
    return d9t_summary("test_mt_flight_disk_rule");
}
