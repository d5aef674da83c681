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
#include "collector_rig_util.h"
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
    static tc_rig rig;
    tc_rig_init(&rig, "meta-no-room");
    rig.cfg.max_file_size = 32 * 1024;
    rig.cfg.max_total_size = 64ull << 20;
    static fake f = {.base = {.name = "fake", .collect = fake_collect, .close = fake_close}};
    f.base.ctx = &f;
    d9_collector *c = tc_rig_open(&rig, "meta-no-room-run", "noroom", &f.base);
    if (!c) return d9t_summary("collector_metadata_no_room");
    f.c = c;
    c->meta_rewrite_ns = 0; /* every drain's change written at that drain */
    tc_rig_start(&rig);
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
    tc_rig_close(&rig);

    char **files;
    int n = d9t_list_segments(rig.run_dir, &files);
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
    tc_rig_finish(&rig);
    return d9t_summary("collector_metadata_no_room");
}
