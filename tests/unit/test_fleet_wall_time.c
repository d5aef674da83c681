/* The one --from/--to grammar (src/fleet/wall_time.h): wall-clock values (now, now-15m,
 * YYYY-MM-DD[THH:MM[:SS]][Z]) choose S3 objects and are taken out of argv with an s3://
 * input; trace times (5s, @NS) are left for the command; -15m, which meant "before now" with
 * an s3:// input and "before the trace's end" with a local one, is refused with an s3://
 * input, with a message that names now-15m. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "common/time_arg.h"
#include "fleet/s3_fetch.h"
#include "fleet/wall_time.h"

static void wall_forms(void) {
    const time_t now = 1764979200; /* 2025-12-06T00:00:00Z */
    time_t t = 0;
    CHECK(d9_wall_time_parse("now", now, &t) == 0 && t == now);
    CHECK(d9_wall_time_parse("now-15m", now, &t) == 0 && t == now - 900);
    CHECK(d9_wall_time_parse("now-2h", now, &t) == 0 && t == now - 7200);
    CHECK(d9_wall_time_parse("now-1d", now, &t) == 0 && t == now - 86400);
    CHECK(d9_wall_time_parse("now-30s", now, &t) == 0 && t == now - 30);
    CHECK(d9_wall_time_parse("now-1.5h", now, &t) == 0 && t == now - 5400);
    CHECK(d9_wall_time_parse("2025-12-06", now, &t) == 0 && t == now);
    CHECK(d9_wall_time_parse("2025-12-06T01:02Z", now, &t) == 0 && t == now + 3720);
    CHECK(d9_wall_time_parse("2025-12-06T01:02:03", now, &t) == 0 && t == now + 3723);
    /* trace times and junk are not wall-clock times */
    const char *not_wall[] = {"-15m", "15m", "5s", "@123", "now-", "now-15", "now-15x", "now+5m", "now--5m",
                              "2025-13-01", "2025-12-06T25:00", "2025-12-06X", "yesterday", ""};
    for (size_t i = 0; i < sizeof not_wall / sizeof *not_wall; i++) {
        if (d9_wall_time_parse(not_wall[i], now, &t) == 0) fprintf(stderr, "  taken: '%s'\n", not_wall[i]);
        CHECK(d9_wall_time_parse(not_wall[i], now, &t) != 0);
    }
    /* every wall-clock form is refused by the trace-time grammar, and the reverse: one value,
     * one meaning */
    const char *wall[] = {"now", "now-15m", "2025-12-06", "2025-12-06T01:02Z"};
    for (size_t i = 0; i < sizeof wall / sizeof *wall; i++) {
        d9_time_arg a;
        CHECK(d9_time_arg_parse(wall[i], &a, NULL, 0) != 0);
    }
    d9_time_arg a;
    CHECK(d9_time_arg_parse("-15m", &a, NULL, 0) == 0 && a.base == D9_TIME_FROM_END);
    CHECK(d9_wall_time_is_old_spelling("-15m"));
    CHECK(d9_wall_time_is_old_spelling("-1d"));
    CHECK(!d9_wall_time_is_old_spelling("-500ms")); /* never a wall-clock spelling: a trace time */
    CHECK(!d9_wall_time_is_old_spelling("now-15m"));
    CHECK(!d9_wall_time_is_old_spelling("15m"));
}

/* d9_s3_take_selection_args keeps one process-wide selection: each case below is on its own
 * argv, and the last ones only add to it. */
static void selection_args(void) {
    char err[512];
    /* no s3:// input: nothing is taken */
    {
        char *argv[] = {"dial9", "analyze", "trace.bin", "--from", "now-15m", NULL};
        int argc = 5;
        CHECK(d9_s3_take_selection_args(&argc, argv, err, sizeof err) == 0);
        CHECK(argc == 5);
    }
    /* the old spelling with an s3:// input: refused, naming the new one */
    {
        char *argv[] = {"dial9", "analyze", "s3://b/p", "--from", "-15m", NULL};
        int argc = 5;
        err[0] = 0;
        CHECK(d9_s3_take_selection_args(&argc, argv, err, sizeof err) != 0);
        CHECK(strstr(err, "now-15m") != NULL);
        CHECK(strstr(err, "before the trace's end") != NULL);
        CHECK(strncmp(err, "usage", 5) == 0); /* exit 2 in main.c */
    }
    {
        char *argv[] = {"dial9", "serve", "--bucket", "b", "--to=-1h", NULL};
        int argc = 5;
        CHECK(d9_s3_take_selection_args(&argc, argv, err, sizeof err) != 0);
        CHECK(strstr(err, "--to now-1h") != NULL);
    }
    /* wall-clock values taken out, a trace time left for the command */
    {
        char *argv[] = {"dial9", "analyze", "s3://b/p", "--service", "api", "--from", "now-15m",
                        "--to", "5s", "--instance=h1", NULL};
        int argc = 10;
        time_t before = time(NULL);
        CHECK(d9_s3_take_selection_args(&argc, argv, err, sizeof err) == 0);
        time_t after = time(NULL);
        CHECK(argc == 5);
        CHECK_STR(argv[2], "s3://b/p");
        CHECK_STR(argv[3], "--to");
        CHECK_STR(argv[4], "5s");
        const d9_s3_selection *sel = d9_s3_current_selection();
        CHECK(sel->has_from && !sel->has_to);
        CHECK(sel->from >= before - 900 && sel->from <= after - 900);
        CHECK_STR(sel->service, "api");
        CHECK_STR(sel->instance, "h1");
    }
    {
        char *argv[] = {"dial9", "dump", "s3://b/p", "--to", "2025-12-06T01:00Z", NULL};
        int argc = 5;
        CHECK(d9_s3_take_selection_args(&argc, argv, err, sizeof err) == 0);
        CHECK(argc == 3);
        CHECK(d9_s3_current_selection()->has_to && d9_s3_current_selection()->to == 1764979200 + 3600);
    }
}

int main(void) {
    wall_forms();
    selection_args();
    return d9t_summary("test_fleet_wall_time");
}
