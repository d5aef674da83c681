/* A home-grown loop waiting in io_uring through liburing (shared) that answers N requests on
 * one connection, for test_preload_home_request_instructions.sh: d9p_home_pairs' loop with
 * io_uring as its poller. A socket pair stands for the connection (end 0) and its client (end
 * 1). Each iteration: an IORING_OP_POLL_ADD of the connection, submitted with
 * io_uring_submit_and_wait (the shim notes its fd by user_data and parks), its completion
 * consumed, the loop's read and write on the connection, then the client's read and next
 * request, so no wait ever sleeps. The recorder is waited for first, so that every iteration
 * is recorded. Exits 3 saying "no io_uring" where the kernel refuses it. */
#include <liburing.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "wait_for_recorder.h"

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000;
    int pair[2];
    if (n <= 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, pair) != 0) return 1;
    d9p_wait_for_recorder();
    struct io_uring ring;
    int rc = io_uring_queue_init(8, &ring, 0);
    if (rc < 0) {
        printf("no io_uring: io_uring_queue_init: %d\n", rc);
        return 3;
    }
    if (write(pair[1], "q", 1) != 1) return 1;
    long served = 0;
    char byte;
    while (served < n) {
        struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
        if (!sqe) return 2;
        io_uring_prep_poll_add(sqe, pair[0], POLLIN);
        io_uring_sqe_set_data64(sqe, 7);
        if (io_uring_submit_and_wait(&ring, 1) < 0) return 2;
        struct io_uring_cqe *cqe;
        if (io_uring_peek_cqe(&ring, &cqe) != 0 || cqe->user_data != 7 || !(cqe->res & POLLIN)) return 2;
        io_uring_cqe_seen(&ring, cqe);
        if (read(pair[0], &byte, 1) != 1 || write(pair[0], "a", 1) != 1) return 2;
        served++;
        if (read(pair[1], &byte, 1) != 1) return 2;
        if (served < n && write(pair[1], "q", 1) != 1) return 2;
    }
    printf("requests %ld\n", served);
    io_uring_queue_exit(&ring);
    return 0;
}
