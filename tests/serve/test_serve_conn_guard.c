/* Who gets a connection slot of `dial9 serve` (src/serve/conn_guard.h), with socketpairs for
 * the connections so that what a shut-down client sees can be read: the per-address cap, the
 * slots reserved for addresses that hold none, and, with every slot taken, a new address
 * taking the slot of the connection that has waited longest for its request (silently before
 * its request line, 408 after), never one being answered. No time passes: the times are given. */
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "serve/conn_guard.h"

typedef struct client {
    int peer; /* the client's end */
    d9_conn *c;
} client;

static struct sockaddr_in addr(unsigned last) {
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(0x7f000000u | last);
    return a;
}

/* A connection from 127.0.0.last, started at now_ms; admitted or not. */
static bool connect_from(d9_guard *g, unsigned last, uint64_t now_ms, client *out) {
    struct sockaddr_in a = addr(last);
    if (!d9_guard_admit(g, (struct sockaddr *)&a, sizeof a)) return false;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return false;
    out->peer = sv[1];
    out->c = d9_guard_started(g, sv[0], NULL, (struct sockaddr *)&a, sizeof a, now_ms);
    return out->c != NULL;
}

/* What the client reads once the server's end is shut down: "" (closed silently), the status
 * line, or "open" when nothing was shut down. */
static const char *seen_by(const client *cl) {
    static char buf[512];
    ssize_t n = recv(cl->peer, buf, sizeof buf - 1, MSG_DONTWAIT);
    if (n < 0) return "open";
    buf[n] = '\0';
    char *eol = strstr(buf, "\r\n");
    if (eol) *eol = '\0';
    return buf;
}

static void close_all(d9_guard *g, client *cl, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (!cl[i].c) continue;
        close(cl[i].c->fd);
        close(cl[i].peer);
        d9_guard_closed(g, cl[i].c);
        cl[i].c = NULL;
    }
}

int main(void) {
    client cl[16] = {0};
    d9_guard g;

    /* 8 slots (the last one reserved), 3 per address */
    d9_guard_init(&g, 8, 3, 10000);
    CHECK_EQ_U64(g.lim.reserved, 1);
    for (unsigned i = 0; i < 3; i++) CHECK(connect_from(&g, 1, 100 + i, &cl[i]));
    CHECK(!connect_from(&g, 1, 110, &cl[15])); /* the cap per address */
    for (unsigned i = 3; i < 6; i++) CHECK(connect_from(&g, 2, 100 + i, &cl[i]));
    CHECK(connect_from(&g, 3, 106, &cl[6]));  /* 7 held: the 7th slot for an address holding some */
    CHECK(!connect_from(&g, 3, 107, &cl[15])); /* the 8th is reserved */
    CHECK(connect_from(&g, 4, 107, &cl[7]));   /* for a new address */
    CHECK_EQ_U64(g.refused, 2);
    for (unsigned i = 0; i < 8; i++) CHECK_STR(seen_by(&cl[i]), "open");

    /* every slot taken: a new address takes the oldest waiting one's (cl[0], silently) */
    CHECK(connect_from(&g, 5, 200, &cl[8]));
    CHECK_EQ_U64(g.taken, 1);
    CHECK_STR(seen_by(&cl[0]), "");
    CHECK(cl[0].c->state == D9_CONN_REJECTED);
    for (unsigned i = 1; i < 9; i++) CHECK_STR(seen_by(&cl[i]), "open");
    /* the next oldest has its request line in: it is answered 408; one being answered is skipped */
    d9_guard_request_received(cl[1].c); /* answering: never taken */
    d9_guard_request_line(cl[2].c);
    CHECK(connect_from(&g, 6, 201, &cl[9]));
    CHECK_STR(seen_by(&cl[1]), "open");
    CHECK_STR(seen_by(&cl[2]), "HTTP/1.1 408 Request Timeout");
    CHECK_EQ_U64(g.taken, 2);
    /* an address that holds some does not take a slot when all are taken */
    CHECK(!connect_from(&g, 5, 202, &cl[15]));
    CHECK_EQ_U64(g.taken, 2);
    close_all(&g, cl, 16);
    CHECK_EQ_U64(g.count, 0);

    /* all slots being answered: a new address is refused, nothing is taken */
    d9_guard_init(&g, 2, 16, 10000);
    CHECK(connect_from(&g, 1, 100, &cl[0]));
    CHECK(connect_from(&g, 2, 100, &cl[1]));
    d9_guard_request_received(cl[0].c);
    d9_guard_request_received(cl[1].c);
    CHECK(!connect_from(&g, 3, 101, &cl[2]));
    CHECK_EQ_U64(g.taken, 0);
    CHECK_STR(seen_by(&cl[0]), "open");
    CHECK_STR(seen_by(&cl[1]), "open");
    /* of those that started in the same ms, the one that started first gives up its slot */
    d9_guard_request_done(cl[0].c, 300);
    d9_guard_request_done(cl[1].c, 300);
    CHECK(connect_from(&g, 3, 301, &cl[2]));
    CHECK_STR(seen_by(&cl[0]), "");
    CHECK_STR(seen_by(&cl[1]), "open");
    uint64_t n;
    CHECK(d9_guard_taken_to_report(&g, 1000, &n));
    CHECK_EQ_U64(n, 1);
    CHECK(!d9_guard_taken_to_report(&g, 1500, &n)); /* nothing new */
    close_all(&g, cl, 16);

    return d9t_summary("test_serve_conn_guard");
}
