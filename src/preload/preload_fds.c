/* The recorder's file descriptors (the open segment, each thread's schedstat, perf events)
 * are protected from the program. Without this a daemon that closes every fd and then opens
 * its own files would get the recorder's numbers, and the recorder would write trace bytes
 * into the program's file (pwrite on a number it still believes its own) or close it later.
 *
 *   - The program's close() of a recorder fd pretends to succeed; close_range / closefrom
 *     close everything else in the range.
 *   - dup2 / dup3 onto a recorder fd: the program wins. Recording stops first (the segment is
 *     sealed and closed), and a number the recorder still holds (a schedstat fd) is handed
 *     over: the recorder's own later close of it is then skipped.
 *   - The recorder's own opens (linked with --wrap=open, openat and syscall, for
 *     perf_event_open) are protected as they return, and never take fds 0..2, which a daemon
 *     reopens on /dev/null by number. Directories are not: the recorder closes them with
 *     closedir, which the shim does not see.
 * In a forked child the recorder records nothing: the child's copies are its own to close. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload.h"

#define MAX_FDS 65536

static _Atomic uint64_t g_ours[MAX_FDS / 64];        /* the recorder's */
static _Atomic uint64_t g_surrendered[MAX_FDS / 64]; /* the recorder's number, the program's file */

static bool bit(_Atomic uint64_t *set, int fd) {
    return (unsigned)fd < MAX_FDS &&
           (atomic_load_explicit(&set[fd >> 6], memory_order_relaxed) >> (fd & 63)) & 1;
}
static void set_bit(_Atomic uint64_t *set, int fd) {
    if ((unsigned)fd < MAX_FDS) atomic_fetch_or(&set[fd >> 6], 1ull << (fd & 63));
}
static void clear_bit(_Atomic uint64_t *set, int fd) {
    if ((unsigned)fd < MAX_FDS) atomic_fetch_and(&set[fd >> 6], ~(1ull << (fd & 63)));
}

void d9p_fds_protect(int fd) {
    clear_bit(g_surrendered, fd);
    set_bit(g_ours, fd);
}

bool d9p_fds_protected(int fd) { return bit(g_ours, fd); }

void d9p_fds_forget_after_fork(void) {
    for (size_t i = 0; i < MAX_FDS / 64; i++) {
        atomic_store_explicit(&g_ours[i], 0, memory_order_relaxed);
        atomic_store_explicit(&g_surrendered[i], 0, memory_order_relaxed);
    }
}

/* ---------------------------------------------------------------- the recorder's own calls */

int __wrap_open(const char *path, int flags, ...);
int __wrap_open64(const char *path, int flags, ...);
int __wrap_openat(int dirfd, const char *path, int flags, ...);
int __wrap_close(int fd);

/* A new fd of the recorder: never one of 0..2, and protected. */
static int adopt(int fd) {
    if (fd >= 0 && fd < 3) {
        int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        if (moved >= 0) {
            D9P_NEXT(close)(fd);
            fd = moved;
        }
    }
    if (fd >= 0) d9p_fds_protect(fd);
    return fd;
}

/* A directory is read and closed with closedir, behind the shim's back: left alone. */
static int adopt_unless_dir(int fd, int flags) {
    return flags & O_DIRECTORY ? fd : adopt(fd);
}

static mode_t mode_arg(int flags, va_list ap) {
    return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}

int __wrap_open(const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    return adopt_unless_dir(D9P_NEXT(open)(path, flags, mode), flags);
}

int __wrap_open64(const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    return adopt_unless_dir(D9P_NEXT(open)(path, flags, mode), flags);
}

int __wrap_openat(int dirfd, const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    return adopt_unless_dir(D9P_NEXT(openat)(dirfd, path, flags, mode), flags);
}

/* The recorder's syscall(): its arguments read as fixed ones, as the program's interposer does
 * (preload_syscall.c says why that holds on Linux's ABIs), so every number but
 * perf_event_open is a compare and a jump into glibc. The recorder reads each park's thread
 * CPU time through it (SYS_read of a perf fd, core/thread_cpu_clock.c): with a va_list spilled
 * and a frame kept for the call, 38 instructions a memcached request, 45 a redis one
 * (callgrind), against 7 so. */
static void *_Atomic D9P_SLOT(syscall);
long d9p_wrap_syscall_fixed(long number, long a1, long a2, long a3, long a4, long a5, long a6)
    __asm__("__wrap_syscall");

static __attribute__((noinline)) long syscall_slow(long number, long a1, long a2, long a3,
                                                   long a4, long a5, long a6) {
    long rc = D9P_NEXT_IN_SLOT(syscall)(number, a1, a2, a3, a4, a5, a6);
    if (number == SYS_perf_event_open && rc >= 0) rc = adopt((int)rc);
    return rc;
}

long d9p_wrap_syscall_fixed(long number, long a1, long a2, long a3, long a4, long a5, long a6) {
    __typeof__(&syscall) next =
        (__typeof__(&syscall))atomic_load_explicit(&D9P_SLOT(syscall), memory_order_relaxed);
    if (__builtin_expect(number == SYS_perf_event_open || !next, 0))
        return syscall_slow(number, a1, a2, a3, a4, a5, a6);
    return next(number, a1, a2, a3, a4, a5, a6);
}

int __wrap_close(int fd) {
    if (bit(g_surrendered, fd)) { /* the program's file now: not ours to close */
        clear_bit(g_surrendered, fd);
        return 0;
    }
    clear_bit(g_ours, fd);
    return D9P_NEXT(close)(fd);
}

/* ---------------------------------------------------------------- the program's calls */

D9P_EXPORT int close(int fd) {
    if (__builtin_expect(bit(g_ours, fd), 0)) return 0;
    d9p_fd_wakes_forget(fd);
    d9p_conn_closed(fd);
    return D9P_NEXT(close)(fd);
}

static int close_range_raw(unsigned first, unsigned last, int flags) {
    return (int)syscall(SYS_close_range, first, last, flags);
}

/* close_range without the recorder's fds: the runs of numbers between them. */
D9P_EXPORT int close_range(unsigned first, unsigned last, int flags) {
    if (first > last) return close_range_raw(first, last, flags);
    for (unsigned fd = first; fd <= last && fd < MAX_FDS; fd++) {
        d9p_fd_wakes_forget((int)fd);
        d9p_conn_closed((int)fd);
    }
    unsigned from = first;
    for (unsigned fd = first; fd <= last && fd < MAX_FDS; fd++) {
        if (!bit(g_ours, (int)fd)) continue;
        if (fd > from && close_range_raw(from, fd - 1, flags) != 0) return -1;
        from = fd + 1;
        if (fd == last) return 0;
    }
    return from > last ? 0 : close_range_raw(from, last, flags);
}

D9P_EXPORT void closefrom(int lowfd) {
    if (lowfd < 0) lowfd = 0;
    if (close_range((unsigned)lowfd, ~0u, 0) == 0) return;
    /* kernels before 5.9: one by one */
    DIR *d = opendir("/proc/self/fd");
    if (!d) return;
    int self = dirfd(d);
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        int fd = atoi(e->d_name);
        if (e->d_name[0] >= '0' && e->d_name[0] <= '9' && fd >= lowfd && fd != self) close(fd);
    }
    closedir(d);
}

/* The program puts one of its files on a recorder number: stop recording, hand it over. */
static void surrender(int fd) {
    static atomic_flag said = ATOMIC_FLAG_INIT;
    if (!atomic_flag_test_and_set(&said))
        fprintf(stderr, "dial9: the program reuses the recorder's fd %d (dup2): recording "
                        "stopped, trace sealed\n", fd);
    d9_stop();
    if (bit(g_ours, fd)) {
        clear_bit(g_ours, fd);
        set_bit(g_surrendered, fd);
    }
}

D9P_EXPORT int dup2(int oldfd, int newfd) {
    if (oldfd != newfd && bit(g_ours, newfd)) surrender(newfd);
    d9p_fd_wakes_forget(newfd);
    if (oldfd != newfd) d9p_conn_closed(newfd);
    return D9P_NEXT(dup2)(oldfd, newfd);
}

D9P_EXPORT int dup3(int oldfd, int newfd, int flags) {
    if (oldfd != newfd && bit(g_ours, newfd)) surrender(newfd);
    d9p_fd_wakes_forget(newfd);
    if (oldfd != newfd) d9p_conn_closed(newfd);
    return D9P_NEXT(dup3)(oldfd, newfd, flags);
}
