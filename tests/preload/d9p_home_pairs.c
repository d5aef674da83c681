/* A home-grown epoll loop (no loop library) that answers N requests on one connection, for
 * test_preload_shim_instructions.sh: the shim's own-loop path counted per request. A socket
 * pair stands for the connection (end 0, watched with its fd as the event data, as redis' ae
 * registers it) and its client (end 1, not watched). Each iteration: epoll_wait returns the
 * connection ready, the loop reads the request and writes the answer, then the client reads
 * the answer and sends the next request, so no epoll_wait ever sleeps. The recorder is waited
 * for first, so that every iteration is recorded. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "wait_for_recorder.h"

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000;
    int pair[2];
    if (n <= 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, pair) != 0) return 1;
    d9p_wait_for_recorder();
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = pair[0]};
    if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, pair[0], &ev) != 0) return 1;
    if (write(pair[1], "q", 1) != 1) return 1;
    long served = 0;
    char byte;
    while (served < n) {
        struct epoll_event got[4];
        int k = epoll_wait(ep, got, 4, -1);
        if (k != 1 || got[0].data.fd != pair[0]) return 2;
        if (read(pair[0], &byte, 1) != 1 || write(pair[0], "a", 1) != 1) return 2;
        served++;
        if (read(pair[1], &byte, 1) != 1) return 2;
        if (served < n && write(pair[1], "q", 1) != 1) return 2;
    }
    printf("requests %ld\n", served);
    close(ep);
    return 0;
}
