/* Text output of strings a trace holds: its bytes are the writer's, and a control character
 * (ESC starts a terminal's escape sequences, CR rewrites a line) printed raw would act on the
 * reader's terminal instead of being read. So text output shows them escaped, `\x1b`: the C0
 * controls, DEL and the C1 controls (U+0080..U+009F, UTF-8 c2 80..c2 9f; some terminals take
 * U+009B as ESC [). Other UTF-8 stays readable. JSON output is escaped by the JSON writer. */
#ifndef D9_CLI_TEXT_ESCAPE_H
#define D9_CLI_TEXT_ESCAPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* `s[0..len)` with every control character escaped (newline and tab too, as `\n`, `\t`,
 * when `lines` is false; as they are when true). */
void d9_put_escaped(FILE *out, const char *s, size_t len, bool lines);

/* A stream that writes to `out` what is written to it, its control characters escaped but
 * newlines and tabs (the layout of a report printed with printf). NULL when out of memory.
 * Closing it flushes it, not `out`. */
FILE *d9_escaping_stream(FILE *out);

#endif
