/* Helper of tests/scripts/test_serve_race.sh: the two sides of the path-swap race against
 * `dial9 serve` (issue 11, item 1).
 *
 *   d9s_race swap DIR A B
 *       exchange DIR/A and DIR/B (renameat2 RENAME_EXCHANGE) as fast as possible until SIGTERM
 *       (or 300 s), then leave them as they were (an even number of swaps); run as the
 *       unprivileged owner of DIR.
 *   d9s_race fetch PORT TARGET MAX_REQUESTS SECONDS MARKER
 *       GET TARGET from 127.0.0.1:PORT one request after the other until MAX_REQUESTS or
 *       SECONDS, counting the answers by status; exit 1 at the first answer that carries
 *       MARKER, 0 otherwise. Prints a summary line either way. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static volatile sig_atomic_t stop;
static void on_term(int sig) {
    (void)sig;
    stop = 1;
}

static int swap(const char *dir, const char *a, const char *b) {
    signal(SIGTERM, on_term);
    signal(SIGINT, on_term);
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        perror(dir);
        return 2;
    }
    double end = now_s() + 300;
    unsigned long n = 0;
    while ((n & 1) || (!stop && ((n & 1023) || now_s() < end))) {
        if (renameat2(dfd, a, dfd, b, RENAME_EXCHANGE) != 0) {
            perror("renameat2(RENAME_EXCHANGE)");
            return 2;
        }
        n++;
    }
    printf("d9s_race swap: %lu exchanges\n", n);
    return 0;
}

/* One GET; the whole answer (headers and body) into *buf. The HTTP status, 0 when none. */
static int get(unsigned port, const char *target, char **buf, size_t *len) {
    *len = 0;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        if (fd >= 0) close(fd);
        return 0;
    }
    char req[4096];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", target);
    if (write(fd, req, (size_t)n) != n) {
        close(fd);
        return 0;
    }
    static size_t cap;
    for (;;) {
        if (cap - *len < 65536) {
            char *p = realloc(*buf, cap + (1 << 20));
            if (!p) break;
            *buf = p;
            cap += 1 << 20;
        }
        ssize_t got = read(fd, *buf + *len, cap - *len - 1);
        if (got <= 0) break;
        *len += (size_t)got;
    }
    close(fd);
    (*buf)[*len] = '\0';
    int status = 0;
    if (*len > 12) sscanf(*buf, "HTTP/1.%*d %d", &status);
    return status;
}

static int fetch(unsigned port, const char *target, long max, double seconds, const char *marker) {
    char *buf = NULL;
    size_t len;
    long count = 0, ok = 0, not_found = 0, other = 0;
    double end = now_s() + seconds;
    int rc = 0;
    while (count < max && now_s() < end) {
        int status = get(port, target, &buf, &len);
        count++;
        if (status == 200) ok++;
        else if (status == 404) not_found++;
        else other++;
        if (len && memmem(buf, len, marker, strlen(marker))) {
            printf("d9s_race fetch: LEAK: answer %ld (HTTP %d, %zu bytes) carries the private file\n", count,
                   status, len);
            rc = 1;
            break;
        }
    }
    printf("d9s_race fetch: %ld requests: %ld HTTP 200, %ld HTTP 404, %ld other\n", count, ok, not_found,
           other);
    free(buf);
    return rc;
}

int main(int argc, char **argv) {
    if (argc == 5 && !strcmp(argv[1], "swap")) return swap(argv[2], argv[3], argv[4]);
    if (argc == 7 && !strcmp(argv[1], "fetch"))
        return fetch((unsigned)atoi(argv[2]), argv[3], atol(argv[4]), atof(argv[5]), argv[6]);
    fprintf(stderr, "usage: d9s_race swap DIR A B | fetch PORT TARGET MAX_REQUESTS SECONDS MARKER\n");
    return 2;
}
