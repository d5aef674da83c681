/* Connection admission and request deadlines for `dial9 serve` (see conn_guard.h). */
#include "serve/conn_guard.h"

#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

void d9_guard_init(d9_guard *g, unsigned max_connections, unsigned max_per_client, uint64_t request_timeout_ms) {
    memset(g, 0, sizeof *g);
    g->lim.max_connections = max_connections;
    g->lim.max_per_client = max_per_client;
    g->lim.reserved = max_connections / 8;
    if (g->lim.reserved == 0 && max_connections >= 2) g->lim.reserved = 1;
    g->lim.request_timeout_ms = request_timeout_ms;
}

/* The address without the port; IPv4-mapped IPv6 addresses count as the IPv4 one. */
static bool address_key(const struct sockaddr *a, socklen_t len, unsigned char key[16], unsigned char *key_len) {
    static const unsigned char v4_mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (a->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
        memcpy(key, &((const struct sockaddr_in *)a)->sin_addr, 4);
        *key_len = 4;
        return true;
    }
    if (a->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
        const unsigned char *b = ((const struct sockaddr_in6 *)a)->sin6_addr.s6_addr;
        if (!memcmp(b, v4_mapped, sizeof v4_mapped)) {
            memcpy(key, b + 12, 4);
            *key_len = 4;
        } else {
            memcpy(key, b, 16);
            *key_len = 16;
        }
        return true;
    }
    return false;
}

/* Connections from the address that hold a slot (not those shut down, on their way out). */
static unsigned from_address(const d9_guard *g, const unsigned char *key, unsigned char key_len) {
    unsigned n = 0;
    for (const d9_conn *c = g->head; c; c = c->next)
        n += c->state != D9_CONN_REJECTED && c->addr_len == key_len && !memcmp(c->addr, key, key_len);
    return n;
}

static unsigned holding_slots(const d9_guard *g) {
    unsigned n = 0;
    for (const d9_conn *c = g->head; c; c = c->next) n += c->state != D9_CONN_REJECTED;
    return n;
}

/* The connection that has waited longest for its request, or NULL when all are answered. The
 * list is newest first: of those that started in the same ms, the last one. */
static d9_conn *longest_waiting(const d9_guard *g) {
    d9_conn *best = NULL;
    for (d9_conn *c = g->head; c; c = c->next)
        if ((c->state == D9_CONN_WAITING || c->state == D9_CONN_HEADERS) && (!best || c->since_ms <= best->since_ms))
            best = c;
    return best;
}

bool d9_guard_admit(d9_guard *g, const struct sockaddr *addr, socklen_t len) {
    unsigned char key[16], key_len = 0;
    unsigned held = holding_slots(g);
    /* not an IP address: only the totals apply */
    unsigned mine = address_key(addr, len, key, &key_len) ? from_address(g, key, key_len) : 0;
    bool ok = mine < g->lim.max_per_client && (mine == 0 || held + g->lim.reserved < g->lim.max_connections);
    if (ok && held >= g->lim.max_connections) {
        d9_conn *slow = longest_waiting(g);
        if (slow) {
            d9_guard_reject(slow, slow->state == D9_CONN_HEADERS ? 408 : 0,
                            "dial9 serve: the request took too long to arrive, and a new client needed the slot\n");
            g->taken++;
        } else {
            ok = false;
        }
    }
    if (!ok) g->refused++;
    return ok;
}

d9_conn *d9_guard_started(d9_guard *g, int fd, void *mhd, const struct sockaddr *addr, socklen_t len,
                          uint64_t now_ms) {
    d9_conn *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->fd = fd;
    c->mhd = mhd;
    if (addr) address_key(addr, len, c->addr, &c->addr_len);
    c->state = D9_CONN_WAITING;
    c->since_ms = now_ms;
    c->next = g->head;
    if (g->head) g->head->prev = c;
    g->head = c;
    g->count++;
    return c;
}

void d9_guard_closed(d9_guard *g, d9_conn *c) {
    if (!c) return;
    if (c->prev) c->prev->next = c->next;
    else g->head = c->next;
    if (c->next) c->next->prev = c->prev;
    g->count--;
    free(c);
}

void d9_guard_request_line(d9_conn *c) {
    if (c && c->state == D9_CONN_WAITING) c->state = D9_CONN_HEADERS;
}

void d9_guard_request_received(d9_conn *c) {
    if (c && c->state != D9_CONN_REJECTED) c->state = D9_CONN_ANSWERING;
}

void d9_guard_request_done(d9_conn *c, uint64_t now_ms) {
    if (!c || c->state == D9_CONN_REJECTED) return;
    c->state = D9_CONN_WAITING;
    c->since_ms = now_ms;
}

static const char *reason_phrase(unsigned status) {
    switch (status) {
    case 400: return "Bad Request";
    case 408: return "Request Timeout";
    case 431: return "Request Header Fields Too Large";
    default: return "Error";
    }
}

void d9_guard_reject(d9_conn *c, unsigned status, const char *reason) {
    if (!c || c->state == D9_CONN_REJECTED || c->state == D9_CONN_ANSWERING) return;
    if (status) {
        char buf[512];
        int n = snprintf(buf, sizeof buf,
                         "HTTP/1.1 %u %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
                         "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
                         status, reason_phrase(status), strlen(reason), reason);
        /* nothing else is queued on a connection still receiving its request: this fits in the
           socket buffer; a client that does not read loses it, no harm */
        if (n > 0 && (size_t)n < sizeof buf) (void)!send(c->fd, buf, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
    }
    shutdown(c->fd, SHUT_RDWR); /* libmicrohttpd reads the end and closes the socket itself */
    c->state = D9_CONN_REJECTED;
}

unsigned d9_guard_expire(d9_guard *g, uint64_t now_ms, int64_t *next_ms) {
    unsigned n = 0;
    *next_ms = -1;
    for (d9_conn *c = g->head; c; c = c->next) {
        if (c->state != D9_CONN_WAITING && c->state != D9_CONN_HEADERS) continue;
        uint64_t deadline = c->since_ms + g->lim.request_timeout_ms;
        if (now_ms >= deadline) {
            d9_guard_reject(c, c->state == D9_CONN_HEADERS ? 408 : 0,
                            "dial9 serve: the request took too long to arrive\n");
            n++;
        } else if (*next_ms < 0 || (int64_t)(deadline - now_ms) < *next_ms) {
            *next_ms = (int64_t)(deadline - now_ms);
        }
    }
    return n;
}

bool d9_guard_taken_to_report(d9_guard *g, uint64_t now_ms, uint64_t *count) {
    if (g->taken == g->taken_reported || (g->last_taken_report_ms && now_ms - g->last_taken_report_ms < 1000))
        return false;
    *count = g->taken - g->taken_reported;
    g->taken_reported = g->taken;
    g->last_taken_report_ms = now_ms;
    return true;
}

bool d9_guard_refusals_to_report(d9_guard *g, uint64_t now_ms, uint64_t *count) {
    if (g->refused == g->refused_reported || (g->last_report_ms && now_ms - g->last_report_ms < 1000))
        return false;
    *count = g->refused - g->refused_reported;
    g->refused_reported = g->refused;
    g->last_report_ms = now_ms;
    return true;
}
