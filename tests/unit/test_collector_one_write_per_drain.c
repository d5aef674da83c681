/* A drain hands the segment writer its output in one write (pwrite, interposed here and counted
 * per d9_collector_drain call, the test's own): the thread's records, a source's events, the
 * drop report of a full ring and the metadata a source changed all go in it; a drain with
 * nothing to say writes nothing. The documented exceptions, exactly: a drain whose output
 * passes the collector's flush size (256 KiB) writes once per 256 KiB more, and a segment's end
 * writes the old file's last bytes and the new file's first (here a seal at the drain's start,
 * whose old file has nothing left: still one write). A write that fails (a full disk) takes the
 * metadata it carried with it: the next drain says it again.
 *
 * Changed metadata (run_metadata.h: a source's note, the governor's) is written within the
 * segment, whole, at most once a drain and once every meta_rewrite_ns (10 s, 1 s here), and at
 * the run's end whatever the time, so the last segment says how the run ended.
 *
 * Driven by hand, one thread, no recorder thread: the drains are the test's calls, so nothing
 * depends on timing (the one pause, past the metadata's 1 s, is a lower bound nanosleep keeps).
 * The recorder's drains between two sleeps of its thread may be two (a d9_flush asked for
 * during a timed drain is served by the next, with no sleep between): counted by strace
 * between sleeps, they looked like one drain writing twice (bench/README.md). */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <time.h>
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

#define DOC_FLUSH_BYTES (256u * 1024u) /* docs/files-on-disk.md: a drain's output past this is written in parts */
#define NOTE_KEY "test.drain_note"

static bool g_counting, g_fail_next;
static uint64_t g_writes, g_bytes;

ssize_t pwrite(int fd, const void *buf, size_t len, off_t off) {
    static ssize_t (*next)(int, const void *, size_t, off_t);
    if (!next) next = (ssize_t (*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, "pwrite");
    if (g_counting) {
        g_writes++;
        g_bytes += len;
    }
    if (g_fail_next) { /* a full disk, once */
        g_fail_next = false;
        errno = ENOSPC;
        return -1;
    }
    return next(fd, buf, len, off);
}

/* A source that hands over the switches queued for it and, as the governor does, notes
 * something in the metadata at every collect. */
typedef struct fake {
    d9_source base;
    d9_collector *c;
    uint32_t tid;
    size_t switches; /* to hand over at the next collect */
    int drain;
} fake;

static void fake_collect(d9_source *src, d9_src_batch *out) {
    fake *f = src->ctx;
    f->drain++;
    d9_run_metadata_set(d9_collector_metadata(f->c), NOTE_KEY, "drain %d", f->drain);
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    uint64_t ts = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec - f->switches * 10;
    for (size_t i = 0; i < f->switches; i++) {
        d9_src_event e = {.ts_ns = ts + i * 10, .kind = D9_SRC_SWITCH, .tid = f->tid, .cpu = (int32_t)(i % 2)};
        e.sw.out = i % 2 == 0;
        CHECK(d9_src_batch_add(out, &e));
    }
    f->switches = 0;
}

static void fake_close(d9_source *src) {
    fake *f = src->ctx;
    d9_run_metadata_set(d9_collector_metadata(f->c), NOTE_KEY, "closed after drain %d", f->drain);
}

/* One drain, its writes and bytes counted. */
static uint64_t drain(d9_collector *c) {
    g_writes = g_bytes = 0;
    g_counting = true;
    d9_collector_drain(c);
    g_counting = false;
    return g_writes;
}

static void polls(int n) {
    static d9_loc where = {"test_collector_one_write_per_drain.c", "polls", 1, 0};
    for (int i = 0; i < n; i++) {
        d9__poll_begin(7, &where);
        d9__poll_end();
    }
}

/* What the files say: per file, its SegmentMetadataEvents and the note of each. */
#define MAX_FILES 4
#define MAX_META 8
typedef struct seen {
    int file;
    int metas[MAX_FILES];
    char note[MAX_FILES][MAX_META][64];
    uint64_t drops, switches, polls;
} seen;

static void on_event(const d9_event *ev, void *ctx) {
    seen *s = ctx;
    if (d9t_is(ev, "PollStartEvent")) s->polls++;
    if (d9t_is(ev, "SchedSwitchEvent")) s->switches++;
    if (d9t_is(ev, "DroppedEventsEvent")) s->drops += d9t_field_u(ev, "count");
    if (!d9t_is(ev, "SegmentMetadataEvent") || s->file >= MAX_FILES) return;
    int k = s->metas[s->file]++;
    if (k >= MAX_META) return;
    const d9_value *v = d9_event_field(ev, "entries");
    for (uint32_t i = 0; v && v->type == D9_FT_STRING_MAP && i < v->map.count; i++) {
        const d9_dec_kv *kv = &v->map.items[i];
        if (kv->key.len == strlen(NOTE_KEY) && !memcmp(kv->key.ptr, NOTE_KEY, kv->key.len))
            snprintf(s->note[s->file][k], sizeof s->note[0][0], "%.*s", (int)kv->value.len, kv->value.ptr);
    }
}

int main(void) {
    /* rings of 512 words (4 KiB) that never grow: 400 polls overrun it, so drops are reported */
    d9_thread_set_ring_limits(512, 64u << 20);
    static tc_rig rig;
    tc_rig_init(&rig, "onewrite");
    static fake f = {.base = {.name = "fake", .collect = fake_collect, .close = fake_close}};
    f.base.ctx = &f;
    d9_collector *c = tc_rig_open(&rig, "onewrite-run", "onewrite", &f.base);
    if (!c) return d9t_summary("collector_one_write_per_drain");
    f.c = c;
    f.tid = (uint32_t)gettid();
    c->meta_rewrite_ns = 1000000000u; /* the recorder's 10 s, shorter for the test's pause */
    tc_rig_start(&rig);
    d9__worker_begin("onewrite", 0);

    /* 1: the worker's registration, polls, switches: one write (its metadata again, for the new
     * worker, inside it) */
    polls(20);
    f.switches = 10;
    uint64_t w = drain(c);
    printf("drain 1: %" PRIu64 " writes, %" PRIu64 " bytes\n", w, g_bytes);
    CHECK_EQ_U64(w, 1);

    /* 2: nothing recorded (the note changed, within the second): nothing written */
    w = drain(c);
    printf("drain 2: %" PRIu64 " writes\n", w);
    CHECK_EQ_U64(w, 0);

    /* 3: a ring overrun: the polls it kept and its drop report, one write */
    polls(400);
    d9_thread *me = d9_thread_current();
    uint64_t drops = me ? atomic_load(&me->drops_total) : 0;
    CHECK(drops > 0);
    w = drain(c);
    printf("drain 3: %" PRIu64 " writes, %" PRIu64 " bytes, %" PRIu64 " drops\n", w, g_bytes, drops);
    CHECK_EQ_U64(w, 1);

    /* 4: past a second since the last metadata: the note of this drain's collect goes in the
     * drain's one write */
    struct timespec second = {1, 50 * 1000 * 1000};
    nanosleep(&second, NULL);
    polls(20);
    f.switches = 10;
    w = drain(c);
    printf("drain 4: %" PRIu64 " writes, %" PRIu64 " bytes\n", w, g_bytes);
    CHECK_EQ_U64(w, 1);

    /* 5: changed again at once: not written yet (once a second at most), the polls are */
    polls(20);
    w = drain(c);
    CHECK_EQ_U64(w, 1);

    /* 6: past the second again, the drain's write (with drain 6's note) fails: 7 says the
     * metadata again at once, in its one write (a new stream in the same file) */
    nanosleep(&second, NULL);
    polls(20);
    g_fail_next = true;
    w = drain(c);
    CHECK_EQ_U64(w, 1);
    polls(20);
    w = drain(c);
    printf("drain 7 (after a failed write): %" PRIu64 " writes\n", w);
    CHECK_EQ_U64(w, 1);

    /* 8: a seal asked for (a flight recorder's window end): the segment ends at the drain's
     * start with nothing left to write, the new one takes the drain's output in one write */
    d9_collector_request_seal(c, 1);
    polls(20);
    w = drain(c);
    printf("drain 8 (sealed at its start): %" PRIu64 " writes\n", w);
    CHECK_EQ_U64(w, 1);

    /* 9: a drain's output past the flush size: one write per 256 KiB more, no other */
    f.switches = 60000;
    w = drain(c);
    printf("drain 9: %" PRIu64 " writes, %" PRIu64 " bytes (flush size %u)\n", w, g_bytes, DOC_FLUSH_BYTES);
    CHECK(g_bytes > DOC_FLUSH_BYTES);
    CHECK(w >= 2);
    CHECK(w <= 1 + g_bytes / DOC_FLUSH_BYTES);

    d9__worker_end();
    tc_rig_close(&rig);

    char **files;
    int n = d9t_list_segments(rig.run_dir, &files);
    CHECK_EQ_U64(n, 2);
    static seen s;
    for (int i = 0; i < n && i < MAX_FILES; i++) {
        s.file = i;
        CHECK(d9t_decode_file(files[i], on_event, &s) == D9_DEC_END);
    }
    d9t_free_list(files, n);
    for (int i = 0; i < n && i < MAX_FILES; i++)
        for (int k = 0; k < s.metas[i] && k < MAX_META; k++)
            printf("segment %d metadata %d: %s = \"%s\"\n", i, k, NOTE_KEY, s.note[i][k]);
    CHECK(s.drops >= drops); /* and drain 6's lost write, as write_error */
    CHECK_EQ_U64(s.switches, 10 + 10 + 60000);
    /* segment 0: the start's (no note yet), the new worker's (drain 1), drain 4's, drain 7's
     * (drain 6's was lost with its write); nothing of drains 2 and 5 (within the second) */
    CHECK_EQ_U64(s.metas[0], 4);
    CHECK_STR(s.note[0][0], "");
    CHECK_STR(s.note[0][2], "drain 4");
    CHECK_STR(s.note[0][3], "drain 7");
    /* segment 1: its start's, then the run's end: the note the source left as it closed */
    CHECK(s.metas[1] >= 2);
    if (s.metas[1] >= 2 && s.metas[1] <= MAX_META) CHECK_STR(s.note[1][s.metas[1] - 1], "closed after drain 10");
    tc_rig_finish(&rig);
    return d9t_summary("collector_one_write_per_drain");
}
