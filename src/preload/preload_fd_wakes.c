/* Wakes through notification fds. Many servers hand work to another loop thread by writing
 * to an eventfd or a pipe that the other loop watches (memcached's dispatcher does this for
 * every new connection), without any loop-library call that an adapter could see.
 *
 * The shim learns which task reads each notification fd: a read() of an eventfd or of a
 * pipe's read end inside a recorded callback maps that fd to the callback's task. A later
 * write() to the fd (or to the pipe's write end) from anywhere is then a wake of that task.
 * The loop libraries' own notification writes (uv_async_send, ev_async_send, event_active
 * already record theirs) are left out by the caller's address. The first write to an fd,
 * before its reader was seen, is not a wake. */
#include <stdatomic.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "preload.h"
#include "thread_state.h"

#define MAX_FDS 65536

enum { KIND_NONE = 0, KIND_EVENTFD, KIND_PIPE_READ, KIND_PIPE_WRITE };

static _Atomic uint8_t g_kind[MAX_FDS];
static _Atomic int32_t g_peer[MAX_FDS];   /* a pipe's write end -> its read end */
static _Atomic uint64_t g_reader[MAX_FDS]; /* eventfd / read end -> task that reads it */

static inline unsigned kind_of(int fd) {
    return (unsigned)fd < MAX_FDS ? atomic_load_explicit(&g_kind[fd], memory_order_relaxed)
                                  : KIND_NONE;
}

static void mark(int fd, unsigned kind, int peer) {
    if ((unsigned)fd >= MAX_FDS) return;
    atomic_store_explicit(&g_reader[fd], 0, memory_order_relaxed);
    atomic_store_explicit(&g_peer[fd], peer, memory_order_relaxed);
    atomic_store_explicit(&g_kind[fd], (uint8_t)kind, memory_order_release);
}

void d9p_fd_wakes_forget(int fd) {
    if (kind_of(fd) != KIND_NONE) mark(fd, KIND_NONE, -1);
}

void d9p_fd_wakes_forget_after_fork(void) {
    /* the parent's tasks do not run here */
    for (int fd = 0; fd < MAX_FDS; fd++)
        if (atomic_load_explicit(&g_reader[fd], memory_order_relaxed))
            atomic_store_explicit(&g_reader[fd], 0, memory_order_relaxed);
}

static void note_reader(int fd) {
    const d9a_thread *s = &d9a_self;
    if (s->depth == 0 || s->poll_task == 0) return;
    if (atomic_load_explicit(&g_reader[fd], memory_order_relaxed) != s->poll_task)
        atomic_store_explicit(&g_reader[fd], s->poll_task, memory_order_relaxed);
}

static void wake_reader(int fd, unsigned kind, const void *caller) {
    int target = kind == KIND_EVENTFD     ? fd
                 : kind == KIND_PIPE_WRITE ? atomic_load_explicit(&g_peer[fd], memory_order_relaxed)
                                           : -1;
    if ((unsigned)target >= MAX_FDS) return;
    uint64_t task = atomic_load_explicit(&g_reader[target], memory_order_relaxed);
    if (task && !d9p_in_loop_library(caller)) d9_wake(task);
}

D9P_EXPORT int eventfd(unsigned int initval, int flags) {
    int fd = D9P_NEXT(eventfd)(initval, flags);
    if (fd >= 0) mark(fd, KIND_EVENTFD, -1);
    return fd;
}

static void mark_pipe(const int fds[2]) {
    mark(fds[0], KIND_PIPE_READ, -1);
    mark(fds[1], KIND_PIPE_WRITE, fds[0]);
}

D9P_EXPORT int pipe(int fds[2]) {
    int rc = D9P_NEXT(pipe)(fds);
    if (rc == 0) mark_pipe(fds);
    return rc;
}

D9P_EXPORT int pipe2(int fds[2], int flags) {
    int rc = D9P_NEXT(pipe2)(fds, flags);
    if (rc == 0) mark_pipe(fds);
    return rc;
}

/* read and write take a jump into libc when there is nothing to note (no home-grown loop
 * iterating on this thread, an fd that is no notification fd), as D9P_IO_PASS says why; their
 * out-of-line twins do the rest. A read's fd kind is looked at before the call: an fd that
 * becomes a pipe while being read is a race either way. */
D9P_RESOLVED_SLOT(ssize_t, read, (int fd, void *buf, size_t count), (fd, buf, count));
D9P_RESOLVED_SLOT(ssize_t, write, (int fd, const void *buf, size_t count), (fd, buf, count));

static __attribute__((noinline)) ssize_t read_slow(int fd, void *buf, size_t count) {
    d9p_loop_io(fd);
    ssize_t rc = D9P_CALL_SLOT(read)(fd, buf, count);
    unsigned k = kind_of(fd);
    if ((k == KIND_EVENTFD || k == KIND_PIPE_READ) && rc > 0) note_reader(fd);
    return rc;
}

D9P_EXPORT ssize_t read(int fd, void *buf, size_t count) {
    if (__builtin_expect(d9p_loop_io_may_switch(fd) || kind_of(fd) != KIND_NONE, 0))
        return read_slow(fd, buf, count);
    return D9P_CALL_SLOT(read)(fd, buf, count);
}

/* `caller`: the program's call site, passed down (the twin's own return address is the
 * caller's only when the compiler made the call a jump). */
static __attribute__((noinline)) ssize_t write_slow(int fd, const void *buf, size_t count,
                                                    const void *caller) {
    d9p_loop_io(fd);
    unsigned k = kind_of(fd);
    if (k != KIND_NONE && D9__ACTIVE()) wake_reader(fd, k, caller);
    return D9P_CALL_SLOT(write)(fd, buf, count);
}

D9P_EXPORT ssize_t write(int fd, const void *buf, size_t count) {
    if (__builtin_expect(d9p_loop_io_may_switch(fd) || kind_of(fd) != KIND_NONE, 0))
        return write_slow(fd, buf, count, __builtin_return_address(0));
    return D9P_CALL_SLOT(write)(fd, buf, count);
}

D9P_EXPORT int eventfd_read(int fd, eventfd_t *value) {
    int rc = D9P_NEXT(eventfd_read)(fd, value);
    if (rc == 0 && kind_of(fd) == KIND_EVENTFD) note_reader(fd);
    return rc;
}

D9P_EXPORT int eventfd_write(int fd, eventfd_t value) {
    unsigned k = kind_of(fd);
    if (k != KIND_NONE && D9__ACTIVE()) wake_reader(fd, k, __builtin_return_address(0));
    return D9P_NEXT(eventfd_write)(fd, value);
}
