/* Helper of tests/scripts/test_serve_slowloris.sh: slow clients against `dial9 serve` (issue
 * 11, item 2), all on loopback.
 *
 *   d9s_slow_clients PORT SOURCES N HOLD_S PROBE_FROM PROBE_WAIT_S [line|headers|silent]
 *
 * Opens N connections from each source address (comma-separated, e.g. 127.0.0.1,127.0.0.3;
 * all of 127.0.0.0/8 is loopback) that send a request slowly: "line" trickles the request
 * line itself one byte every 300 ms, "headers" (the default) sends the request line and then
 * one header line every 300 ms, "silent" sends nothing. Then a probe from PROBE_FROM sends a
 * whole GET /api/index and waits up to PROBE_WAIT_S for its status line, while the others
 * keep trickling. Runs until HOLD_S seconds after the start or until every slow connection is
 * closed, and prints what happened:
 *
 *   probe: answered HTTP 200            (or: probe: no answer within N s)
 *   source 127.0.0.1: 24 opened, 16 open at the end, 8 closed, 0 answered 408
 *   slow: 96 opened, 56 open at the end
 *
 * "closed" counts connections the server closed; "answered 408" those that received a 408
 * before the close. The verdicts are the calling script's. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_SOURCES 16
#define MAX_SLOW 1024
#define TRICKLE_MS 300

typedef struct slow {
    int fd;
    int source;
    size_t sent;   /* bytes of the request line sent ("line" mode) */
    unsigned lines; /* header lines sent */
    bool closed, got_408;
} slow;

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* A blocking TCP connection from `from` to 127.0.0.1:port, or -1. */
static int connect_from(const char *from, unsigned port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    struct sockaddr_in src = {.sin_family = AF_INET}, dst = {.sin_family = AF_INET};
    dst.sin_port = htons((uint16_t)port);
    dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (inet_pton(AF_INET, from, &src.sin_addr) != 1 || bind(fd, (struct sockaddr *)&src, sizeof src) != 0 ||
        connect(fd, (struct sockaddr *)&dst, sizeof dst) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static const char request_line[] = "GET /api/index HTTP/1.1\r\n";

/* The next slow piece; false when the server has closed the connection. */
static bool trickle(slow *s, const char *mode) {
    const char *piece;
    size_t len;
    char header[64];
    if (!strcmp(mode, "silent")) return true;
    if (!strcmp(mode, "line")) {
        if (s->sent + 1 >= sizeof request_line - 3) return true; /* never finish the line */
        piece = request_line + s->sent;
        len = 1;
    } else if (s->lines == 0) {
        piece = request_line;
        len = sizeof request_line - 1;
    } else {
        len = (size_t)snprintf(header, sizeof header, "X-Slow-%u: 1\r\n", s->lines);
        piece = header;
    }
    if (send(s->fd, piece, len, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)len) return errno == EAGAIN;
    if (!strcmp(mode, "line")) s->sent++;
    else s->lines++;
    return true;
}

/* Reads what the server sent; true when it closed the connection. */
static bool drain(slow *s) {
    char buf[4096];
    for (;;) {
        ssize_t n = recv(s->fd, buf, sizeof buf - 1, MSG_DONTWAIT);
        if (n > 0) {
            buf[n] = '\0';
            if (strstr(buf, "HTTP/1.1 408") || strstr(buf, "HTTP/1.0 408")) s->got_408 = true;
            continue;
        }
        if (n == 0) return true;
        return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
    }
}

int main(int argc, char **argv) {
    if (argc < 7) {
        fprintf(stderr, "usage: d9s_slow_clients PORT SOURCES N HOLD_S PROBE_FROM PROBE_WAIT_S [line|headers|silent]\n");
        return 2;
    }
    unsigned port = (unsigned)atoi(argv[1]);
    int per = atoi(argv[3]);
    double hold = atof(argv[4]), probe_wait = atof(argv[6]);
    const char *probe_from = argv[5], *mode = argc > 7 ? argv[7] : "headers";
    char *sources[MAX_SOURCES];
    int nsrc = 0;
    for (char *save = NULL, *p = strtok_r(argv[2], ",", &save); p && nsrc < MAX_SOURCES; p = strtok_r(NULL, ",", &save))
        sources[nsrc++] = p;
    static slow conns[MAX_SLOW];
    int n = 0, failed = 0;
    double start = now_s();
    for (int i = 0; i < nsrc; i++) {
        for (int k = 0; k < per && n < MAX_SLOW; k++) {
            int fd = connect_from(sources[i], port);
            if (fd < 0) {
                failed++;
                continue;
            }
            conns[n] = (slow){.fd = fd, .source = i};
            trickle(&conns[n], mode);
            n++;
        }
    }
    if (failed) printf("slow: %d connections could not be made\n", failed);
    /* the probe: a whole request at once */
    int probe = connect_from(probe_from, port);
    char answer[256] = "";
    size_t got = 0;
    if (probe >= 0) {
        char req[128];
        int len = snprintf(req, sizeof req, "GET /api/index HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
        if (send(probe, req, (size_t)len, MSG_NOSIGNAL) != len) {
            close(probe);
            probe = -1;
        } else {
            fcntl(probe, F_SETFL, O_NONBLOCK);
        }
    }
    double probe_end = now_s() + probe_wait, last_trickle = now_s();
    bool probe_done = probe < 0;
    for (;;) {
        double t = now_s();
        int open_count = 0;
        for (int i = 0; i < n; i++) open_count += !conns[i].closed;
        if (probe_done && (open_count == 0 || t - start >= hold)) break;
        if (!probe_done && t >= probe_end) {
            close(probe);
            probe_done = true;
        }
        if (t - last_trickle >= TRICKLE_MS / 1000.0) {
            for (int i = 0; i < n; i++)
                if (!conns[i].closed && !trickle(&conns[i], mode)) {
                    drain(&conns[i]);
                    conns[i].closed = true;
                }
            last_trickle = t;
        }
        struct pollfd pfd[MAX_SLOW + 1];
        int idx[MAX_SLOW + 1], m = 0;
        for (int i = 0; i < n; i++)
            if (!conns[i].closed) {
                pfd[m] = (struct pollfd){.fd = conns[i].fd, .events = POLLIN};
                idx[m++] = i;
            }
        if (!probe_done) {
            pfd[m] = (struct pollfd){.fd = probe, .events = POLLIN};
            idx[m++] = -1;
        }
        if (poll(pfd, (nfds_t)m, 50) < 0 && errno != EINTR) break;
        for (int j = 0; j < m; j++) {
            if (!pfd[j].revents) continue;
            if (idx[j] >= 0) {
                if (drain(&conns[idx[j]])) conns[idx[j]].closed = true;
                continue;
            }
            ssize_t r = recv(probe, answer + got, sizeof answer - 1 - got, 0);
            if (r > 0) got += (size_t)r;
            answer[got] = '\0';
            if (r <= 0 || strchr(answer, '\n')) {
                close(probe);
                probe_done = true;
            }
        }
    }
    int status = 0;
    if (sscanf(answer, "HTTP/1.%*d %d", &status) == 1) printf("probe: answered HTTP %d\n", status);
    else printf("probe: no answer within %g s\n", probe_wait);
    /* closes the server made that we have not read yet */
    for (int i = 0; i < n; i++)
        if (!conns[i].closed && drain(&conns[i])) conns[i].closed = true;
    int total_open = 0;
    for (int s = 0; s < nsrc; s++) {
        int opened = 0, open_now = 0, closed = 0, r408 = 0;
        for (int i = 0; i < n; i++) {
            if (conns[i].source != s) continue;
            opened++;
            open_now += !conns[i].closed;
            closed += conns[i].closed;
            r408 += conns[i].got_408;
        }
        total_open += open_now;
        printf("source %s: %d opened, %d open at the end, %d closed, %d answered 408\n", sources[s], opened,
               open_now, closed, r408);
    }
    printf("slow: %d opened, %d open at the end, after %.1f s\n", n, total_open, now_s() - start);
    for (int i = 0; i < n; i++) close(conns[i].fd);
    return 0;
}
