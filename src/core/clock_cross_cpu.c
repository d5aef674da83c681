#include "core/clock_cross_cpu.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <x86intrin.h>

#include "core/clock.h"

/* One cache line each: the value passed around, and what every thread looks at to stop. The
 * check's threads are detached and the caller does not wait for them past its bound (a pinned
 * thread may wait long for its CPU on a busy host): the last of them and the caller to leave
 * frees it all. */
typedef struct worker {
    struct check *c;
    unsigned index;
    _Atomic uint64_t handovers, worst_step_back; /* read by the caller while the thread may run */
} worker;

typedef struct check {
    _Alignas(64) _Atomic uint64_t last;
    _Alignas(64) _Atomic unsigned done;
    _Atomic bool stop;
    _Atomic unsigned refs;
    d9_tick_reader read;
    void *ctx;
    uint64_t handovers;
    unsigned n;
    worker w[];
} check;

static uint64_t read_tsc(void *ctx, unsigned index) {
    (void)ctx, (void)index;
    return __rdtsc();
}

static void unref(check *c) {
    if (atomic_fetch_sub(&c->refs, 1) == 1) free(c);
}

static void *run(void *arg) {
    worker *w = arg;
    check *c = w->c;
    uint64_t mine = 0, handovers = 0; /* this thread's last value in `last` */
    while (!atomic_load_explicit(&c->stop, memory_order_relaxed)) {
        uint64_t prev = atomic_load_explicit(&c->last, memory_order_acquire);
        _mm_lfence(); /* the read below starts after that load is done, not before it */
        uint64_t now = c->read(c->ctx, w->index);
        /* In only if `last` is still `prev`: then `prev` was the newest value when `now` was
         * read, and whoever wrote it had read it before. */
        if (!atomic_compare_exchange_strong_explicit(&c->last, &prev, now, memory_order_acq_rel,
                                                     memory_order_relaxed))
            continue;
        if (prev != mine && prev != 0) {
            atomic_store_explicit(&w->handovers, ++handovers, memory_order_relaxed);
            if (now < prev) {
                if (prev - now > atomic_load_explicit(&w->worst_step_back, memory_order_relaxed))
                    atomic_store_explicit(&w->worst_step_back, prev - now, memory_order_relaxed);
                atomic_store(&c->stop, true);
            }
            if (handovers == c->handovers) atomic_fetch_add(&c->done, 1);
        }
        mine = now;
    }
    unref(c);
    return NULL;
}

void d9_cross_cpu_check(const int *cpus, unsigned n, d9_tick_reader read, void *ctx, uint64_t handovers,
                        uint64_t max_ns, d9_cross_cpu_result *out) {
    memset(out, 0, sizeof *out);
    out->threads = n;
    check *c = n >= 2 ? aligned_alloc(64, (sizeof(check) + n * sizeof(worker) + 63) / 64 * 64) : NULL;
    if (!c) {
        snprintf(out->why, sizeof out->why, n < 2 ? "fewer than 2 threads to compare" : "out of memory");
        return;
    }
    memset(c, 0, sizeof *c + n * sizeof(worker));
    c->read = read ? read : read_tsc;
    c->ctx = ctx;
    c->handovers = handovers ? handovers : 1;
    c->n = n;
    atomic_store(&c->refs, 1); /* the caller's */
    /* The check's threads take none of the application's signals, and each runs only on its CPU. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int err = 0;
    unsigned started = 0;
    uint64_t t0 = d9_mono_ns();
    for (unsigned i = 0; i < n && !err; i++) {
        if (max_ns && d9_mono_ns() - t0 > max_ns) { /* threads start slowly on a busy host: the bound holds */
            err = ETIMEDOUT;
            break;
        }
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpus[i], &one);
        err = pthread_attr_setaffinity_np(&attr, sizeof one, &one);
        c->w[i] = (worker){.c = c, .index = i};
        atomic_fetch_add(&c->refs, 1);
        pthread_t thread;
        if (!err) err = pthread_create(&thread, &attr, run, &c->w[i]);
        if (err) atomic_fetch_sub(&c->refs, 1);
        else started++;
    }
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    /* Wait for the verdict: every thread has its handovers, or one stepped back, or the bound
     * (from the first thread's creation: the program waits for all of it). */
    uint64_t deadline = max_ns ? t0 + max_ns : 0;
    while (!err && !atomic_load(&c->stop) && atomic_load(&c->done) < n && (!deadline || d9_mono_ns() < deadline)) {
        struct timespec pause = {0, 20000}; /* leave the CPUs to the check's threads */
        nanosleep(&pause, NULL);
    }
    atomic_store(&c->stop, true);
    out->elapsed_ns = d9_mono_ns() - t0;
    out->ran = !err && started == n;
    out->min_handovers = UINT64_MAX;
    for (unsigned i = 0; i < n; i++) {
        uint64_t h = atomic_load_explicit(&c->w[i].handovers, memory_order_relaxed);
        uint64_t back = atomic_load_explicit(&c->w[i].worst_step_back, memory_order_relaxed);
        if (h < out->min_handovers) out->min_handovers = h;
        if (back > out->worst_step_back) out->worst_step_back = back;
    }
    out->stepped_back = out->worst_step_back > 0;
    out->passed = out->ran && !out->stepped_back && out->min_handovers >= c->handovers;
    if (!out->ran && err == ETIMEDOUT)
        snprintf(out->why, sizeof out->why, "cross-CPU check not run: %u of %u threads started in %.1f ms",
                 started, n, (double)out->elapsed_ns / 1e6);
    else if (!out->ran)
        snprintf(out->why, sizeof out->why, "cross-CPU check not run: %s pinned to CPU %d",
                 strerror(err), cpus[started < n ? started : 0]);
    else if (out->stepped_back)
        snprintf(out->why, sizeof out->why, "cross-CPU check failed: a read %llu ticks behind another CPU's",
                 (unsigned long long)out->worst_step_back);
    else if (!out->passed)
        snprintf(out->why, sizeof out->why,
                 "cross-CPU check inconclusive: %llu of %llu handovers per CPU in %.1f ms",
                 (unsigned long long)out->min_handovers, (unsigned long long)c->handovers,
                 (double)out->elapsed_ns / 1e6);
    else
        snprintf(out->why, sizeof out->why, "cross-CPU check passed: %u CPUs, %llu+ handovers each, %.2f ms",
                 n, (unsigned long long)out->min_handovers, (double)out->elapsed_ns / 1e6);
    unref(c);
}

void d9_cross_cpu_check_tsc(uint64_t max_ns, d9_cross_cpu_result *out) {
    cpu_set_t allowed;
    int cpus[CPU_SETSIZE];
    unsigned n = 0;
    if (sched_getaffinity(0, sizeof allowed, &allowed) == 0)
        for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
            if (CPU_ISSET(cpu, &allowed)) cpus[n++] = cpu;
    /* Past 64 CPUs, 64 spread over them: a thread per CPU of a large host would cost more to
     * start than the check takes, and a TSC that disagrees does so by socket or by host. */
    if (n > 64) {
        for (unsigned i = 0; i < 64; i++) cpus[i] = cpus[(uint64_t)i * n / 64];
        n = 64;
    }
    if (n < 2) {
        memset(out, 0, sizeof *out);
        out->ran = out->passed = true;
        out->threads = n;
        snprintf(out->why, sizeof out->why, "one CPU: nothing to compare");
        return;
    }
    /* One handover while both threads run shows any offset larger than the cache line's trip
     * between CPUs (~0.1-0.2 µs); a hundred or so per CPU, fewer each on a large host (they
     * pair at random), so that a busy host still ends within the bound. */
    uint64_t per_thread = 256 / n;
    if (per_thread < 16) per_thread = 16;
    d9_cross_cpu_check(cpus, n, NULL, NULL, per_thread, max_ns, out);
}
