/* The ledger of settled runs (src/sinks/run_ledger.c) on arbitrary text: it lies in the trace
 * directory, where anyone who can write there can put anything. Never reads past its copy of
 * the text and the zero bytes after it (ASan); every run it accepts has a name that stays inside
 * the trace directory (no '/', not "." or "..") and kinds it knows (retention deletes the files
 * it names); the lookup by name finds each name's last line; written back, the accepted runs
 * parse to the same runs. And it agrees, line by line, with the format read byte by byte (what
 * the word-wise parse replaced). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/segment_name.h"
#include "sinks/run_ledger.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool same_run(const d9_ledger *la, const d9_ledger_run *a, const d9_ledger *lb, const d9_ledger_run *b) {
    if (strcmp(a->name, b->name) != 0 || a->dir_mtime_ns != b->dir_mtime_ns || a->nfiles != b->nfiles) return false;
    const d9_ledger_file *fa = d9_ledger_files(la, a), *fb = d9_ledger_files(lb, b);
    for (size_t i = 0; i < a->nfiles; i++)
        if (fa[i].seq != fb[i].seq || fa[i].kind != fb[i].kind || fa[i].size != fb[i].size ||
            fa[i].mtime_ns != fb[i].mtime_ns)
            return false;
    return true;
}

/* ------------------------------------------------------------------ the format, byte by byte */

typedef struct ref_cursor {
    const char *p, *end;
} ref_cursor;

static bool ref_char(ref_cursor *c, char ch) {
    if (c->p >= c->end || *c->p != ch) return false;
    c->p++;
    return true;
}

static bool ref_u64(ref_cursor *c, uint64_t *out) {
    const char *start = c->p;
    uint64_t v = 0;
    for (; c->p < c->end && *c->p >= '0' && *c->p <= '9'; c->p++) {
        unsigned d = (unsigned)(*c->p - '0');
        if (v > (UINT64_MAX - d) / 10) return false;
        v = v * 10 + d;
    }
    *out = v;
    return c->p > start && c->p - start <= 20;
}

static bool ref_i64(ref_cursor *c, int64_t *out) {
    bool neg = ref_char(c, '-');
    uint64_t v;
    if (!ref_u64(c, &v) || v > (uint64_t)INT64_MAX) return false;
    *out = neg ? -(int64_t)v : (int64_t)v;
    return true;
}

/* Whether the run line [p, end) is good, and then whether run r (of l) holds what it says: the
 * name a copy of its field holds (up to a NUL), its mtime and files. */
static bool ref_line_matches(const char *p, const char *end, const d9_ledger *l, const d9_ledger_run *r) {
    ref_cursor c = {p, end};
    if (!ref_char(&c, 'r') || !ref_char(&c, ' ')) return r == NULL;
    const char *name = c.p;
    while (c.p < c.end && *c.p != ' ') c.p++;
    size_t len = 0;
    while (name + len < c.p && name[len]) len++;
    bool good = len > 0 && len <= 255 && !(len == 1 && name[0] == '.') &&
                !(len == 2 && name[0] == '.' && name[1] == '.');
    for (size_t i = 0; i < len; i++)
        good &= (unsigned char)name[i] > ' ' && name[i] != 0x7f && name[i] != '/';
    int64_t mtime;
    uint64_t count;
    good = good && ref_char(&c, ' ') && ref_i64(&c, &mtime) && ref_char(&c, ' ') && ref_u64(&c, &count) &&
           count <= 100000;
    if (good && r && (strlen(r->name) != len || memcmp(r->name, name, len) != 0 || r->dir_mtime_ns != mtime ||
                      r->nfiles != count))
        return false;
    const d9_ledger_file *files = r ? d9_ledger_files(l, r) : NULL;
    for (uint64_t i = 0; good && i < count; i++) {
        uint64_t seq, kind, size;
        int64_t fmtime;
        good = ref_char(&c, ' ') && ref_u64(&c, &seq) && ref_char(&c, '.') && ref_u64(&c, &kind) &&
               kind < D9_SEGMENT_KINDS && ref_char(&c, '.') && ref_u64(&c, &size) && ref_char(&c, '.') &&
               ref_i64(&c, &fmtime);
        if (good && r && (files[i].seq != seq || files[i].kind != kind || files[i].size != size ||
                          files[i].mtime_ns != fmtime))
            return false;
    }
    good = good && c.p == c.end;
    return good == (r != NULL);
}

/* Every line of text against the runs l took from it (in line order), and the "v" lines'
 * latest time. */
static bool matches_reference(const char *text, size_t size, const d9_ledger *l) {
    const char *p = text, *end = text + size;
    size_t line = 0, k = 0;
    int64_t verified = 0;
    for (const char *nl; p < end && (nl = memchr(p, '\n', (size_t)(end - p))) != NULL; p = nl + 1, line++) {
        ref_cursor c = {p, nl};
        int64_t v;
        if (ref_char(&c, 'v') && ref_char(&c, ' ') && ref_i64(&c, &v) && v > 0 && c.p == c.end) {
            if (v > verified) verified = v;
            continue;
        }
        const d9_ledger_run *r = k < l->n && l->runs[k].line == line ? &l->runs[k] : NULL;
        if (!ref_line_matches(p, nl, l, r)) return false;
        k += r != NULL;
    }
    return k == l->n && line == l->lines && verified == l->verified_ns;
}

/* ------------------------------------------------------------------ the target */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size ? size : 1); /* exactly the input: ASan sees any read past it */
    if (!text) return 0;
    memcpy(text, data, size);
    d9_ledger l = {0};
    if (!d9_ledger_parse(&l, text, size)) {
        free(text);
        return 0;
    }
    if (!matches_reference(text, size, &l)) abort();
    d9_ledger_out o = {0};
    for (size_t i = 0; i < l.n; i++) {
        const d9_ledger_run *r = &l.runs[i];
        if (!d9_ledger_name_ok(r->name) || strchr(r->name, '/') || !strcmp(r->name, ".") || !strcmp(r->name, ".."))
            abort();
        const d9_ledger_file *files = d9_ledger_files(&l, r);
        for (size_t f = 0; f < r->nfiles; f++)
            if (files[f].kind >= D9_SEGMENT_KINDS) abort();
        const d9_ledger_run *latest = d9_ledger_latest(&l, r->name); /* the name's last line */
        if (!latest || strcmp(latest->name, r->name) != 0 || latest->line < r->line) abort();
        d9_ledger_add(&o, r->name, r->dir_mtime_ns, files, r->nfiles);
    }
    if (!o.failed) {
        d9_ledger back = {0};
        if (d9_ledger_parse(&back, o.buf ? o.buf : "", o.len)) {
            if (back.n != l.n) abort();
            for (size_t i = 0; i < l.n; i++) {
                bool found = false;
                for (size_t j = 0; j < back.n; j++) found |= same_run(&back, &back.runs[j], &l, &l.runs[i]);
                if (!found) abort();
            }
        }
        d9_ledger_free(&back);
    }
    free(o.buf);
    d9_ledger_free(&l);
    free(text);
    return 0;
}
