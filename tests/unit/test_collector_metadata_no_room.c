/* Changed metadata that no longer fits its segment: the collector writes what the drain has
 * without it, ends the segment, and the next segment's preamble says it (collector_encode.c,
 * d9_col_encode_metadata_change). Nothing is lost on the way: every poll is in the trace, no
 * drop is reported, every file decodes to its end, and every drain's metadata note is said by
 * some SegmentMetadataEvent. Written whole at each drain (the rewrite interval 0 here) with a
 * note of ~1.5 KB, into segments of 32 KiB, the segment's room runs out under a rewrite many
 * times. Without that path, the drain's output would overrun the segment and the writer would
 * drop it (segment_writer.c: "the caller overran the segment"). Driven by hand, no timing. */
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "core/collector.h"
#include "core/collector_state.h"
#include "core/run_metadata.h"
#include "core/source.h"
#include "core/thread_buffer.h"
#include "dial9/dial9.h"
#include "trace_files_util.h"

#define NOTE_KEY "test.no_room_note"
#define DRAINS 120
#define POLLS_A_DRAIN 5

static char g_pad[1500];

typedef struct fake {
    d9_source base;
    d9_collector *c;
    int drain;
} fake;

static void fake_collect(d9_source *src, d9_src_batch *out) {
    (void)out;
    fake *f = src->ctx;
    f->drain++;
    d9_run_metadata_set(d9_collector_metadata(f->c), NOTE_KEY, "drain %d %s", f->drain, g_pad);
}

static void fake_close(d9_source *src) { (void)src; }

typedef struct seen {
    uint64_t polls, drops, metas;
    bool note[DRAINS + 2]; /* drain i's note said by some metadata event */
} seen;

static void on_event(const d9_event *ev, void *ctx) {
    seen *s = ctx;
    if (d9t_is(ev, "PollStartEvent")) s->polls++;
    if (d9t_is(ev, "DroppedEventsEvent")) s->drops += d9t_field_u(ev, "count");
    if (!d9t_is(ev, "SegmentMetadataEvent")) return;
    s->metas++;
    const d9_value *v = d9_event_field(ev, "entries");
    for (uint32_t i = 0; v && v->type == D9_FT_STRING_MAP && i < v->map.count; i++) {
        const d9_dec_kv *kv = &v->map.items[i];
        if (kv->key.len != strlen(NOTE_KEY) || memcmp(kv->key.ptr, NOTE_KEY, kv->key.len)) continue;
        char head[32]; /* the value's start, NUL-terminated here */
        snprintf(head, sizeof head, "%.*s", (int)(kv->value.len < 31 ? kv->value.len : 31), kv->value.ptr);
        int d = 0;
        if (sscanf(head, "drain %d", &d) == 1 && d > 0 && d <= DRAINS + 1) s->note[d] = true;
    }
}

int main(void) {
    memset(g_pad, 'x', sizeof g_pad - 1);
    d9_thread_set_ring_limits(512, 64u << 20);
    char *dir = d9t_mkdtemp("meta-no-room");
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    cfg.max_file_size = 32 * 1024;
    cfg.max_total_size = 64ull << 20;
    d9_collector_config cc = {.cfg = &cfg, .run_id = "meta-no-room-run", .service = "noroom", .clock_name = "monotonic"};
    char err[512];
    d9_collector *c = d9_collector_open(&cc, err, sizeof err);
    CHECK(c != NULL);
    if (!c) return d9t_summary("collector_metadata_no_room");
    static fake f = {.base = {.name = "fake", .collect = fake_collect, .close = fake_close}};
    f.base.ctx = &f;
    f.c = c;
    CHECK(d9_collector_add_source(c, &f.base));
    c->meta_rewrite_ns = 0; /* every drain's change written at that drain */
    CHECK(d9_collector_start(c, err, sizeof err) == 0);
    d9__worker_begin("noroom", 0);

    static d9_loc where = {"test_collector_metadata_no_room.c", "polls", 1, 0};
    uint64_t emitted = 0;
    for (int d = 0; d < DRAINS; d++) {
        for (int i = 0; i < POLLS_A_DRAIN; i++) {
            d9__poll_begin(7, &where);
            d9__poll_end();
            emitted++;
        }
        d9_collector_drain(c);
    }
    d9__worker_end();
    char run_dir[4096];
    snprintf(run_dir, sizeof run_dir, "%s", d9_collector_run_dir(c));
    d9_collector_close(c, NULL);

    char **files;
    int n = d9t_list_segments(run_dir, &files);
    static seen s;
    for (int i = 0; i < n; i++) CHECK(d9t_decode_file(files[i], on_event, &s) == D9_DEC_END);
    d9t_free_list(files, n);
    printf("%d segments, %llu metadata events, %llu of %llu polls, %llu drops\n", n,
           (unsigned long long)s.metas, (unsigned long long)s.polls, (unsigned long long)emitted,
           (unsigned long long)s.drops);
    /* ~1.6 KB a drain into 32 KiB segments: the room ran out under a rewrite many times */
    CHECK(n >= 4);
    CHECK_EQ_U64(s.polls, emitted);
    CHECK_EQ_U64(s.drops, 0);
    int missing = 0;
    for (int d = 1; d <= DRAINS; d++) missing += !s.note[d];
    CHECK_EQ_U64(missing, 0);
    if (!d9t_failed) d9t_rm_rf(dir);
    else printf("trace kept in %s\n", dir);
    free(dir);
    return d9t_summary("collector_metadata_no_room");
}
