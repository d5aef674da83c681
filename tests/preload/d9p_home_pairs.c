/* A home-grown epoll loop (no loop library) that answers N requests on one connection, for
 * test_preload_shim_instructions.sh: the shim's own-loop path counted per request. A socket
 * pair stands for the connection (end 0, watched with its fd as the event data, as redis' ae
 * registers it) and its client (end 1, not watched). Each iteration: epoll_wait returns the
 * connection ready, the loop reads the request and writes the answer, then the client reads
 * the answer and sends the next request, so no epoll_wait ever sleeps. The recorder is waited
 * for first, so that every iteration is recorded. `d9p_home_pairs N poll` (or `select`): the
 * loop waits with poll() (select()) on the connection instead (a loop without epoll: the shim's
 * general path). */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <unistd.h>

#include "wait_for_recorder.h"

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000;
    int use_poll = argc > 2 && !strcmp(argv[2], "poll");
    int use_select = argc > 2 && !strcmp(argv[2], "select");
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
        if (use_select) {
            fd_set r;
            FD_ZERO(&r);
            FD_SET(pair[0], &r);
            if (select(pair[0] + 1, &r, NULL, NULL, NULL) != 1 || !FD_ISSET(pair[0], &r)) return 2;
        } else if (use_poll) {
            struct pollfd p = {.fd = pair[0], .events = POLLIN};
            if (poll(&p, 1, -1) != 1 || !(p.revents & POLLIN)) return 2;
        } else {
            struct epoll_event got[4];
            int k = epoll_wait(ep, got, 4, -1);
            if (k != 1 || got[0].data.fd != pair[0]) return 2;
        }
        if (read(pair[0], &byte, 1) != 1 || write(pair[0], "a", 1) != 1) return 2;
        served++;
        if (read(pair[1], &byte, 1) != 1) return 2;
        if (served < n && write(pair[1], "q", 1) != 1) return 2;
    }
    printf("requests %ld\n", served);
    close(ep);
    return 0;
}
