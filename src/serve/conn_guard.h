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
 *     client gets in even when a few addresses fill the rest;
 *   - when every slot is taken, a new client from an address that holds none takes the slot
 *     of the connection that has waited longest for its request (closed as at its deadline),
 *     so that many addresses that each trickle a request cannot keep a new client waiting
 *     for their deadlines (120 of them: 4.5-5 s). Connections being answered are never
 *     taken; when all are, the new client is refused. libmicrohttpd's own limit is set above
 *     max_connections (D9_GUARD_HEADROOM) so that it accepts the connection that decides.
 *
 * Used from the server's one thread: libmicrohttpd's callbacks call the d9_guard_* hooks and
 * the event loop calls d9_guard_expire between its rounds, so a connection is never shut
 * down while libmicrohttpd might be closing it. (d9_guard_admit shuts one down from the
 * accept policy callback: libmicrohttpd closes none meanwhile, and a connection's fd stays
 * open until its close is notified, d9_guard_closed.) */
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

/* Connections libmicrohttpd may hold beyond max_connections: those taken by new clients
 * (shut down, closed by libmicrohttpd in its next round; it accepts at most 10 a round). */
#define D9_GUARD_HEADROOM 16

typedef struct d9_guard {
    d9_guard_limits lim;
    d9_conn *head;
    unsigned count;
    /* refusals and connections taken for new clients, reported at most once a second */
    uint64_t refused, refused_reported, last_report_ms;
    uint64_t taken, taken_reported, last_taken_report_ms;
} d9_guard;

/* The reserve is max_connections / 8 (at least 1 when there are 2 slots or more). */
void d9_guard_init(d9_guard *g, unsigned max_connections, unsigned max_per_client, uint64_t request_timeout_ms);

/* libmicrohttpd's accept policy: whether a connection from addr may start (it may take the
 * slot of the connection that waited longest for its request, see above). */
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
/* The same for connections closed to make room for a new client. */
bool d9_guard_taken_to_report(d9_guard *g, uint64_t now_ms, uint64_t *count);

#endif
