/* URLs and HTML for `dial9 serve`: percent-encoding, the API's trace and viewer URLs, HTML
 * escaping for the runs page and escaping for the log. */
#ifndef D9_SERVE_URL_H
#define D9_SERVE_URL_H

#include <stdio.h>

#include "serve/trace_index.h"

/* s with every byte but [A-Za-z0-9-._~] as %XX; malloc'ed, NULL when out of memory. */
char *d9_percent_encode(const char *s);
/* "/api/trace?run=R" for a whole run (seg NULL), with "&seg=N" (or "&file=NAME" for a file
 * without a segment number) for one segment. malloc'ed, NULL when out of memory. */
char *d9_trace_url(const char *run, const d9_segment *seg);
/* "/?trace=<the trace URL, encoded>": the viewer opening that trace. */
char *d9_viewer_url(const char *run, const d9_segment *seg);
/* s with & < > " ' escaped, written to out */
void d9_html_escape(FILE *out, const char *s);
/* s for a log line, written to out: printable ASCII as is, a backslash as \\, every other byte
 * (control characters such as a decoded %0a, non-ASCII) as \xNN, so that a request cannot
 * forge a line or send terminal escapes. At most max bytes of s, then "...". */
void d9_log_escape(FILE *out, const char *s, size_t max);

#endif
