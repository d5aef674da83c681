/* A rule matched long after its event still dumps the segment holding it (issue 36, a dump
 * made at stop that held no segment; docs/flight-recorder.md, "Dumps"). Memory mode,
 * hour-long segments and DIAL9_FLUSH_MS at its most (60 s); the rule is event:Name, which no
 * hook wakes the collector for, so only a drain the program asks for sees the event. The
 * give-up bound is DIAL9_DUMP_GIVE_UP_MS=1000 (by default 10 s: the test took 22 s):
 *   1. an event, 1.1 s of nothing, then d9_flush: the drain matches the rule while the event's
 *      segment is still open (nothing sealed it: hour-long segments, no drain since). The old
 *      flight thread measured its give-up bound from the window's end, which was already
 *      past, so it wrote the manifest at once: 0 segments. This part fails on the old code
 *      every time (the store is empty when the match arrives; no timing decides it). The
 *      fixed code asks for the seal and waits up to the bound for it, far longer than a seal
 *      takes on a loaded machine under TSan.
 *   2. an event, 1.1 s of nothing, then d9_stop: the last drain matches it, the collector's
 *      close seals its segment. The old flight thread, woken by the match between that drain
 *      and the seal, gave up the same way; whether it ran in between was the scheduler's
 *      choice, so this part is a guard (the stop round alone was always right).
 * Each dump must hold its event. The sleeps only make the event older than the old bound;
 * the fixed code passes whatever they last. */
#include <stdint.h>
#include <time.h>

#include "check.h"
#include "dial9/dial9.h"
#include "flight_test_util.h"

#define GIVE_UP_MS "1000" /* DIAL9_DUMP_GIVE_UP_MS */
#define OLDER_THAN_GIVE_UP_MS 1100

static int record(void *arg) {
    const char *base = arg;
    ft_memory_rule_env(base, "event:LateMatchEvent");
    setenv("DIAL9_FLUSH_MS", "60000", 1); /* no periodic drain during the test */
    setenv("DIAL9_DUMP_DEBOUNCE_SECS", "0", 1); /* the second event makes a dump of its own */
    setenv("DIAL9_DUMP_GIVE_UP_MS", GIVE_UP_MS, 1);
    static const d9_field fields[] = {{"round", D9_U64}};
    const d9_event_type *mark = d9_event_type_define("LateMatchEvent", fields, 1);
    if (!mark) {
        fprintf(stderr, "LateMatchEvent: %s\n", d9_last_error());
        return 3;
    }
    if (!ft_start_from_env()) return 3;
    d9_worker_begin("flight-test", 0);
    d9_poll_begin(1, D9_HERE);
    D9_EMIT(mark, {.u = 1});
    d9_poll_end();
    ft_sleep_ms(OLDER_THAN_GIVE_UP_MS);
    d9_flush(); /* the first drain since the event: the match comes 1.1 s late */
    char manifest[1024];
    bool seen = ft_wait_manifest(base, manifest, sizeof manifest);
    if (!seen) fprintf(stderr, "no dump within 30 s of the late match\n");

    d9_poll_begin(2, D9_HERE);
    D9_EMIT(mark, {.u = 2});
    d9_poll_end();
    ft_sleep_ms(OLDER_THAN_GIVE_UP_MS);
    d9_worker_end();
    d9_stop(); /* only its last drain sees the second event */
    return seen ? 0 : 4;
}

typedef struct marks {
    uint64_t count[3];
} marks;

static void on_event(const d9_event *ev, void *ctx) {
    marks *m = ctx;
    if (!d9t_is(ev, "LateMatchEvent")) return;
    uint64_t round = d9t_field_u(ev, "round");
    if (round < 3) m->count[round]++;
}

/* The manifest's holds.segments: how many segments the dump says it holds. */
static uint64_t held_segments(const char *manifest) {
    const char *holds = manifest ? strstr(manifest, "\"holds\"") : NULL;
    const char *seg = holds ? strstr(holds, "\"segments\": ") : NULL;
    return seg ? strtoull(seg + strlen("\"segments\": "), NULL, 10) : 0;
}

/* The dump `name` holds segments and the mark of `round`. */
static void check_dump(const char *base, const char *name, uint64_t round) {
    char dir[800], file[1000];
    snprintf(dir, sizeof dir, "%s/dumps/%s", base, name);
    snprintf(file, sizeof file, "%s/manifest.json", dir);
    char *m = ft_read(file);
    CHECK(m != NULL);
    CHECK(m && strstr(m, "\"rule\": \"event:LateMatchEvent\"") != NULL);
    uint64_t segments = held_segments(m);
    printf("%s: %llu segments\n", name, (unsigned long long)segments);
    CHECK(segments >= 1); /* the old code: 0, the manifest listing none */
    marks seen = {{0}};
    CHECK_EQ_U64(d9t_decode_run(dir, on_event, &seen), 0);
    CHECK_EQ_U64(seen.count[round], 1); /* the event that fired it */
    if (m && segments == 0) printf("%s\n", m);
    free(m);
}

int main(void) {
    char *base = d9t_mkdtemp("flight-late-match");
    CHECK_EQ_U64(ft_run_child(record, base), 0);

    char path[600], names[16][256];
    snprintf(path, sizeof path, "%s/dumps", base);
    int dumps = ft_entries(path, names, 16);
    CHECK_EQ_U64(dumps, 2);
    if (dumps == 2) {
        check_dump(base, names[0], 1); /* matched by d9_flush's drain */
        check_dump(base, names[1], 2); /* matched by d9_stop's last drain */
    }
    if (d9t_failed == 0 && !getenv("FT_KEEP")) d9t_rm_rf(base);
    else printf("kept %s\n", base);
    free(base);
    return d9t_summary("test_mt_flight_late_match");
}
