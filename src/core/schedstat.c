#include "core/schedstat.h"

#include <fcntl.h>
#include <unistd.h>

bool d9_schedstat_enabled = true;
uint64_t d9_schedstat_min_ticks;
uint32_t d9_schedstat_run;
uint64_t d9_schedstat_reads;

static int open_schedstat(void) {
    return open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
}

bool d9_schedstat_available(void) {
    /* the process's file, not this thread's: the same kernel support, and no /proc entry of
     * a thread (the recorder may start on a short-lived one: see own_thread_name.h) */
    int fd = open("/proc/self/schedstat", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    char buf[96];
    ssize_t n = pread(fd, buf, sizeof buf, 0);
    close(fd);
    return n > 0;
}

/* The second number of "cpu wait slices\n", without strtoull's locale work. The first (CPU
 * time) is left alone: it is updated at ticks and switches only, so a park's would be stale
 * (thread_cpu_time.h reads the current one). */
static bool parse_wait(const char *p, const char *end, uint64_t *wait) {
    uint64_t v = 0;
    for (int i = 0; i < 2; i++) {
        if (p >= end || *p < '0' || *p > '9') return false;
        v = 0;
        while (p < end && *p >= '0' && *p <= '9') v = v * 10 + (uint64_t)(*p++ - '0');
        if (p < end && *p == ' ') p++;
    }
    *wait = v;
    return true;
}

void d9_schedstat_read(d9_thread *t, uint64_t *wait_ns) {
    *wait_ns = D9_NS_UNKNOWN;
    if (!__atomic_load_n(&d9_schedstat_enabled, __ATOMIC_RELAXED) || t->schedstat_fd == -2) return;
    bool fresh = t->schedstat_fd == -1;
    if (fresh) {
        t->schedstat_fd = open_schedstat();
        if (t->schedstat_fd < 0) {
            t->schedstat_fd = -2;
            return;
        }
        t->schedstat_id = d9_fd_identify(t->schedstat_fd);
    }
    char buf[96];
    ssize_t n = pread(t->schedstat_fd, buf, sizeof buf, 0);
    __atomic_add_fetch(&d9_schedstat_reads, 1, __ATOMIC_RELAXED);
    if (n <= 0 || !parse_wait(buf, buf + n, wait_ns)) {
        /* The program may have closed our fd (close-all-fds daemons): reopen next time. */
        *wait_ns = D9_NS_UNKNOWN;
        if (fresh) close(t->schedstat_fd);
        t->schedstat_fd = fresh ? -2 : -1; /* never leak an fd per park */
    }
}
