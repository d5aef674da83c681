/* Helper of tests/scripts/test_serve_slowloris.sh: a connection storm against `dial9 serve`,
 * on loopback.
 *
 *   d9s_connect_storm PORT SECONDS
 *
 * Opens and at once closes TCP connections to 127.0.0.1:PORT from 4 threads for SECONDS (or
 * until killed), so that the server's listening socket almost never has an empty accept
 * queue. Prints "storm: started" once the first connection went through, then, at the end,
 * "storm: N connections". A server must still stop on SIGTERM during such a storm: its
 * event loop may not wait for a moment when nothing is ready before it looks at signals. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define STORM_THREADS 4

static unsigned port;
static double until;
static atomic_ulong connections;

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void *storm(void *arg) {
    (void)arg;
    struct sockaddr_in dst = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    while (now_s() < until) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) continue;
        if (connect(fd, (struct sockaddr *)&dst, sizeof dst) == 0 && atomic_fetch_add(&connections, 1) == 0) {
            printf("storm: started\n");
            fflush(stdout);
        }
        close(fd);
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 3 || atoi(argv[1]) <= 0 || atoi(argv[2]) <= 0) {
        fprintf(stderr, "usage: d9s_connect_storm PORT SECONDS\n");
        return 2;
    }
    port = (unsigned)atoi(argv[1]);
    until = now_s() + atof(argv[2]);
    pthread_t t[STORM_THREADS];
    for (int i = 0; i < STORM_THREADS; i++) pthread_create(&t[i], NULL, storm, NULL);
    for (int i = 0; i < STORM_THREADS; i++) pthread_join(t[i], NULL);
    printf("storm: %lu connections\n", (unsigned long)atomic_load(&connections));
    return 0;
}
