/* Folded stacks, one line per distinct stack: "root;caller;leaf COUNT", the input of
 * flamegraph.pl, inferno, speedscope and the Perfetto UI. Frames are symbol names (one per
 * inline level) or "0x..." for addresses the trace has no symbol for. Options: which samples
 * (CPU, off-CPU or both: then each stack is rooted at "[cpu]" or "[off-cpu]"), and
 * --by-location, which roots each stack at the spawn location of the poll the sample hit, and
 * --by-cause, which roots each off-CPU stack at the cause of its interval ("[lock]", "[io]",
 * "[sleep]", "[fault]", "[blocked_other]", "[runnable]": model/attribution.h).
 * Lines come out sorted, so the output is stable. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/string_table.h"
#include "export/export.h"

typedef struct line_buf {
    char *s;
    size_t len, cap;
} line_buf;

static bool line_put(line_buf *l, const char *s, size_t n) {
    if (l->len + n + 1 > l->cap) {
        size_t cap = l->cap ? l->cap : 1024;
        while (l->len + n + 1 > cap) cap *= 2;
        char *p = realloc(l->s, cap);
        if (!p) return false;
        l->s = p;
        l->cap = cap;
    }
    memcpy(l->s + l->len, s, n);
    l->len += n;
    l->s[l->len] = '\0';
    return true;
}

/* A frame name as the folded format can carry it: ';' separates frames and the line ends
 * with " COUNT", so ';' becomes ':' and line breaks become spaces. */
static bool line_frame(line_buf *l, const char *name) {
    if (l->len && !line_put(l, ";", 1)) return false;
    size_t start = l->len;
    if (!line_put(l, name, strlen(name))) return false;
    for (size_t i = start; i < l->len; i++) {
        if (l->s[i] == ';') l->s[i] = ':';
        else if (l->s[i] == '\n' || l->s[i] == '\r') l->s[i] = ' ';
    }
    return true;
}

typedef struct folded_line {
    const char *text;
    uint64_t count;
} folded_line;

static int cmp_line(const void *a, const void *b) {
    return strcmp(((const folded_line *)a)->text, ((const folded_line *)b)->text);
}

int d9_export_folded(const d9_xmodel *m, const d9_xopts *o, FILE *out, char *err, size_t errlen) {
    unsigned stacks = o && o->stacks ? o->stacks : D9_XSTACKS_CPU;
    bool by_location = o && o->by_location;
    d9_string_table lines = {0};
    uint64_t *counts = NULL;
    size_t counts_cap = 0;
    uint32_t *frames = NULL;
    size_t frames_cap = 0;
    line_buf l = {0};
    folded_line *sorted = NULL;
    int rc = D9_XWRITE_OK;
    char where[64];
    for (size_t i = 0; i < m->sample_count; i++) {
        const d9_xsample *s = &m->samples[i];
        if (!d9_xsample_selected(s, stacks)) continue;
        long n = d9_xsample_frames(m, s, &frames, &frames_cap);
        if (n < 0) goto oom;
        l.len = 0;
        bool ok = true;
        if (by_location) ok = line_frame(&l, d9_xsample_where(m, s, where, sizeof where));
        if (ok && o && o->by_cause && s->source == D9_XSAMPLE_OFFCPU && m->sample_cause) {
            char cause[32];
            snprintf(cause, sizeof cause, "[%s]", d9m_part_names[m->sample_cause[i]]);
            ok = line_frame(&l, cause);
        } else if (ok && stacks == D9_XSTACKS_ALL) {
            ok = line_frame(&l, s->source == D9_XSAMPLE_OFFCPU ? "[off-cpu]" : "[cpu]");
        }
        for (long k = 0; ok && k < n; k++) ok = line_frame(&l, d9_xm_str(m, m->frames[frames[k]].name));
        if (!ok) goto oom;
        if (l.len == 0 && !line_frame(&l, "[empty stack]")) goto oom;
        d9_string_entry *e = d9_string_table_get(&lines, l.s);
        if (!e) goto oom;
        if (e->index >= counts_cap) {
            size_t cap = counts_cap ? counts_cap * 2 : 256;
            uint64_t *p = realloc(counts, cap * sizeof *p);
            if (!p) goto oom;
            memset(p + counts_cap, 0, (cap - counts_cap) * sizeof *p);
            counts = p;
            counts_cap = cap;
        }
        counts[e->index]++;
    }
    sorted = malloc((lines.hs.count + 1) * sizeof *sorted);
    if (!sorted) goto oom;
    for (size_t i = 0; i < lines.hs.cap; i++) {
        const d9_string_entry *e = lines.hs.slots[i];
        if (e) sorted[e->index] = (folded_line){e->str, counts[e->index]};
    }
    qsort(sorted, lines.hs.count, sizeof *sorted, cmp_line);
    for (size_t i = 0; i < lines.hs.count; i++) fprintf(out, "%s %" PRIu64 "\n", sorted[i].text, sorted[i].count);
    if (fflush(out) != 0 || ferror(out)) {
        snprintf(err, errlen, "write error");
        rc = D9_XWRITE_ERROR;
    }
    goto done;
oom:
    snprintf(err, errlen, "out of memory while writing folded stacks");
    rc = D9_XWRITE_ERROR;
done:
    free(sorted);
    free(l.s);
    free(frames);
    free(counts);
    d9_string_table_free(&lines);
    return rc;
}
