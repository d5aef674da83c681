/* The server's routes:
 *   /            a short text answer, straight from the loop
 *   /work?ms=N   N ms of CPU on the loop thread (at most 1000), then the answer
 *   /file        the configured file, opened, read and closed with uv_fs_* on the thread pool
 *   /lookup      uv_getaddrinfo("localhost") on the thread pool
 * anything else is 404; methods other than GET are 405. */
#ifndef UV_SERVER_ROUTES_H
#define UV_SERVER_ROUTES_H

#include "http_conn.h"
#include "http_parse.h"

void route_request(http_conn *c, const http_request *req);

#endif
