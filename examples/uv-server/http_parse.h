/* Just enough HTTP/1.1 request parsing for the demo server: the request line, whether the
 * connection stays open, and how many bytes the request takes (a body announced with
 * Content-Length is skipped). No allocation: the caller owns the buffer. */
#ifndef UV_SERVER_HTTP_PARSE_H
#define UV_SERVER_HTTP_PARSE_H

#include <stdbool.h>
#include <stddef.h>

typedef struct http_request {
    char method[16];
    char target[512];   /* path and query, as sent ("/work?ms=15") */
    bool keep_alive;    /* HTTP/1.1 unless "Connection: close"; HTTP/1.0 only with keep-alive */
    size_t length;      /* bytes of the request in the buffer: head and body */
} http_request;

typedef enum http_parse_result {
    HTTP_PARSE_INCOMPLETE = 0, /* need more bytes */
    HTTP_PARSE_OK = 1,
    HTTP_PARSE_BAD = -1,       /* malformed, or a field too long for this server */
} http_parse_result;

/* Parse the request at the start of buf[0..len). */
http_parse_result http_parse_request(const char *buf, size_t len, http_request *req);

/* The target without its query string compared with `path`: "/work?ms=3" matches "/work". */
bool http_path_is(const http_request *req, const char *path);

/* The integer value of query parameter `name` ("/work?ms=15" -> 15), or `fallback` when the
 * parameter is absent or not a number. */
long http_query_long(const http_request *req, const char *name, long fallback);

#endif
