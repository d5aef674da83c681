/* The CPU profile where perf is refused (perf_event_paranoid 3+, seccomp) or not wanted: one
 * POSIX CPU-time timer per recording thread (timer_create on the thread's CPU clock,
 * SIGEV_THREAD_ID) delivering SIGPROF to that thread; the handler walks the frame pointers
 * from the interrupted context into a lock-free per-thread sample buffer that the collector
 * drains. Never writes into the thread's event ring: the interrupted code may be in the
 * middle of a record there.
 *
 * The SIGPROF handler, once installed, stays for the life of the process: a timer signal can
 * still be pending when its timer is deleted, and with the default action restored it would
 * kill the process. Signals that are not ours go to the handler that was there before. */
#ifndef D9_SOURCES_TIMER_SAMPLER_H
#define D9_SOURCES_TIMER_SAMPLER_H

#include <stdbool.h>
#include <stdint.h>

#include "core/collector.h"
#include "core/source.h"
#include "core/thread_buffer.h"

#define D9_TIMER_MAX_FRAMES 64

typedef struct d9_timer_report {
    int err;           /* -errno when the sampler could not start */
    bool chained;      /* an application SIGPROF handler existed: ours forwards to it */
    unsigned threads;  /* threads armed at start */
} d9_timer_report;

/* Start sampling every thread that records at `hz` per second of its CPU time (the kernel
 * fires CPU timers on its tick: at most CONFIG_HZ per second). Threads already registered
 * are armed now; later ones from d9_timer_sampler_on_thread. `c` is used to say so in the
 * metadata if the application replaces our handler later. NULL on failure (see rep->err). */
d9_source *d9_timer_sampler_open(uint32_t hz, d9_collector *c, d9_timer_report *rep);

/* Arm the calling thread (from d9_thread_register_hook). No-op when no sampler runs. */
void d9_timer_sampler_on_thread(d9_thread *t);

/* After fork() in the child: timers are not inherited; forget them (never touches memory the
 * parent's threads may have been using). */
void d9_timer_sampler_forget_after_fork(void);

typedef struct d9_timer_counters {
    uint64_t samples, lost, threads_armed, arm_failures;
} d9_timer_counters;
void d9_timer_sampler_counters(d9_source *s, d9_timer_counters *out);

#endif
