#include "http_parse.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The end of the head ("\r\n\r\n"), or NULL when it has not arrived yet. */
static const char *find_head_end(const char *buf, size_t len) {
    return memmem(buf, len, "\r\n\r\n", 4);
}

/* Copy [from, to) into dst (size cap), NUL-terminated; false when it does not fit. */
static bool copy_token(char *dst, size_t cap, const char *from, const char *to) {
    size_t n = (size_t)(to - from);
    if (n == 0 || n >= cap) return false;
    memcpy(dst, from, n);
    dst[n] = '\0';
    return true;
}

/* Does the comma-separated header value [v, end) contain `token` (case-insensitive)? */
static bool value_has_token(const char *v, const char *end, const char *token) {
    size_t tlen = strlen(token);
    while (v < end) {
        while (v < end && (*v == ' ' || *v == '\t' || *v == ',')) v++;
        const char *start = v;
        while (v < end && *v != ',') v++;
        const char *stop = v;
        while (stop > start && (stop[-1] == ' ' || stop[-1] == '\t')) stop--;
        if ((size_t)(stop - start) == tlen && strncasecmp(start, token, tlen) == 0) return true;
    }
    return false;
}

http_parse_result http_parse_request(const char *buf, size_t len, http_request *req) {
    const char *head_end = find_head_end(buf, len);
    if (!head_end) return HTTP_PARSE_INCOMPLETE;

    /* Request line: METHOD SP TARGET SP HTTP/1.x CRLF */
    const char *line_end = memchr(buf, '\r', (size_t)(head_end - buf) + 1);
    const char *sp1 = memchr(buf, ' ', (size_t)(line_end - buf));
    if (!sp1) return HTTP_PARSE_BAD;
    const char *sp2 = memchr(sp1 + 1, ' ', (size_t)(line_end - sp1 - 1));
    if (!sp2) return HTTP_PARSE_BAD;
    if (!copy_token(req->method, sizeof req->method, buf, sp1)) return HTTP_PARSE_BAD;
    if (!copy_token(req->target, sizeof req->target, sp1 + 1, sp2)) return HTTP_PARSE_BAD;
    const char *version = sp2 + 1;
    size_t vlen = (size_t)(line_end - version);
    bool http11;
    if (vlen == 8 && memcmp(version, "HTTP/1.1", 8) == 0) http11 = true;
    else if (vlen == 8 && memcmp(version, "HTTP/1.0", 8) == 0) http11 = false;
    else return HTTP_PARSE_BAD;

    /* Header fields: only Connection and Content-Length matter here. */
    bool close = false, keep_alive = false;
    unsigned long long body = 0;
    const char *p = line_end + 2;
    while (p < head_end + 2) {
        const char *eol = memmem(p, (size_t)(head_end + 2 - p), "\r\n", 2);
        if (!eol) break;
        const char *colon = memchr(p, ':', (size_t)(eol - p));
        if (!colon) return HTTP_PARSE_BAD;
        size_t nlen = (size_t)(colon - p);
        const char *v = colon + 1;
        if (nlen == 10 && strncasecmp(p, "Connection", 10) == 0) {
            close |= value_has_token(v, eol, "close");
            keep_alive |= value_has_token(v, eol, "keep-alive");
        } else if (nlen == 14 && strncasecmp(p, "Content-Length", 14) == 0) {
            while (v < eol && (*v == ' ' || *v == '\t')) v++;
            if (v == eol || !isdigit((unsigned char)*v)) return HTTP_PARSE_BAD;
            char *num_end;
            body = strtoull(v, &num_end, 10);
            if (body > (1u << 20)) return HTTP_PARSE_BAD; /* no large uploads on this server */
        } else if (nlen == 17 && strncasecmp(p, "Transfer-Encoding", 17) == 0) {
            return HTTP_PARSE_BAD; /* chunked bodies are not supported */
        }
        p = eol + 2;
    }

    size_t head_len = (size_t)(head_end + 4 - buf);
    if (len - head_len < body) return HTTP_PARSE_INCOMPLETE;
    req->keep_alive = http11 ? !close : keep_alive;
    req->length = head_len + (size_t)body;
    return HTTP_PARSE_OK;
}

bool http_path_is(const http_request *req, const char *path) {
    size_t n = strcspn(req->target, "?");
    return strlen(path) == n && memcmp(req->target, path, n) == 0;
}

long http_query_long(const http_request *req, const char *name, long fallback) {
    const char *q = strchr(req->target, '?');
    size_t nlen = strlen(name);
    while (q) {
        q++;
        if (strncmp(q, name, nlen) == 0 && q[nlen] == '=') {
            char *end;
            long v = strtol(q + nlen + 1, &end, 10);
            if (end != q + nlen + 1 && (*end == '\0' || *end == '&')) return v;
            return fallback;
        }
        q = strchr(q, '&');
    }
    return fallback;
}
