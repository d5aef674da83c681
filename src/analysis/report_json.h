/* The analysis report as one JSON object: `dial9 analyze --json` (schema: docs/analyze.md). */
#ifndef D9_ANALYSIS_REPORT_JSON_H
#define D9_ANALYSIS_REPORT_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis/analysis.h"

/* One input file as the report lists it. */
typedef struct d9a_input_file {
    const char *path;
    const char *status;  /* "ok", "truncated", "error", ... */
    const char *message; /* "" when the file was read whole */
    uint64_t events;
} d9a_input_file;

void d9a_report_write_json(FILE *out, const d9a_report *r, const d9a_options *opt,
                           const d9a_input_file *files, size_t nfiles);

#endif
