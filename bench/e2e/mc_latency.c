/* mc_latency: a closed-loop memcached load (text protocol) that measures throughput and
 * latency percentiles, which memcslap does not report.
 *
 *   mc_latency [--port P] [--clients N] [--seconds S] [--warmup S] [--pause-us U] [--requests R]
 *
 * Each client thread keeps one connection to 127.0.0.1:P and sends, one at a time, 9 gets
 * for each set over 1000 keys with 100-byte values (all keys are set first). With --pause-us
 * each client waits U microseconds after each answer (a paced load, for latency below
 * saturation). With --requests the load is a fixed amount of work instead of a fixed time: each
 * client sends R/N requests with no warm-up, and `seconds` is the time they took. Prints one line:
 *   ops=N seconds=S ops_per_sec=R p50_us=A p99_us=B max_us=C errors=E ops_total=T
 * (N: requests measured after the warm-up; T: every answered request, warm-up included.)
 */
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define KEYS 1000
#define VALUE_LEN 100
#define MAX_SAMPLES (1u << 20)

typedef struct client {
    pthread_t thread;
    unsigned id;
    uint64_t *samples;
    uint64_t count, errors;
    uint64_t all;             /* every answered request, warm-up included */
} client;

static int port = 11211;
static double seconds = 5, warmup = 0.5;
static unsigned pause_us;
static uint64_t start_at, measure_from, stop_at;
static uint64_t per_client; /* --requests R: R / clients each, 0 for a timed run */

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int connect_server(void) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct timeval tv = {.tv_sec = 5};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Read until the buffer ends with `terminator`; false on error or a closed connection. */
static bool read_reply(int fd, char *buf, size_t cap, const char *terminator) {
    size_t len = 0, tlen = strlen(terminator);
    for (;;) {
        ssize_t n = recv(fd, buf + len, cap - len - 1, 0);
        if (n <= 0) {
            if (n < 0 && errno == EINTR) continue;
            return false;
        }
        len += (size_t)n;
        buf[len] = '\0';
        if (len >= tlen && memcmp(buf + len - tlen, terminator, tlen) == 0) return true;
        if (strncmp(buf, "ERROR", 5) == 0 || strncmp(buf, "SERVER_ERROR", 12) == 0) return false;
        if (len + 1 >= cap) return false;
    }
}

static bool do_set(int fd, unsigned key, char *buf, size_t cap) {
    char value[VALUE_LEN + 1];
    memset(value, 'a' + key % 26, VALUE_LEN);
    value[VALUE_LEN] = '\0';
    int n = snprintf(buf, cap, "set key:%u 0 0 %d\r\n%s\r\n", key, VALUE_LEN, value);
    if (send(fd, buf, (size_t)n, MSG_NOSIGNAL) != n) return false;
    return read_reply(fd, buf, cap, "\r\n") && strncmp(buf, "STORED", 6) == 0;
}

static bool do_get(int fd, unsigned key, char *buf, size_t cap) {
    int n = snprintf(buf, cap, "get key:%u\r\n", key);
    if (send(fd, buf, (size_t)n, MSG_NOSIGNAL) != n) return false;
    return read_reply(fd, buf, cap, "END\r\n");
}

static void *client_main(void *arg) {
    client *c = arg;
    char buf[1024];
    int fd = connect_server();
    if (fd < 0) {
        c->errors++;
        return NULL;
    }
    if (c->id == 0)
        for (unsigned k = 0; k < KEYS; k++) do_set(fd, k, buf, sizeof buf);
    uint64_t i = c->id * 7919u;
    while (now_ns() < start_at) usleep(1000); /* every client starts at once */
    for (;;) {
        uint64_t t0 = now_ns();
        if (t0 >= stop_at || (per_client && c->all >= per_client)) break;
        unsigned key = (unsigned)((i * 2654435761u) % KEYS);
        bool ok = i % 10 == 0 ? do_set(fd, key, buf, sizeof buf) : do_get(fd, key, buf, sizeof buf);
        uint64_t t1 = now_ns();
        i++;
        c->all += ok;
        if (!ok) {
            c->errors++;
            close(fd);
            fd = connect_server();
            if (fd < 0) break;
            continue;
        }
        if (t0 >= measure_from && c->count < MAX_SAMPLES) c->samples[c->count++] = t1 - t0;
        if (pause_us) usleep(pause_us);
    }
    if (fd >= 0) close(fd);
    return NULL;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    static const struct option longs[] = {{"port", required_argument, 0, 'p'},
                                          {"clients", required_argument, 0, 'c'},
                                          {"seconds", required_argument, 0, 's'},
                                          {"warmup", required_argument, 0, 'w'},
                                          {"pause-us", required_argument, 0, 'u'},
                                          {"requests", required_argument, 0, 'r'},
                                          {0, 0, 0, 0}};
    unsigned clients = 8;
    uint64_t requests = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "p:c:s:w:u:r:", longs, NULL)) != -1) {
        switch (ch) {
        case 'p': port = atoi(optarg); break;
        case 'c': clients = (unsigned)atoi(optarg); break;
        case 's': seconds = atof(optarg); break;
        case 'w': warmup = atof(optarg); break;
        case 'u': pause_us = (unsigned)atoi(optarg); break;
        case 'r': requests = strtoull(optarg, NULL, 10); break;
        default:
            fprintf(stderr, "usage: mc_latency [--port P] [--clients N] [--seconds S] [--warmup S] [--pause-us U] [--requests R]\n");
            return 2;
        }
    }
    if (clients < 1 || clients > 256 || seconds <= 0 || warmup < 0) return 2;
    start_at = now_ns() + 100000000u; /* 100 ms for the first client to load the keys */
    measure_from = start_at + (uint64_t)(warmup * 1e9);
    stop_at = measure_from + (uint64_t)(seconds * 1e9);
    if (requests) {
        per_client = (requests + clients - 1) / clients;
        measure_from = start_at;
        stop_at = UINT64_MAX;
    }

    client *cs = calloc(clients, sizeof *cs);
    for (unsigned i = 0; i < clients; i++) {
        cs[i].id = i;
        cs[i].samples = malloc(MAX_SAMPLES * sizeof(uint64_t));
        pthread_create(&cs[i].thread, NULL, client_main, &cs[i]);
    }
    uint64_t total = 0, errors = 0, all = 0;
    for (unsigned i = 0; i < clients; i++) {
        pthread_join(cs[i].thread, NULL);
        total += cs[i].count;
        errors += cs[i].errors;
        all += cs[i].all;
    }
    if (requests) seconds = (double)(now_ns() - start_at) / 1e9; /* the time the fixed work took */
    uint64_t *lat = malloc((total ? total : 1) * sizeof *lat), n = 0;
    for (unsigned i = 0; i < clients; i++) {
        memcpy(lat + n, cs[i].samples, cs[i].count * sizeof *lat);
        n += cs[i].count;
        free(cs[i].samples);
    }
    qsort(lat, n, sizeof *lat, cmp_u64);
    printf("ops=%llu seconds=%.3f ops_per_sec=%.1f p50_us=%.1f p99_us=%.1f max_us=%.1f errors=%llu "
           "ops_total=%llu\n",
           (unsigned long long)n, seconds, (double)n / seconds, n ? (double)lat[n / 2] / 1e3 : 0,
           n ? (double)lat[n * 99 / 100] / 1e3 : 0, n ? (double)lat[n - 1] / 1e3 : 0,
           (unsigned long long)errors, (unsigned long long)all);
    free(lat);
    free(cs);
    return n && !errors ? 0 : 1;
}
