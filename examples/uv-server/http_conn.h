/* One client connection: reads requests (keep-alive, pipelined), hands each to the router in
 * order, writes the responses. A route may answer later (thread-pool work): the connection
 * then holds further requests until that answer is written. */
#ifndef UV_SERVER_HTTP_CONN_H
#define UV_SERVER_HTTP_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

#include "server_loop.h"

typedef struct http_conn http_conn;

/* Accept a pending connection on `owner`'s listener and start reading it. */
void http_conn_accept(server_loop *owner);

/* Is `h` a connection's handle (as opposed to the listener or the stop handle)? */
bool http_conn_owns_handle(const uv_handle_t *h);

/* Close the connection (from uv_walk at shutdown); pending answers are dropped. */
void http_conn_close(uv_handle_t *h);

server_loop *http_conn_owner(const http_conn *c);

/* Send a complete response. Ignored once the connection is closing. */
void http_conn_respond(http_conn *c, int status, const char *content_type, const char *body,
                       size_t body_len);

/* A route that answers later calls begin before returning and end after its respond: the
 * connection stays allocated in between, even if the client goes away. */
void http_conn_begin_async(http_conn *c);
void http_conn_end_async(http_conn *c);

#endif
