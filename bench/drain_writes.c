/* d9_bench_drain_writes: why strace saw a drain write twice. The recorder's thread, its timed
 * sleeps (`syscall(SYS_futex, ...)`, interposed) and its writes (`pwrite`, interposed and made
 * SLOW_MS slower, as a loaded disk or a sanitizer makes them) are counted, and its drains
 * (`d9_collector_drain`, wrapped by the linker: -Wl,--wrap); the main thread records BATCHES
 * batches of 512 spawns over ~4 ms each and calls d9_flush after each, noting whether the
 * collector was awake (between two sleeps) when it did. Prints, for the windows between two
 * sleeps that wrote: how many wrote twice or more, how many of those held two drains, and in
 * how many a flush came while the collector was awake; and the drains that wrote twice.
 *   d9_bench_drain_writes TRACE_DIR [BATCHES [SLOW_MS]]     (defaults 300, 2) */
#include <dlfcn.h>
#include <linux/futex.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "dial9/dial9.h"

static long g_slow_ns = 2000000;
static __thread int t_collector = -1;

static bool on_collector(void) {
    if (t_collector < 0) {
        char name[32] = {0};
        prctl(PR_GET_NAME, name);
        t_collector = strcmp(name, "dial9-collect") == 0;
    }
    return t_collector;
}

static _Atomic int g_awake;       /* the collector is between two sleeps */
static _Atomic int g_flush_awake; /* a flush was asked for in this window */
static int g_writes, g_drains;    /* in this window (the collector's thread only) */
static int w_written, w_twice, w_twice_two_drains, w_twice_flush, w_once_flush, drains_twice;

long syscall(long nr, ...) {
    va_list ap;
    va_start(ap, nr);
    long a[6];
    for (int i = 0; i < 6; i++) a[i] = va_arg(ap, long);
    va_end(ap);
    static long (*next)(long, ...);
    if (!next) next = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
    bool sleep = nr == SYS_futex && (a[1] & FUTEX_CMD_MASK) == FUTEX_WAIT && a[3] != 0 && on_collector();
    if (sleep) {
        int flush = atomic_exchange(&g_flush_awake, 0);
        if (g_writes) {
            w_written++;
            if (g_writes >= 2) {
                w_twice++;
                w_twice_two_drains += g_drains >= 2;
                w_twice_flush += flush;
            } else {
                w_once_flush += flush;
            }
        }
        g_writes = g_drains = 0;
        atomic_store(&g_awake, 0);
    }
    long r = next(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
    if (sleep) atomic_store(&g_awake, 1);
    return r;
}

ssize_t pwrite(int fd, const void *buf, size_t len, off_t off) {
    static ssize_t (*next)(int, const void *, size_t, off_t);
    if (!next) next = (ssize_t (*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, "pwrite");
    if (on_collector()) {
        g_writes++;
        struct timespec slow = {0, g_slow_ns};
        nanosleep(&slow, NULL);
    }
    return next(fd, buf, len, off);
}

struct d9_collector;
double __real_d9_collector_drain(struct d9_collector *c);
double __wrap_d9_collector_drain(struct d9_collector *c);
double __wrap_d9_collector_drain(struct d9_collector *c) {
    int before = g_writes;
    g_drains++;
    double fill = __real_d9_collector_drain(c);
    drains_twice += g_writes - before >= 2;
    return fill;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: d9_bench_drain_writes TRACE_DIR [BATCHES [SLOW_MS]]\n");
        return 2;
    }
    int batches = argc > 2 ? atoi(argv[2]) : 300;
    if (argc > 3) g_slow_ns = atol(argv[3]) * 1000000L;
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = argv[1];
    cfg.schedule_profile = false;
    cfg.task_dumps = false;
    cfg.symbolize = false;
    cfg.rotation_secs = 0;
    if (d9_start(&cfg) != 0) {
        fprintf(stderr, "d9_bench_drain_writes: %s\n", d9_last_error());
        return 2;
    }
    d9_worker_begin("drain-writes", 0);
    uint64_t id = 0;
    for (int b = 0; b < batches; b++) {
        for (int i = 0; i < 512; i++) {
            d9_task_spawn(++id, D9_HERE);
            if (i % 16 == 15) nanosleep(&(struct timespec){0, 100000}, NULL); /* a batch over ~4 ms */
        }
        if (atomic_load(&g_awake)) atomic_store(&g_flush_awake, 1);
        d9_flush();
        nanosleep(&(struct timespec){0, 25000000}, NULL); /* past the collector's 20 ms sleep */
    }
    d9_stop();
    printf("windows between two sleeps that wrote   %d\n", w_written);
    printf("  with two writes or more               %d\n", w_twice);
    printf("    holding two drains                  %d\n", w_twice_two_drains);
    printf("    with a flush asked for while awake  %d\n", w_twice_flush);
    printf("  with one write and such a flush       %d\n", w_once_flush);
    printf("drains that wrote twice                 %d\n", drains_twice);
    return 0;
}
