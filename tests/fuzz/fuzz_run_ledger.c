/* The ledger of settled runs (src/sinks/run_ledger.c) on arbitrary text: it lies in the trace
 * directory, where anyone who can write there can put anything. Never reads past the text
 * (ASan); every run it accepts has a name that stays inside the trace directory (no '/', not
 * "." or "..") and kinds it knows (retention deletes the files it names); the lookup by name
 * finds each name's last line; written back, the accepted runs parse to the same runs. */
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size ? size : 1); /* exactly the input: ASan sees any read past it */
    if (!text) return 0;
    memcpy(text, data, size);
    d9_ledger l = {0};
    if (!d9_ledger_parse(&l, text, size)) {
        free(text);
        return 0;
    }
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
