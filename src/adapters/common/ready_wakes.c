#include "ready_wakes.h"

_Atomic uint64_t d9a_fd_task[D9A_FD_MAX][2];

void d9a_fd_watch(int fd, unsigned dirs, uint64_t task) {
    if (fd < 0 || fd >= D9A_FD_MAX || !task) return;
    if (dirs & D9A_FD_IN) atomic_store_explicit(&d9a_fd_task[fd][0], task, memory_order_relaxed);
    if (dirs & D9A_FD_OUT) atomic_store_explicit(&d9a_fd_task[fd][1], task, memory_order_relaxed);
}

void d9a_fd_unwatch(int fd, uint64_t task) {
    if (fd < 0 || fd >= D9A_FD_MAX || !task) return;
    for (int d = 0; d < 2; d++) {
        uint64_t want = task;
        atomic_compare_exchange_strong_explicit(&d9a_fd_task[fd][d], &want, 0,
                                                memory_order_relaxed, memory_order_relaxed);
    }
}
