/* Helpers for the kernel-source tests: load a run directory into arrays (polls paired per
 * worker, CPU samples, switch records, task dumps, unparks, the first segment's metadata), and
 * find a function's address range in this executable. Header-only. */
#ifndef D9_TESTS_SOURCE_UTIL_H
#define D9_TESTS_SOURCE_UTIL_H

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "sources/elf_funcs.h"
#include "trace_files_util.h"

/* A function that keeps its own symbol and frame (tests look for its address range). */
#if defined(__clang__)
#define TT_NOINLINE __attribute__((noinline))
#else
#define TT_NOINLINE __attribute__((noinline, noclone))
#endif

typedef struct tt_poll {
    uint64_t start, end, task;
    uint32_t worker;
} tt_poll;

typedef struct tt_sample {
    uint64_t ts, cpu;
    uint32_t tid, worker, n;
    uint8_t source;
    uint64_t *frames;
} tt_sample;

typedef struct tt_switch {
    uint64_t ts;
    uint32_t tid;
    bool out, preempted;
} tt_switch;

typedef struct tt_dump {
    uint64_t ts, task;
    uint32_t n;
    uint64_t *frames;
} tt_dump;

typedef struct tt_unpark {
    uint64_t ts, sched_wait, cpu_time;
    uint32_t worker;
} tt_unpark;

#define TT_META 64
typedef struct tt_trace {
    tt_poll *polls;
    size_t npolls, cap_polls;
    tt_sample *samples;
    size_t nsamples, cap_samples;
    tt_switch *switches;
    size_t nswitches, cap_switches;
    tt_dump *dumps;
    size_t ndumps, cap_dumps;
    tt_unpark *unparks;
    size_t nunparks, cap_unparks;
    uint64_t open_poll[256];   /* start ts of the open poll per worker (0: none) */
    uint64_t open_task[256];
    uint32_t worker_tid[256];
    uint64_t lost;             /* DroppedEventsEvent counts */
    char *meta_key[TT_META], *meta_val[TT_META];
    int nmeta;
} tt_trace;

#define TT_PUSH(arr, n, cap, val)                                                          \
    do {                                                                                   \
        if ((n) == (cap)) {                                                                \
            (cap) = (cap) ? (cap) * 2 : 256;                                               \
            (arr) = realloc((arr), (cap) * sizeof *(arr));                                 \
        }                                                                                  \
        (arr)[(n)++] = (val);                                                              \
    } while (0)

static inline uint64_t *tt_copy_stack(const d9_value *v, uint32_t *n) {
    *n = 0;
    if (!v || !v->present || !v->resolved) return NULL;
    *n = v->stack.count;
    uint64_t *f = malloc((*n ? *n : 1) * sizeof *f);
    memcpy(f, v->stack.addrs, *n * sizeof *f);
    return f;
}

static inline void tt_on_event(const d9_event *ev, void *ctx) {
    tt_trace *t = ctx;
    const char *name = ev->schema->name;
    if (strcmp(name, "SegmentMetadataEvent") == 0) {
        if (t->nmeta) return;
        const d9_value *m = d9_event_field(ev, "entries");
        for (uint32_t i = 0; m && i < m->map.count && t->nmeta < TT_META; i++) {
            const d9_dec_kv *kv = &m->map.items[i];
            t->meta_key[t->nmeta] = strndup(kv->key.ptr, kv->key.len);
            t->meta_val[t->nmeta] = strndup(kv->value.ptr, kv->value.len);
            t->nmeta++;
        }
    } else if (strcmp(name, "WorkerRegisteredEvent") == 0) {
        uint64_t w = d9t_field_u(ev, "worker_id");
        if (w < 256) t->worker_tid[w] = (uint32_t)d9t_field_u(ev, "tid");
    } else if (strcmp(name, "PollStartEvent") == 0) {
        uint64_t w = d9t_field_u(ev, "worker_id");
        if (w < 256) {
            t->open_poll[w] = ev->ts_ns;
            t->open_task[w] = d9t_field_u(ev, "task_id");
        }
    } else if (strcmp(name, "PollEndEvent") == 0) {
        uint64_t w = d9t_field_u(ev, "worker_id");
        if (w < 256 && t->open_poll[w]) {
            tt_poll p = {t->open_poll[w], ev->ts_ns, t->open_task[w], (uint32_t)w};
            TT_PUSH(t->polls, t->npolls, t->cap_polls, p);
            t->open_poll[w] = 0;
        }
    } else if (strcmp(name, "CpuSampleEvent") == 0) {
        tt_sample s = {.ts = ev->ts_ns};
        s.tid = (uint32_t)d9t_field_u(ev, "tid");
        s.worker = (uint32_t)d9t_field_u(ev, "worker_id");
        s.source = (uint8_t)d9t_field_u(ev, "source");
        s.cpu = d9t_field_u(ev, "cpu");
        s.frames = tt_copy_stack(d9_event_field(ev, "callchain"), &s.n);
        TT_PUSH(t->samples, t->nsamples, t->cap_samples, s);
    } else if (strcmp(name, "SchedSwitchEvent") == 0) {
        tt_switch s = {.ts = ev->ts_ns};
        s.tid = (uint32_t)d9t_field_u(ev, "tid");
        s.out = d9t_field_u(ev, "switch_out") == 1;
        s.preempted = d9t_field_u(ev, "preempted") == 1;
        TT_PUSH(t->switches, t->nswitches, t->cap_switches, s);
    } else if (strcmp(name, "TaskDumpEvent") == 0) {
        tt_dump d = {.ts = ev->ts_ns};
        d.task = d9t_field_u(ev, "task_id");
        d.frames = tt_copy_stack(d9_event_field(ev, "callchain"), &d.n);
        TT_PUSH(t->dumps, t->ndumps, t->cap_dumps, d);
    } else if (strcmp(name, "WorkerUnparkEvent") == 0) {
        tt_unpark u = {.ts = ev->ts_ns};
        u.worker = (uint32_t)d9t_field_u(ev, "worker_id");
        u.sched_wait = d9t_field_u(ev, "sched_wait_ns");
        u.cpu_time = d9t_field_u(ev, "cpu_time_ns");
        TT_PUSH(t->unparks, t->nunparks, t->cap_unparks, u);
    } else if (strcmp(name, "DroppedEventsEvent") == 0) {
        t->lost += d9t_field_u(ev, "count");
    }
}

/* Decode a run; returns the number of segments that did not end cleanly. */
static inline int tt_load(const char *run_dir, tt_trace *t) {
    memset(t, 0, sizeof *t);
    return d9t_decode_run(run_dir, tt_on_event, t);
}

static inline void tt_free(tt_trace *t) {
    for (size_t i = 0; i < t->nsamples; i++) free(t->samples[i].frames);
    for (size_t i = 0; i < t->ndumps; i++) free(t->dumps[i].frames);
    for (int i = 0; i < t->nmeta; i++) {
        free(t->meta_key[i]);
        free(t->meta_val[i]);
    }
    free(t->polls);
    free(t->samples);
    free(t->switches);
    free(t->dumps);
    free(t->unparks);
    memset(t, 0, sizeof *t);
}

static inline const char *tt_meta(const tt_trace *t, const char *key) {
    for (int i = 0; i < t->nmeta; i++)
        if (strcmp(t->meta_key[i], key) == 0) return t->meta_val[i];
    return "";
}

/* The poll of `worker` that contains ts (with `slack` ns either side), or NULL. */
static inline const tt_poll *tt_poll_at(const tt_trace *t, uint32_t worker, uint64_t ts, uint64_t slack) {
    for (size_t i = 0; i < t->npolls; i++) {
        const tt_poll *p = &t->polls[i];
        if (p->worker == worker && ts + slack >= p->start && ts <= p->end + slack) return p;
    }
    return NULL;
}

/* A function's run-time address range in this executable, from its symbol table. */
typedef struct tt_range {
    uint64_t lo, hi;
} tt_range;

static inline tt_range tt_function_range(const char *name, const void *fn) {
    uint64_t addr = 0, size = 0;
    tt_range r = {0, 0};
    if (!d9_elf_funcs_find("/proc/self/exe", name, &addr, &size)) {
        fprintf(stderr, "no symbol %s in /proc/self/exe\n", name);
        return r;
    }
    r.lo = (uint64_t)(uintptr_t)fn; /* the load bias cancels: fn is the symbol's address */
    r.hi = r.lo + size;
    return r;
}

static inline bool tt_in(tt_range r, uint64_t a) { return a >= r.lo && a < r.hi; }

static inline bool tt_stack_has(const uint64_t *frames, uint32_t n, tt_range r) {
    for (uint32_t i = 0; i < n; i++)
        if (tt_in(r, frames[i])) return true;
    return false;
}

static inline uint64_t tt_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t tt_thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void tt_sleep_ns(uint64_t ns) {
    struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* Wait until thread `tid` of this process sleeps in system call `nr` with first argument
 * `arg0` (/proc/.../syscall names the call only while the thread is blocked in it, "running"
 * otherwise): a test acts once another thread is really blocked, however the machine
 * schedules them. False when the file cannot be read (no such thread, no such file). */
static inline bool tt_wait_blocked_in(pid_t tid, long nr, uint64_t arg0) {
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)tid);
    for (;;) {
        FILE *f = fopen(path, "r");
        if (!f) return false;
        long got = -2;
        unsigned long long a0 = 0;
        int n = fscanf(f, "%ld %llx", &got, &a0);
        fclose(f);
        if (n == 2 && got == nr && a0 == arg0) return true;
        tt_sleep_ns(1000000);
    }
}

static inline void tt_pin_to_cpu(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof set, &set);
}

/* Busy arithmetic in registers only: no memory access for a sanitizer to instrument, so CPU
 * samples land in the calling function's own instructions even under TSan/ASan. */
#define TT_BURN_REGISTERS(iterations)                                                      \
    do {                                                                                   \
        uint64_t tt_x_ = 1;                                                                \
        for (int tt_i_ = 0; tt_i_ < (iterations); tt_i_++) {                               \
            tt_x_ = tt_x_ * 6364136223846793005ull + (uint64_t)tt_i_;                      \
            __asm__ volatile("" : "+r"(tt_x_));                                            \
        }                                                                                  \
    } while (0)

static inline bool tt_starts_with(const char *s, const char *prefix) {
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Under ASan or TSan the sanitizer runtime replaces libc's memcpy, qsort, pthread_mutex_lock
 * with its own interceptors (other objects, other frames): the checks about libc's frameless
 * frames apply to the build users make, not to sanitizer builds. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TT_INTERCEPTED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define TT_INTERCEPTED 1
#endif
#endif
/* The worker a thread recorded as (its WorkerBeginEvent's tid), 255 for none. */
static inline uint32_t tt_worker_of(const tt_trace *t, pid_t tid) {
    for (uint32_t w = 0; w < 256; w++)
        if (tid && t->worker_tid[w] == (uint32_t)tid) return w;
    return 255;
}

/* A thread's longest voluntary off-CPU interval between start and end (a switch out not
 * preempted, to its switch in), from the switch records; *voluntary_outs counts those outs. */
static inline uint64_t tt_longest_voluntary_off_cpu(const tt_trace *t, pid_t tid, uint64_t start, uint64_t end,
                                                    int *voluntary_outs) {
    uint64_t out_ts = 0, longest = 0;
    int outs = 0;
    for (size_t j = 0; j < t->nswitches; j++) {
        const tt_switch *s = &t->switches[j];
        if (s->tid != (uint32_t)tid || s->ts < start || s->ts > end) continue;
        if (s->out) {
            out_ts = s->preempted ? 0 : s->ts;
            outs += !s->preempted;
        } else if (out_ts) {
            if (s->ts - out_ts > longest) longest = s->ts - out_ts;
            out_ts = 0;
        }
    }
    if (voluntary_outs) *voluntary_outs = outs;
    return longest;
}

#ifndef TT_INTERCEPTED
#define TT_INTERCEPTED 0
#endif

#endif
