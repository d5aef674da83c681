/* A memory-mode dump's symbols (step_dump_symbolize.h). */
#include "sinks/step_dump_symbolize.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbols/symbolize_file.h"
#include "symbols/symbolizer.h"

#define MAX_GROWTH (64ull << 20) /* names a segment may gain: far above any real one's */

struct d9_dump_symbolizer {
    d9_symbolizer *sym; /* made at the first segment: its caches are costly */
};

d9_dump_symbolizer *d9_dump_symbolizer_new(void) { return calloc(1, sizeof(d9_dump_symbolizer)); }

void d9_dump_symbolizer_free(d9_dump_symbolizer *s) {
    if (!s) return;
    d9_symbolizer_free(s->sym);
    free(s);
}

void d9_dump_symbolize_segment(d9_dump_symbolizer *s, int dir_fd, const char *name, const d9_sym_input *listed,
                               bool (*give_up)(void *), void *ctx, d9_dump_symbols *acc) {
    if (!listed || listed->oom) { /* reading 100s of MB back would hold up the dump: left for later */
        acc->unlisted++;
        return;
    }
    if (!s->sym) {
        d9_sym_options opt = {.system_debug_dir = true};
        s->sym = d9_symbolizer_new(&opt);
    }
    d9_symbolize_stats st;
    char err[512] = "out of memory";
    int rc = s->sym ? d9_symbolize_file_in_place(s->sym, dir_fd, name, listed, 0, MAX_GROWTH, &st, give_up, ctx, err,
                                                 sizeof err)
                    : -1;
    if (rc != 0) {
        acc->failed++;
        snprintf(acc->last_error, sizeof acc->last_error, "%.190s", err);
        return;
    }
    acc->segments++;
    acc->addresses += st.addresses;
    acc->named += st.named;
}

void d9_dump_segment_symbols_free(d9_sym_input *listed) { d9_sym_input_destroy(listed); }
