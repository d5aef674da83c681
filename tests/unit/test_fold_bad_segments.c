/* dial9 fold on segments that are not whole (docs/fleet-tables.md, "All or nothing"): each bad
 * one is named with what is wrong and where (the decoder's message and byte offset, as `dial9
 * analyze` says it for the same file), the fold fails, and nothing of it is visible: the
 * output's files stay exactly as they were. The same good segment alone folds.
 *
 * The bad ones are a generated segment (metadata, clock sync, a spawn location, polls) cut,
 * flipped and emptied where the cause is known exactly:
 *   - cut inside its SegmentMetadataEvent, before the ClockSyncEvent (a torn tail with no
 *     wall-clock time before it; before: "no ClockSyncEvent", the cut unnamed);
 *   - one bit flipped in the ClockSyncEvent's frame tag (damage; before: "no ClockSyncEvent");
 *   - one bit flipped in a poll's spawn location id, so that it names a pool id the segment
 *     never defines (analyze fails the file; before: folded, exit 0, its polls "<unresolved>");
 *   - zero bytes (before: "no ClockSyncEvent"). */
#include <ftw.h>

#include "check.h"
#include "fold/fold.h"
#include "test_analysis_builder.h"
#include "trace_files_util.h"

#define POLLS 40

/* where the bytes to break sit in the generated segment */
typedef struct layout {
    size_t metadata, clock, first_poll; /* event frames' offsets */
} layout;

static int write_file(const char *path, const uint8_t *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = n ? fwrite(p, 1, n, f) : 0;
    return fclose(f) == 0 && w == n ? 0 : -1;
}

static tb make_segment(layout *at) {
    tb t = {0};
    tb_stream(&t);
    uint64_t ts = 1000000000000ull;
    const char *meta[] = {"service", "badseg", "host", "gen", "boot_id", "b-1", "run_id", "r-bad", NULL};
    d9_enc_timestamp_reset(&t.b, &t.st, ts); /* so that the events' frames come first */
    at->metadata = t.b.len;
    tb_metadata(&t, ts, meta);
    at->clock = t.b.len;
    d9_enc_event(&t.b, &t.st, D9_SCH_CLOCK_SYNC, ts);
    d9_put_varint(&t.b, 1796558400000000000ull); /* 2026-12-06T12:00:00Z */
    uint32_t loc = tb_string(&t, "src/api/handler.rs:10");
    for (int i = 0; i < POLLS; i++) {
        uint64_t start = ts + 1000 + (uint64_t)i * 50000;
        if (i == 0) at->first_poll = t.b.len;
        tb_poll_start(&t, start, (uint64_t)i % 2, 0, 1 + (uint64_t)i, loc);
        tb_poll_end(&t, start + 20000, (uint64_t)i % 2);
    }
    return t;
}

/* every file and directory under dir, one "path size" line each (directories "path/"), for
 * "nothing changed" */
static FILE *listing;
static int list_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    if (flag == FTW_F) fprintf(listing, "%s %lld\n", path, (long long)st->st_size);
    else if (ftw->level > 0) fprintf(listing, "%s/\n", path);
    return 0;
}
static char *tree(const char *dir) {
    char *buf = NULL;
    size_t len = 0;
    listing = open_memstream(&buf, &len);
    nftw(dir, list_one, 16, FTW_PHYS);
    fclose(listing);
    return buf;
}

/* the fold's log has a line "dial9 fold: PATH: " followed by want somewhere on it */
static bool said(const char *log, const char *path, const char *want) {
    char head[1100];
    snprintf(head, sizeof head, "dial9 fold: %s: ", path);
    for (const char *l = strstr(log, head); l; l = strstr(l + 1, head)) {
        const char *eol = strchr(l, '\n');
        const char *w = strstr(l, want);
        if (w && (!eol || w < eol)) return true;
    }
    fprintf(stderr, "wanted a line naming %s with \"%s\" in:\n%s", path, want, log);
    return false;
}

static int fold(char **paths, size_t n, const char *to, char **log, d9f_result *res, char *err, size_t errlen) {
    size_t len = 0;
    FILE *f = open_memstream(log, &len);
    int rc = d9f_fold(paths, n, to, &(pq_options){0}, f, NULL, res, err, errlen);
    fclose(f);
    return rc;
}

int main(void) {
    char *dir = d9t_mkdtemp("foldbad");
    layout at;
    tb t = make_segment(&at);
    CHECK(!t.b.failed);
    char good[300], cut[300], frame[300], pool[300], empty[300], to[300];
    snprintf(good, sizeof good, "%s/good/trace.0.bin", dir);
    /* other names: one segment's copies (its run and name) are folded once, the first */
    snprintf(cut, sizeof cut, "%s/cut/trace.1.bin", dir);
    snprintf(frame, sizeof frame, "%s/frame/trace.2.bin", dir);
    snprintf(pool, sizeof pool, "%s/pool/trace.3.bin", dir);
    snprintf(empty, sizeof empty, "%s/empty/trace.4.bin", dir);
    snprintf(to, sizeof to, "%s/tables", dir);
    const char *subdirs[] = {"good", "cut", "frame", "pool", "empty"};
    for (size_t i = 0; i < 5; i++) {
        char d[300];
        snprintf(d, sizeof d, "%s/%s", dir, subdirs[i]);
        CHECK(mkdir(d, 0755) == 0);
    }
    CHECK(write_file(good, t.b.data, t.b.len) == 0);
    CHECK(write_file(cut, t.b.data, at.metadata + 6) == 0);
    t.b.data[at.clock] ^= 0x80; /* the event frame's tag 0x02 becomes 0x82 */
    CHECK(write_file(frame, t.b.data, t.b.len) == 0);
    t.b.data[at.clock] ^= 0x80;
    /* the spawn location's id, the u32 LE after the frame's 6 bytes, worker, queue and task
     * (one byte each here): 1 -> 17 */
    t.b.data[at.first_poll + 9] ^= 0x10;
    CHECK(write_file(pool, t.b.data, t.b.len) == 0);
    t.b.data[at.first_poll + 9] ^= 0x10;
    CHECK(write_file(empty, NULL, 0) == 0);

    /* the good one alone: folded */
    char err[1024], *log = NULL, want[400];
    d9f_result res;
    char *only_good[] = {good};
    CHECK(fold(only_good, 1, to, &log, &res, err, sizeof err) == 0);
    CHECK_EQ_U64(res.segments, 1);
    CHECK_EQ_U64(res.polls, POLLS);
    free(log);
    char *before = tree(to);
    CHECK(strstr(before, "/polls/service=badseg/") != NULL);

    /* each bad one alone into a fresh directory: named, exit -1, no file at all (nor an
     * empty partition directory) */
    char *bad[] = {cut, frame, pool, empty};
    for (size_t i = 0; i < 4; i++) {
        char fresh[320];
        snprintf(fresh, sizeof fresh, "%s/alone-%zu", dir, i);
        CHECK(fold(&bad[i], 1, fresh, &log, &res, err, sizeof err) == -1);
        CHECK(strstr(err, bad[i]) != NULL && strstr(err, "nothing was written") != NULL);
        char *none = tree(fresh);
        CHECK_STR(none, "");
        free(none);
        free(log);
    }

    /* all of them with the good one, into the tables the good one made: each bad one named
     * with its cause and offset, the good one not; the tables exactly as they were */
    char *all[] = {good, cut, frame, pool, empty};
    CHECK(fold(all, 5, to, &log, &res, err, sizeof err) == -1);
    snprintf(want, sizeof want, "truncated at offset %zu (stream 0)", at.metadata);
    CHECK(said(log, cut, want));
    CHECK(said(log, cut, "no ClockSyncEvent before the cut"));
    snprintf(want, sizeof want, "damaged at offset %zu (stream 0): unknown frame tag 0x82", at.clock);
    CHECK(said(log, frame, want));
    snprintf(want, sizeof want, "1 pool id(s) referenced but never defined in their stream (the first: the event at offset %zu)",
             at.first_poll);
    CHECK(said(log, pool, want));
    CHECK(said(log, empty, "empty file: not a dial9 trace (no stream header)"));
    snprintf(want, sizeof want, "dial9 fold: %s:", good);
    CHECK(strstr(log, want) == NULL);
    CHECK(strstr(err, "4 of 5 segment(s) could not be folded") != NULL);
    char *after = tree(to);
    CHECK_STR(after, before);
    free(after);
    free(log);

    free(before);
    free(t.b.data);
    int rc = d9t_summary("test_fold_bad_segments");
    if (rc == 0) d9t_rm_rf(dir);
    free(dir);
    return rc;
}
