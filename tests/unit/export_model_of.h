/* The export model of a hand-built trace in memory, for the export and attribution tests that
 * build their traces with test_analysis_builder.h: decoded to the end, every event added, then
 * finished over the window W (NULL: the whole trace). NULL, with the reason on stderr, when the
 * trace does not decode or finish. Header-only: each test is one program. */
#ifndef D9_TESTS_EXPORT_MODEL_OF_H
#define D9_TESTS_EXPORT_MODEL_OF_H

#include <stdio.h>

#include "check.h"
#include "export/export_model.h"
#include "format/decoder.h"
#include "format/encoder.h"

static inline d9_xmodel *d9t_xmodel_of(const d9_buf *b, const d9_xwindow *w) {
    char err[256];
    d9_decoder *d = d9_dec_open_mem(b->data, b->len, NULL, err, sizeof err);
    if (!d) return NULL;
    d9_xmodel *m = d9_xmodel_new();
    d9_event ev;
    while (m && d9_dec_next(d, &ev) > 0) CHECK(d9_xmodel_add(m, &ev) == 0);
    CHECK(d9_dec_state(d) == D9_DEC_END);
    d9_dec_close(d);
    if (m && d9_xmodel_finish(m, w, err, sizeof err) != 0) {
        fprintf(stderr, "finish: %s\n", err);
        d9_xmodel_free(m);
        return NULL;
    }
    return m;
}

#endif
