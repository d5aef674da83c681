/* URL and HTML helpers of `dial9 serve` (see url.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* asprintf */
#endif
#include "serve/url.h"

#include <stdlib.h>
#include <string.h>

char *d9_percent_encode(const char *s) {
    static const char hex[] = "0123456789ABCDEF";
    size_t n = strlen(s);
    char *out = malloc(3 * n + 1), *p = out;
    if (!out) return NULL;
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if ((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
            *c == '-' || *c == '.' || *c == '_' || *c == '~') {
            *p++ = (char)*c;
        } else {
            *p++ = '%';
            *p++ = hex[*c >> 4];
            *p++ = hex[*c & 15];
        }
    }
    *p = '\0';
    return out;
}

char *d9_trace_url(const char *run, const d9_segment *seg) {
    char *r = d9_percent_encode(run), *url = NULL, *f = NULL;
    if (!r) return NULL;
    int rc;
    if (!seg) rc = asprintf(&url, "/api/trace?run=%s", r);
    else if (seg->number >= 0) rc = asprintf(&url, "/api/trace?run=%s&seg=%lld", r, seg->number);
    else if ((f = d9_percent_encode(seg->name))) rc = asprintf(&url, "/api/trace?run=%s&file=%s", r, f);
    else rc = -1;
    free(r);
    free(f);
    return rc < 0 ? NULL : url;
}

char *d9_viewer_url(const char *run, const d9_segment *seg) {
    char *t = d9_trace_url(run, seg), *e = t ? d9_percent_encode(t) : NULL, *url = NULL;
    if (e && asprintf(&url, "/?trace=%s", e) < 0) url = NULL;
    free(t);
    free(e);
    return url;
}

void d9_html_escape(FILE *out, const char *s) {
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&#39;", out); break;
        default: fputc(*s, out);
        }
    }
}

void d9_log_escape(FILE *out, const char *s, size_t max) {
    size_t i = 0;
    for (; s[i] && i < max; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\\') fputs("\\\\", out);
        else if (c >= 0x20 && c < 0x7f) fputc(c, out);
        else fprintf(out, "\\x%02x", c);
    }
    if (s[i]) fputs("...", out);
}
