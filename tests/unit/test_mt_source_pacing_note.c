/* The stacks' pacing says how much of the time they were paused (source.switch_stacks, noted
 * once a second while they pause) without naming the source in `sources` again: each note
 * made that list one ",switch_stacks" longer, ~86 k names a day, written in every segment's
 * metadata. Stacks paced at 1 a second under a ping-pong pause nearly all the time and the
 * segments rotate every second; the test waits until a sealed segment's metadata carries the
 * pacing note, then checks that every segment's `sources` names each source once. Only the
 * states are waited for; 120 s is a safety net. */
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "dial9/dial9.h"
#include "pingpong_workload.h"
#include "test_source_util.h"

#define SAFETY_NS (120ull * 1000000000ull)

typedef struct seen {
    int noted;       /* metadata with the pacing's note */
    int inactive;    /* switch stacks refused on this host */
    int duplicates;  /* metadata whose `sources` names a source twice */
    int metadata;
} seen;

static bool named_twice(const char *list) {
    char copy[1024];
    snprintf(copy, sizeof copy, "%s", list);
    const char *names[64];
    int n = 0;
    for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok && n < 64; tok = strtok_r(NULL, ",", &save)) {
        for (int i = 0; i < n; i++)
            if (strcmp(names[i], tok) == 0) return true;
        names[n++] = tok;
    }
    return false;
}

static void on_event(const d9_event *ev, void *ctx) {
    seen *s = ctx;
    if (!d9t_is(ev, "SegmentMetadataEvent")) return;
    const d9_value *m = d9_event_field(ev, "entries");
    if (!m) return;
    s->metadata++;
    for (uint32_t i = 0; i < m->map.count; i++) {
        const d9_dec_kv *kv = &m->map.items[i];
        char key[64], val[1024];
        snprintf(key, sizeof key, "%.*s", (int)kv->key.len, kv->key.ptr);
        snprintf(val, sizeof val, "%.*s", (int)kv->value.len, kv->value.ptr);
        if (strcmp(key, "sources") == 0 && named_twice(val)) s->duplicates++;
        if (strcmp(key, "source.switch_stacks") == 0) {
            if (strstr(val, "of the time since start")) s->noted++;
            if (strncmp(val, "inactive", 8) == 0) s->inactive++;
        }
    }
}

/* The metadata of every sealed segment (all but the newest) of the run. */
static seen read_sealed(const char *run) {
    seen s = {0, 0, 0, 0};
    char **names = NULL;
    int n = d9t_list_segments(run, &names);
    for (int i = 0; i + 1 < n; i++) d9t_decode_file(names[i], on_event, &s);
    d9t_free_list(names, n);
    return s;
}

int main(void) {
    CHECK(pipe(g_ping) == 0 && pipe(g_pong) == 0);
    char *dir = d9t_mkdtemp("pacing-note");
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    cfg.switch_stacks_per_sec = 1;
    cfg.rotation_secs = 1;
    cfg.symbolize = false;
    cfg.overhead_budget_pct = 0; /* paced, not sampled in windows */
    CHECK(d9_start(&cfg) == 0);
    pthread_t a, b;
    pthread_create(&b, NULL, ponger, NULL);
    pthread_create(&a, NULL, pinger, NULL);
    seen s = {0, 0, 0, 0};
    uint64_t t0 = tt_now();
    while (s.noted == 0 && s.inactive == 0 && tt_now() - t0 < SAFETY_NS) {
        tt_sleep_ns(100u * 1000u * 1000u);
        s = read_sealed(d9_run_dir());
    }
    atomic_store(&g_stop, true);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    d9_stop();
    s = (seen){0, 0, 0, 0};
    CHECK(d9t_decode_run(d9_run_dir(), on_event, &s) == 0);
    printf("metadata records %d, with the pacing note %d, naming a source twice %d\n", s.metadata, s.noted,
           s.duplicates);
    if (s.inactive && !s.noted) {
        printf("SKIP: context-switch stacks refused on this host\n");
    } else {
        CHECK(s.noted >= 1);
        CHECK_EQ_U64(s.duplicates, 0);
    }
    if (!getenv("D9_KEEP")) d9t_rm_rf(dir);
    free(dir);
    return d9t_summary("test_mt_source_pacing_note");
}
