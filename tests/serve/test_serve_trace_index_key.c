/* dial9-serve's index of a `serve --bucket` selection (src/serve/trace_index.c) counts a file of
 * the S3 cache as a segment's copy only when its key sidecar (common/cache_sidecar.h) names the
 * segment's key, as the fleet cache does: the same local path may hold another recording's
 * segment of the same size (two recordings of one instance and boot, both from segment 0).
 * Checked on a cache directory made here, with no server and no S3:
 *   - sidecar naming the key: cached (decoded);
 *   - no sidecar, or one naming another key: remote (fetched when opened), whatever the size;
 *   - between a refresh and the send (d9_segment_revalidate), the file replaced by another
 *     object's copy (another dial9 fetching into the same cache): refused, not sent as this
 *     segment; replaced by a new copy of the same object: accepted. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "serve/trace_index.h"

static char root[64];

/* path under root <- text (written beside, renamed in: a new inode, as a fetch leaves it) */
static void put(const char *rel, const char *text) {
    char path[256], tmp[300];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    snprintf(tmp, sizeof tmp, "%s.part", path);
    FILE *f = fopen(tmp, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0 || rename(tmp, path) != 0) {
        perror(path);
        exit(2);
    }
}

static void drop(const char *rel) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    unlink(path);
}

/* The one segment of run "r" after a refresh. */
static d9_segment *segment(d9_trace_index *ix) {
    char err[256];
    if (d9_trace_index_refresh(ix, err, sizeof err) != 0) return NULL;
    const d9_run *r = d9_trace_index_run(ix, "r");
    return r && r->count == 1 ? r->segs[0] : NULL;
}

int main(void) {
    snprintf(root, sizeof root, "/tmp/d9test-index-key-XXXXXX");
    if (!mkdtemp(root)) return 2;
    char dir[128];
    snprintf(dir, sizeof dir, "%s/r", root);
    if (mkdir(dir, 0700) != 0) return 2;
    /* two objects of one size: their bytes differ (no trace: what matters is which is taken) */
    const char *a = "recording A, segment 0", *b = "recording B, segment 0";
    static char text[512];
    snprintf(text, sizeof text,
             "dial9-serve-selection 1\nsource\ts3://bucket/prefix\nrun\tr\t-1\t-1\n"
             "seg\ttrace.0.bin\t%zu\t-1\tkeys/A/0.bin\n", strlen(a));
    FILE *in = fmemopen(text, strlen(text), "r");
    d9_serve_selection sel;
    char err[256];
    CHECK(in && d9_serve_selection_parse(&sel, in, "(test)", err, sizeof err) == 0);
    if (in) fclose(in);
    d9_trace_index ix;
    CHECK(d9_trace_index_init(&ix, root, err, sizeof err) == 0);
    ix.selection = &sel;

    put("r/trace.0.bin", a);
    put("r/.trace.0.bin.key", "keys/A/0.bin");
    d9_segment *s = segment(&ix);
    CHECK(s && !s->remote);

    put("r/trace.0.bin", b);
    put("r/.trace.0.bin.key", "keys/B/0.bin");
    s = segment(&ix);
    CHECK(s && s->remote); /* the same size: before, taken for A's copy */

    drop("r/.trace.0.bin.key");
    s = segment(&ix);
    CHECK(s && s->remote); /* a file without its sidecar (a fetch cut between its renames) */

    put("r/trace.0.bin", a);
    put("r/.trace.0.bin.key", "keys/A/0.bin");
    s = segment(&ix);
    CHECK(s && !s->remote);
    put("r/trace.0.bin", b); /* another dial9 fetched B's segment here since the refresh */
    put("r/.trace.0.bin.key", "keys/B/0.bin");
    CHECK(s && !d9_segment_revalidate(&ix, s));
    put("r/trace.0.bin", a); /* ... or A's again */
    put("r/.trace.0.bin.key", "keys/A/0.bin");
    CHECK(s && d9_segment_revalidate(&ix, s));

    d9_trace_index_free(&ix);
    d9_serve_selection_free(&sel);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0) fprintf(stderr, "warning: could not remove %s\n", root);
    return d9t_summary("test_serve_trace_index_key");
}
