/* Who may hold a connection of `dial9 serve`, and for how long it may take to send its
 * request (issue 11, item 2: slow clients must not lock everybody out).
 *
 *   - a whole request (request line and headers) must arrive within request_timeout of the
 *     connection's start, or of the end of the previous request on a kept-alive connection:
 *     unlike libmicrohttpd's idle timeout, trickling a byte now and then does not extend it.
 *     A connection past it is answered 408 and closed when its request line has arrived, and
 *     closed silently otherwise (an idle keep-alive or a browser's unused pre-connection);
 *   - one client address holds at most max_per_client connections;
 *   - the last `reserved` connection slots go only to addresses that hold none, so a new
 *     client gets in even when a few addresses fill the rest.
 *
 * Used from the server's one thread: libmicrohttpd's callbacks call the d9_guard_* hooks and
 * the event loop calls d9_guard_expire between its rounds, so a connection is never shut
 * down while libmicrohttpd might be closing it. */
#ifndef D9_SERVE_CONN_GUARD_H
#define D9_SERVE_CONN_GUARD_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

typedef enum d9_conn_state {
    D9_CONN_WAITING,   /* for a request line */
    D9_CONN_HEADERS,   /* request line received, headers coming */
    D9_CONN_ANSWERING, /* request complete: no deadline (a download may take long) */
    D9_CONN_REJECTED,  /* answered and shut down by the guard, libmicrohttpd closes it */
} d9_conn_state;

typedef struct d9_conn {
    struct d9_conn *prev, *next;
    int fd;
    void *mhd;            /* its struct MHD_Connection */
    unsigned char addr[16];
    unsigned char addr_len; /* 4 or 16 */
    d9_conn_state state;
    uint64_t since_ms;    /* start of the request being received */
} d9_conn;

typedef struct d9_guard_limits {
    unsigned max_connections; /* in all */
    unsigned max_per_client;  /* from one address */
    unsigned reserved;        /* of max_connections, for addresses that hold none */
    uint64_t request_timeout_ms;
} d9_guard_limits;

typedef struct d9_guard {
    d9_guard_limits lim;
    d9_conn *head;
    unsigned count;
    /* refusals, reported at most once a second */
    uint64_t refused, refused_reported, last_report_ms;
} d9_guard;

/* The reserve is max_connections / 8 (at least 1 when there are 2 slots or more). */
void d9_guard_init(d9_guard *g, unsigned max_connections, unsigned max_per_client, uint64_t request_timeout_ms);

/* libmicrohttpd's accept policy: whether a connection from addr may start. */
bool d9_guard_admit(d9_guard *g, const struct sockaddr *addr, socklen_t len);

/* A connection started (NULL when out of memory: the caller closes it), closed, or moved on. */
d9_conn *d9_guard_started(d9_guard *g, int fd, void *mhd, const struct sockaddr *addr, socklen_t len,
                          uint64_t now_ms);
void d9_guard_closed(d9_guard *g, d9_conn *c);
void d9_guard_request_line(d9_conn *c);
void d9_guard_request_received(d9_conn *c);
void d9_guard_request_done(d9_conn *c, uint64_t now_ms);

/* Answer `status` (a short text/plain body), shut the connection down so that libmicrohttpd
 * closes it, and forget its deadline. Only for a connection whose request has not been
 * answered yet (nothing of a response was sent). */
void d9_guard_reject(d9_conn *c, unsigned status, const char *reason);

/* Rejects every connection past its deadline; the number of them, and in *next_ms the time
 * until the next deadline (-1: none). */
unsigned d9_guard_expire(d9_guard *g, uint64_t now_ms, int64_t *next_ms);

/* Whether refusals happened since the last report, at most once per second: then *count is
 * how many. */
bool d9_guard_refusals_to_report(d9_guard *g, uint64_t now_ms, uint64_t *count);

#endif
