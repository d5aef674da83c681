#include "sinks/step_symbolize.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbols/symbolize_file.h"
#include "symbols/symbolize_report.h"
#include "symbols/symbolizer.h"

struct d9_step_symbolize {
    d9_symbolizer *sym; /* created at the first file: its caches are costly */
    uint64_t max_file_size, max_growth;
};

d9_step_symbolize *d9_step_symbolize_new(uint64_t max_file_size, uint64_t max_growth) {
    d9_step_symbolize *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->max_file_size = max_file_size;
    s->max_growth = max_growth;
    return s;
}

void d9_step_symbolize_run(d9_step_symbolize *s, int dir_fd, const char *path, const d9_sym_input *symbols,
                           bool (*give_up)(void *), void *ctx) {
    d9_symbolize_report r = {0};
    if (!s->sym) {
        d9_sym_options opt = {.system_debug_dir = true};
        s->sym = d9_symbolizer_new(&opt);
    }
    d9_symbolize_stats st;
    char err[512] = "out of memory";
    memset(&st, 0, sizeof st);
    int rc = s->sym ? d9_symbolize_file_in_place(s->sym, dir_fd, path, symbols, s->max_file_size, s->max_growth, &st,
                                                 give_up, ctx, err, sizeof err)
                    : -1;
    if (rc != 0 && give_up(ctx)) {
        r.files_skipped = 1; /* out of time at stop: left unchanged */
    } else if (rc == 0) {
        r.files_symbolized = 1;
        r.no_room = st.no_room;
        r.addresses = st.addresses;
        r.named = st.named;
        r.entries = st.entries;
        r.bytes_appended = st.bytes;
        r.files_from_writer = st.from_writer;
        r.files_given_short = st.given_short;
    } else {
        r.files_failed = 1;
        snprintf(r.last_error, sizeof r.last_error, "%s", err);
    }
    d9_symbolize_report_add(&r);
}

void d9_step_symbolize_free(d9_step_symbolize *s) {
    if (!s) return;
    d9_symbolizer_free(s->sym);
    free(s);
}
