/* Rule dumps' debounce and rate limit (docs/flight-recorder.md), with a burst of triggers that
 * happen at counted rounds (custom events, DIAL9_TRIGGERS=event:FlightBurstEvent):
 *  - DIAL9_DUMP_DEBOUNCE_SECS=3600: five triggers make one dump, its manifest counting the
 *    four that joined it (a look-forward of a minute keeps the dump under way through the
 *    burst: the rules fire as the collector merges, so a dump of no look-forward could be
 *    written before the next trigger; d9_stop ends it with what there is);
 *  - no debounce, no window, DIAL9_DUMP_MAX_PER_HOUR=2: five triggers make two dumps. */
#include <stdint.h>

#include "check.h"
#include "dial9/dial9.h"
#include "flight_test_util.h"

#define BURSTS 5

static int record(void *arg) {
    const char **a = arg;
    ft_env(a[0]);
    setenv("DIAL9_MODE", "memory", 1);
    setenv("DIAL9_TRIGGERS", "event:FlightBurstEvent", 1);
    setenv("DIAL9_DUMP_DEBOUNCE_SECS", a[1], 1);
    setenv("DIAL9_DUMP_MAX_PER_HOUR", a[2], 1);
    setenv("DIAL9_DUMP_LOOKBACK_SECS", "0", 1);
    setenv("DIAL9_DUMP_LOOKFORWARD_SECS", a[3], 1);
    static const d9_field fields[] = {{"round", D9_U64}};
    const d9_event_type *burst = d9_event_type_define("FlightBurstEvent", fields, 1);
    d9_config cfg;
    if (!burst || d9_config_from_env(&cfg) != D9_OK || d9_start(&cfg) != D9_OK) return 3;
    d9_worker_begin("flight-test", 0);
    for (uint64_t i = 0; i < 1000; i++) {
        d9_poll_begin(i + 1, D9_HERE);
        if (i % 200 == 100) D9_EMIT(burst, {.u = i}); /* rounds 100, 300, ..., 900 */
        d9_poll_end();
        if (i % 100 == 0) d9_flush(); /* drained at known points: no trigger is dropped */
    }
    d9_worker_end();
    d9_stop();
    return 0;
}

/* Dumps under base/dumps, and how many triggers joined them (the manifests' sum). */
static int count_dumps(const char *base, uint64_t *merged) {
    char path[512], names[16][256];
    snprintf(path, sizeof path, "%s/dumps", base);
    int n = ft_entries(path, names, 16);
    *merged = 0;
    for (int i = 0; i < n && i < 16; i++) {
        char file[5000];
        snprintf(file, sizeof file, "%s/%s/manifest.json", path, names[i]);
        char *m = ft_read(file);
        CHECK(m != NULL);
        const char *k = m ? strstr(m, "\"merged_triggers\": ") : NULL;
        CHECK(k != NULL);
        if (k) *merged += strtoull(k + strlen("\"merged_triggers\": "), NULL, 10);
        CHECK(m && strstr(m, "\"rule\": \"event:FlightBurstEvent\"") != NULL);
        free(m);
    }
    return n;
}

int main(void) {
    uint64_t merged;
    char *base = d9t_mkdtemp("flight-debounce");
    const char *debounced[] = {base, "3600", "100", "60"};
    CHECK_EQ_U64(ft_run_child(record, debounced), 0);
    CHECK_EQ_U64(count_dumps(base, &merged), 1);
    CHECK_EQ_U64(merged, BURSTS - 1);
    if (d9t_failed == 0) d9t_rm_rf(base);

    char *base2 = d9t_mkdtemp("flight-ratelimit");
    const char *limited[] = {base2, "0", "2", "0"};
    CHECK_EQ_U64(ft_run_child(record, limited), 0);
    CHECK_EQ_U64(count_dumps(base2, &merged), 2);
    CHECK_EQ_U64(merged, 0);
    if (d9t_failed == 0) d9t_rm_rf(base2);
    else printf("kept %s and %s\n", base, base2);
    free(base);
    free(base2);
    return d9t_summary("test_mt_flight_debounce");
}
