/* Runtime metadata covers every worker: a worker that registers after its segment started (and
 * after the segment's first SegmentMetadataEvent was written) is listed in the segment's
 * `runtime.<name>` entries too. A reader that, like dial9's viewer, takes each runtime's workers
 * from the metadata alone (the last list of each name) finds all of them in one segment. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dial9/dial9.h"
#include "quiet_recorder.h"
#include "trace_files_util.h"

#define MAX_IDS 16

typedef struct listed {
    char name[32];
    uint64_t ids[MAX_IDS];
    int nids;
} listed;

typedef struct seen {
    int metadata_events;
    listed runtimes[8]; /* the last list of each runtime name, as dial9's viewer keeps it */
    int nruntimes;
    uint64_t registered[MAX_IDS]; /* worker ids of WorkerRegisteredEvent */
    int nregistered;
} seen;

static listed *runtime_named(seen *s, const char *name, size_t len) {
    for (int i = 0; i < s->nruntimes; i++)
        if (strlen(s->runtimes[i].name) == len && memcmp(s->runtimes[i].name, name, len) == 0) return &s->runtimes[i];
    if (s->nruntimes == 8 || len >= sizeof s->runtimes[0].name) return NULL;
    listed *r = &s->runtimes[s->nruntimes++];
    memcpy(r->name, name, len);
    r->name[len] = 0;
    return r;
}

static void on_event(const d9_event *ev, void *ctx) {
    seen *s = ctx;
    if (d9t_is(ev, "WorkerRegisteredEvent") && s->nregistered < MAX_IDS) {
        s->registered[s->nregistered++] = d9t_field_u(ev, "worker_id");
        return;
    }
    if (!d9t_is(ev, "SegmentMetadataEvent")) return;
    s->metadata_events++;
    const d9_value *v = d9_event_field(ev, "entries");
    if (!v || !v->present || v->type != D9_FT_STRING_MAP) return;
    for (uint32_t i = 0; i < v->map.count; i++) {
        const d9_dec_kv *kv = &v->map.items[i];
        if (kv->key.len <= 8 || memcmp(kv->key.ptr, "runtime.", 8) != 0) continue;
        listed *r = runtime_named(s, kv->key.ptr + 8, kv->key.len - 8);
        if (!r) continue;
        r->nids = 0; /* the last list replaces the earlier ones */
        const char *p = kv->value.ptr, *end = p + kv->value.len;
        while (p < end && r->nids < MAX_IDS) {
            char *next;
            r->ids[r->nids++] = strtoull(p, &next, 10);
            p = next < end && *next == ',' ? next + 1 : end;
        }
    }
}

static bool listed_in(const seen *s, const char *name, uint64_t id) {
    for (int i = 0; i < s->nruntimes; i++) {
        if (strcmp(s->runtimes[i].name, name) != 0) continue;
        for (int j = 0; j < s->runtimes[i].nids; j++)
            if (s->runtimes[i].ids[j] == id) return true;
    }
    return false;
}

static void *late_worker(void *arg) {
    const char *runtime = arg;
    d9_worker_begin(runtime, strcmp(runtime, "io") == 0 ? 1 : 0);
    d9_poll_begin(2, D9_HERE);
    d9_poll_end();
    d9_worker_end();
    return NULL;
}

int main(void) {
    char *dir = d9t_mkdtemp("rtmeta");
    d9_config cfg;
    d9t_quiet_config(&cfg, dir);
    cfg.rotation_secs = 0; /* one segment, however slow the machine */
    CHECK(d9_start(&cfg) == 0);
    d9_worker_begin("io", 0);
    d9_poll_begin(1, D9_HERE);
    d9_poll_end();
    d9_flush(); /* the segment and its first metadata are written: io lists worker 0 only */

    /* workers registered later: another of "io", and a runtime of its own */
    pthread_t a, b;
    CHECK(pthread_create(&a, NULL, late_worker, "io") == 0);
    pthread_join(a, NULL);
    CHECK(pthread_create(&b, NULL, late_worker, "cpu") == 0);
    pthread_join(b, NULL);
    d9_worker_end();
    d9_stop();

    char **files;
    int n = d9t_list_segments(d9_run_dir(), &files);
    CHECK_EQ_U64(n, 1);
    seen s = {0};
    if (n == 1) CHECK(d9t_decode_file(files[0], on_event, &s) == D9_DEC_END);
    d9t_free_list(files, n);

    CHECK_EQ_U64(s.nregistered, 3);
    CHECK(s.metadata_events >= 2); /* the segment's own, and one that adds the late workers */
    /* worker ids are assigned in order of registration: io/0 = 0, io/1 = 1, cpu/0 = 2 */
    CHECK(listed_in(&s, "io", 0));
    CHECK(listed_in(&s, "io", 1));
    CHECK(listed_in(&s, "cpu", 2));
    for (int i = 0; i < s.nregistered; i++)
        CHECK(listed_in(&s, "io", s.registered[i]) || listed_in(&s, "cpu", s.registered[i]));
    printf("metadata events %d, runtimes %d\n", s.metadata_events, s.nruntimes);

    d9t_rm_rf(dir);
    free(dir);
    return d9t_summary("test_mt_recorder_runtime_metadata");
}
