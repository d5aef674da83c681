/* `dial9 analyze` as text: the report section by section. */
#ifndef D9_CLI_ANALYZE_TEXT_H
#define D9_CLI_ANALYZE_TEXT_H

#include <stddef.h>

#include "analysis/analysis.h"
#include "cli/trace_reader.h"

typedef struct d9_analyze_render {
    const d9a_report *r;
    const d9a_options *opt;
    size_t nfiles;
    const d9_file_result *files;
    unsigned stack_depth;
} d9_analyze_render;

void d9_analyze_print_text(const d9_analyze_render *R);

#endif
