/* `dial9 diff`'s outputs: the text (diff_text.c) and the JSON of docs/diff.md (diff_json.c,
 * schema "dial9.diff" version 1). */
#ifndef D9_ANALYSIS_DIFF_RENDER_H
#define D9_ANALYSIS_DIFF_RENDER_H

#include <stdbool.h>
#include <stdio.h>

#include "analysis/diff.h"
#include "analysis/diff_fail_on.h"

/* What --fail-on found, for both outputs (f NULL: not given). */
typedef struct d9d_gate {
    const d9d_fail_on *f;
    bool broken[D9D_FAIL_ITEMS];
    char why[D9D_FAIL_ITEMS][256];
    size_t nbroken;
} d9d_gate;

#define D9D_JSON_VERSION 1

/* At most `top` rows (0: all), in rank order. */
void d9d_print_text(FILE *out, const d9d_diff *d, size_t top, const d9d_gate *g);
void d9d_print_json(FILE *out, const d9d_diff *d, const d9d_gate *g);

const char *d9d_mode_name(d9d_mode m); /* "runs", "windows", "slowest" */

#endif
