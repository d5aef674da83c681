/* Closed-loop clients for the stories: each thread keeps one connection, sends "ping\n",
 * waits for "pong\n", records the latency, pauses, repeats until the time is up. */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "story_kit.h"

#define MAX_SAMPLES_PER_CLIENT 200000
#define FIRST_ANSWER_TRIES 3 /* failed connects or requests before a client gives up its first */

typedef struct client {
    pthread_t thread;
    int port;
    const story_load *load;
    uint64_t deadline;
    uint64_t *samples;        /* latencies in ns */
    uint64_t count, errors;
} client;

static int connect_loopback(int port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct timeval tv = {.tv_sec = 5}; /* a server that stops answering fails the request */
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* One request: true when "pong\n" came back. */
static bool ping(int fd) {
    if (send(fd, "ping\n", 5, MSG_NOSIGNAL) != 5) return false;
    char buf[8];
    size_t got = 0;
    while (got < 5) {
        ssize_t n = recv(fd, buf + got, 5 - got, 0);
        if (n <= 0) {
            if (n < 0 && errno == EINTR) continue;
            return false;
        }
        got += (size_t)n;
    }
    return memcmp(buf, "pong\n", 5) == 0;
}

static void *client_main(void *arg) {
    client *c = arg;
    int fd = connect_loopback(c->port);
    uint64_t pause = (uint64_t)(c->load->pause_ms * 1e6);
    /* Until the time is up, but one answer at least (a few tries): on a busy machine a thread
     * may first run after the deadline, and a phase with no request measures nothing. */
    while (story_now_ns() < c->deadline || (c->count == 0 && c->errors < FIRST_ANSWER_TRIES)) {
        if (fd < 0) {
            c->errors++;
            story_sleep_ns(10000000);
            fd = connect_loopback(c->port);
            continue;
        }
        uint64_t t0 = story_now_ns();
        if (!ping(fd)) {
            c->errors++;
            close(fd);
            fd = -1;
            continue;
        }
        if (c->count < MAX_SAMPLES_PER_CLIENT) c->samples[c->count++] = story_now_ns() - t0;
        if (pause) story_sleep_ns(pause);
    }
    if (fd >= 0) close(fd);
    return NULL;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

void story_load_run(int port, const story_load *load, story_latency *out) {
    client *cs = calloc(load->clients, sizeof *cs);
    uint64_t deadline = story_now_ns() + (uint64_t)(load->seconds * 1e9);
    for (unsigned i = 0; i < load->clients; i++) {
        cs[i] = (client){.port = port, .load = load, .deadline = deadline,
                         .samples = malloc(MAX_SAMPLES_PER_CLIENT * sizeof(uint64_t))};
        pthread_create(&cs[i].thread, NULL, client_main, &cs[i]);
    }
    uint64_t total = 0;
    *out = (story_latency){0};
    for (unsigned i = 0; i < load->clients; i++) {
        pthread_join(cs[i].thread, NULL);
        total += cs[i].count;
        out->errors += cs[i].errors;
    }
    uint64_t *all = malloc((total ? total : 1) * sizeof *all);
    uint64_t n = 0;
    for (unsigned i = 0; i < load->clients; i++) {
        memcpy(all + n, cs[i].samples, cs[i].count * sizeof *all);
        n += cs[i].count;
        free(cs[i].samples);
    }
    qsort(all, n, sizeof *all, cmp_u64);
    out->requests = n;
    if (n) {
        out->p50_ms = (double)all[n / 2] / 1e6;
        out->p99_ms = (double)all[n * 99 / 100] / 1e6;
        out->max_ms = (double)all[n - 1] / 1e6;
    }
    free(all);
    free(cs);
}

void story_latency_print(const char *label, const story_latency *l) {
    printf("%-9s %llu requests, %llu errors; latency p50 %.3f ms, p99 %.3f ms, max %.3f ms\n", label,
           (unsigned long long)l->requests, (unsigned long long)l->errors, l->p50_ms, l->p99_ms,
           l->max_ms);
}
