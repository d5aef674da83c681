#include "sources/timer_sampler.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "sources/fp_unwind.h"
#include "sources/stack_unwind.h"
#include "sources/unwind_tables.h"

#define SLOT_SAMPLES 32   /* ~5 samples arrive per 20 ms drain at the 250 Hz ceiling */
#define MAX_SLOTS 4096    /* threads sampled at once */
#define SLOT_BITS 12
#define GEN_BITS 20
#define SIVAL_MAGIC 0xd9a7d9a7ull /* in the high half: never a user-space pointer */
#define ALT_RECHECK_NS (100u * 1000u * 1000u)

enum { SLOT_FREE, SLOT_ARMED };
enum { BOUNDS_UNKNOWN, BOUNDS_KNOWN, BOUNDS_NONE };

typedef struct tsample {
    uint64_t ts;
    int32_t cpu;
    uint32_t n;
    uint64_t frames[D9_TIMER_MAX_FRAMES]; /* the frame-pointer walk, frames[0] = rip */
    uint64_t sp, bp;                      /* for CFI unwinding on the collector's thread */
    uint32_t stack_len;
    uint8_t stack[D9_UNWIND_STACK_BYTES]; /* a copy of [sp, sp + stack_len) */
} tsample;

/* One sampled thread. Slots are pooled and never freed: a late signal may still look one up. */
typedef struct timer_slot {
    _Atomic uint64_t head;          /* samples written (signal handler) */
    _Atomic uint64_t tail;          /* samples read (collector) */
    _Atomic uint64_t lost;          /* samples dropped on a full buffer (signal handler) */
    _Atomic uint32_t gen;           /* bumped at every arming: stale signals do not match */
    _Atomic int state;
    d9_thread *_Atomic owner;       /* the thread's buffer: the handler checks it is on it */
    pid_t tid;
    timer_t timer;
    uint64_t lost_reported;         /* collector-private */
    /* handler-private (the owner thread), or set before arming on the owner thread */
    _Atomic int bounds_state;
    d9_stack_bounds stack;
    d9_stack_bounds alt;            /* another stack the thread ran on (coroutines) */
    uint64_t alt_checked_ns;
    tsample ring[SLOT_SAMPLES];
} timer_slot;

typedef struct timer_src {
    d9_source base;
    uint64_t interval_ns;
    d9_collector *collector;
    bool handler_lost;
    d9_thread **threads;             /* collector-private snapshot */
    size_t nthreads;
    uint64_t frames[D9_TIMER_MAX_FRAMES];
    d9_unwind_tables *tables;        /* during a drain */
    _Atomic uint64_t samples, lost, armed, arm_failures;
} timer_src;

static timer_slot *_Atomic g_slots[MAX_SLOTS];
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER; /* slot allocation, arming */
static timer_src *_Atomic g_active;
static bool g_installed;
static struct sigaction g_previous;  /* the disposition we chain to */

/* ---------------------------------------------------------------- the signal handler */

static uint64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *encode_sival(uint32_t idx, uint32_t gen) {
    uint64_t v = SIVAL_MAGIC << 32 | (uint64_t)(gen & ((1u << GEN_BITS) - 1)) << SLOT_BITS | idx;
    return (void *)(uintptr_t)v;
}

static bool decode_sival(const void *p, uint32_t *idx, uint32_t *gen) {
    uint64_t v = (uint64_t)(uintptr_t)p;
    if (v >> 32 != SIVAL_MAGIC) return false;
    *idx = (uint32_t)(v & (MAX_SLOTS - 1));
    *gen = (uint32_t)(v >> SLOT_BITS) & ((1u << GEN_BITS) - 1);
    return true;
}

/* Bounds of the stack `sp` is on: the thread's own stack, else the last other stack seen
 * (a coroutine), looked up in /proc/self/maps at most every 100 ms. */
static bool bounds_for(timer_slot *s, uint64_t sp, d9_stack_bounds *out) {
    int st = atomic_load_explicit(&s->bounds_state, memory_order_relaxed);
    if (st == BOUNDS_UNKNOWN) { /* armed from another thread: find our stack ourselves */
        d9_stack_bounds b;
        bool ok = d9_stack_bounds_from_maps(sp, &b);
        if (ok) s->stack = b;
        st = ok ? BOUNDS_KNOWN : BOUNDS_NONE;
        atomic_store_explicit(&s->bounds_state, st, memory_order_relaxed);
    }
    if (st == BOUNDS_KNOWN && sp >= s->stack.lo && sp < s->stack.hi) {
        *out = s->stack;
        return true;
    }
    if (s->alt.hi && sp >= s->alt.lo && sp < s->alt.hi) {
        *out = s->alt;
        return true;
    }
    uint64_t now = mono_ns();
    if (now - s->alt_checked_ns < ALT_RECHECK_NS) return false;
    s->alt_checked_ns = now;
    if (!d9_stack_bounds_from_maps(sp, &s->alt)) {
        s->alt.lo = s->alt.hi = 0;
        return false;
    }
    *out = s->alt;
    return true;
}

static void take_sample(timer_slot *s, const ucontext_t *uc) {
    uint64_t head = atomic_load_explicit(&s->head, memory_order_relaxed);
    uint64_t tail = atomic_load_explicit(&s->tail, memory_order_acquire);
    if (head - tail >= SLOT_SAMPLES) {
        atomic_fetch_add_explicit(&s->lost, 1, memory_order_relaxed);
        return;
    }
    tsample *smp = &s->ring[head % SLOT_SAMPLES];
    uint64_t pc = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
    uint64_t fp = (uint64_t)uc->uc_mcontext.gregs[REG_RBP];
    uint64_t sp = (uint64_t)uc->uc_mcontext.gregs[REG_RSP];
    d9_stack_bounds b;
    smp->ts = mono_ns();
    smp->cpu = sched_getcpu();
    bool bounded = bounds_for(s, sp, &b);
    smp->n = (uint32_t)d9_fp_walk(pc, fp, sp, bounded ? &b : NULL, smp->frames, D9_TIMER_MAX_FRAMES);
    smp->sp = sp;
    smp->bp = fp;
    smp->stack_len = d9_fp_copy_stack(smp->stack, sp, bounded ? &b : NULL, D9_UNWIND_STACK_BYTES);
    atomic_store_explicit(&s->head, head + 1, memory_order_release);
}

static void chain(int sig, siginfo_t *si, void *uc) {
    if (g_previous.sa_flags & SA_SIGINFO) {
        if (g_previous.sa_sigaction) g_previous.sa_sigaction(sig, si, uc);
    } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
        g_previous.sa_handler(sig);
    }
    /* SIG_DFL would terminate: a SIGPROF nobody asked for is ignored instead */
}

static void on_sigprof(int sig, siginfo_t *si, void *uc) {
    int saved_errno = errno;
    uint32_t idx, gen;
    if (si && si->si_code == SI_TIMER && decode_sival(si->si_value.sival_ptr, &idx, &gen)) {
        timer_slot *s = atomic_load_explicit(&g_slots[idx], memory_order_acquire);
        /* ours, but possibly late (timer deleted, slot re-armed): sample only a live match */
        if (s && atomic_load_explicit(&s->state, memory_order_acquire) == SLOT_ARMED &&
            (atomic_load_explicit(&s->gen, memory_order_relaxed) & ((1u << GEN_BITS) - 1)) == gen &&
            atomic_load_explicit(&s->owner, memory_order_relaxed) == d9_thread_peek())
            take_sample(s, uc);
    } else {
        chain(sig, si, uc);
    }
    errno = saved_errno;
}

static bool handler_is_ours(void) {
    struct sigaction cur;
    if (sigaction(SIGPROF, NULL, &cur) != 0) return false;
    return (cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_sigprof;
}

/* Install once per process; report whether an application handler is chained. */
static int install_handler(bool *chained) {
    if (!g_installed) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_sigprof;
        sa.sa_flags = SA_SIGINFO | SA_RESTART;
        sigemptyset(&sa.sa_mask);
        if (sigaction(SIGPROF, &sa, &g_previous) != 0) return -errno;
        g_installed = true;
    } else if (!handler_is_ours()) {
        /* the application replaced ours since the last run: chain to its handler now */
        struct sigaction sa, prev;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_sigprof;
        sa.sa_flags = SA_SIGINFO | SA_RESTART;
        sigemptyset(&sa.sa_mask);
        if (sigaction(SIGPROF, &sa, &prev) != 0) return -errno;
        g_previous = prev;
    }
    *chained = (g_previous.sa_flags & SA_SIGINFO)
                   ? g_previous.sa_sigaction != NULL
                   : g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN;
    return 0;
}

/* ---------------------------------------------------------------- arming */

static clockid_t thread_cpu_clock(pid_t tid) {
    /* the encoding of pthread_getcpuclockid: CPUCLOCK_SCHED | CPUCLOCK_PERTHREAD_MASK */
    return (clockid_t)((~(unsigned)tid << 3) | 6);
}

static timer_slot *slot_for(pid_t tid, uint32_t *idx_out, bool *fresh) {
    uint32_t free_idx = MAX_SLOTS;
    for (uint32_t i = 0; i < MAX_SLOTS; i++) {
        timer_slot *s = atomic_load_explicit(&g_slots[i], memory_order_relaxed);
        if (!s) {
            if (free_idx == MAX_SLOTS) free_idx = i;
            break; /* slots are allocated in order: none after this one */
        }
        int st = atomic_load_explicit(&s->state, memory_order_relaxed);
        if (st == SLOT_ARMED && s->tid == tid) return NULL; /* already sampled */
        if (st == SLOT_FREE && free_idx == MAX_SLOTS) free_idx = i;
    }
    if (free_idx == MAX_SLOTS) return NULL;
    timer_slot *s = atomic_load_explicit(&g_slots[free_idx], memory_order_relaxed);
    *fresh = s == NULL;
    if (!s) {
        s = calloc(1, sizeof *s);
        if (!s) return NULL;
        atomic_store_explicit(&g_slots[free_idx], s, memory_order_release);
    }
    *idx_out = free_idx;
    return s;
}

/* Arm a timer for thread `tid` (whose buffer is `t`). `own` is true on the thread itself,
 * which can then give its stack bounds; otherwise the handler finds them. Under g_lock. */
static void arm_locked(timer_src *ts, d9_thread *t, pid_t tid, bool own) {
    uint32_t idx;
    bool fresh = false;
    timer_slot *s = slot_for(tid, &idx, &fresh);
    if (!s) return;
    uint32_t gen = atomic_load_explicit(&s->gen, memory_order_relaxed) + 1;
    atomic_store_explicit(&s->gen, gen, memory_order_relaxed);
    s->tid = tid;
    atomic_store_explicit(&s->owner, t, memory_order_relaxed);
    d9_stack_bounds b;
    bool known = own && d9_stack_bounds_of_self(&b);
    if (known) s->stack = b;
    s->alt.lo = s->alt.hi = 0;
    s->alt_checked_ns = 0;
    atomic_store_explicit(&s->bounds_state, known ? BOUNDS_KNOWN : BOUNDS_UNKNOWN, memory_order_relaxed);
    /* forget what a previous owner left behind */
    uint64_t head = atomic_load_explicit(&s->head, memory_order_acquire);
    atomic_store_explicit(&s->tail, head, memory_order_release);
    s->lost_reported = atomic_load_explicit(&s->lost, memory_order_relaxed);

    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = SIGPROF;
    sev._sigev_un._tid = tid;
    sev.sigev_value.sival_ptr = encode_sival(idx, gen);
    if (timer_create(thread_cpu_clock(tid), &sev, &s->timer) != 0) {
        atomic_fetch_add(&ts->arm_failures, 1);
        return;
    }
    atomic_store_explicit(&s->state, SLOT_ARMED, memory_order_release);
    /* a random first expiry, so threads started together do not fire in step */
    uint64_t first = ts->interval_ns / 2 + ((uint64_t)tid * 2654435761u) % (ts->interval_ns / 2 + 1);
    struct itimerspec its = {
        .it_interval = {(time_t)(ts->interval_ns / 1000000000u), (long)(ts->interval_ns % 1000000000u)},
        .it_value = {(time_t)(first / 1000000000u), (long)(first % 1000000000u)},
    };
    if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0) its.it_value.tv_nsec = 1;
    if (timer_settime(s->timer, 0, &its, NULL) != 0) {
        atomic_store_explicit(&s->state, SLOT_FREE, memory_order_release);
        timer_delete(s->timer);
        atomic_fetch_add(&ts->arm_failures, 1);
        return;
    }
    atomic_fetch_add(&ts->armed, 1);
    (void)fresh;
}

static void disarm_locked(timer_slot *s) {
    if (atomic_load_explicit(&s->state, memory_order_relaxed) != SLOT_ARMED) return;
    atomic_store_explicit(&s->state, SLOT_FREE, memory_order_release);
    timer_delete(s->timer);
}

void d9_timer_sampler_on_thread(d9_thread *t) {
    timer_src *ts = atomic_load_explicit(&g_active, memory_order_acquire);
    if (!ts) return;
    pthread_mutex_lock(&g_lock);
    if (atomic_load_explicit(&g_active, memory_order_relaxed) == ts) arm_locked(ts, t, t->tid, true);
    pthread_mutex_unlock(&g_lock);
}

/* ---------------------------------------------------------------- collecting */

static bool thread_alive(timer_src *ts, const timer_slot *s) {
    d9_thread *owner = atomic_load_explicit(&s->owner, memory_order_relaxed);
    for (size_t i = 0; i < ts->nthreads; i++) {
        d9_thread *t = ts->threads[i];
        if (t == owner && t->tid == s->tid) return !atomic_load_explicit(&t->exited, memory_order_acquire);
    }
    return false;
}

static void drain_slot(timer_src *ts, timer_slot *s, d9_src_batch *out) {
    uint64_t head = atomic_load_explicit(&s->head, memory_order_acquire);
    uint64_t tail = atomic_load_explicit(&s->tail, memory_order_relaxed);
    for (; tail < head; tail++) {
        const tsample *smp = &s->ring[tail % SLOT_SAMPLES];
        uint32_t n = smp->n <= D9_TIMER_MAX_FRAMES ? smp->n : D9_TIMER_MAX_FRAMES;
        d9_src_event e = {.ts_ns = smp->ts, .kind = D9_SRC_CPU_SAMPLE, .tid = (uint32_t)s->tid,
                          .cpu = smp->cpu};
        if (ts->tables && n > 0) {
            d9_unwind_input in = {.ip = smp->frames[0], .sp = smp->sp, .bp = smp->bp, .stack = smp->stack,
                                  .stack_len = smp->stack_len <= D9_UNWIND_STACK_BYTES ? smp->stack_len : 0,
                                  .chain = smp->frames, .nchain = n};
            d9_stack_method m;
            n = d9_unwind_user_stack(ts->tables, &in, ts->frames, D9_TIMER_MAX_FRAMES, &m);
            e.sample.method = (uint8_t)m;
        } else {
            memcpy(ts->frames, smp->frames, n * sizeof(uint64_t));
        }
        e.sample.source = 0;
        e.sample.nframes = n;
        e.sample.frames = ts->frames;
        if (d9_src_batch_add(out, &e)) atomic_fetch_add_explicit(&ts->samples, 1, memory_order_relaxed);
    }
    atomic_store_explicit(&s->tail, head, memory_order_release);
    uint64_t lost = atomic_load_explicit(&s->lost, memory_order_relaxed);
    if (lost > s->lost_reported) {
        d9_src_event e = {.ts_ns = mono_ns(), .kind = D9_SRC_LOST, .tid = (uint32_t)s->tid, .cpu = -1};
        e.lost.count = lost - s->lost_reported;
        e.lost.reason = "timer_sample_buffer_full";
        if (d9_src_batch_add(out, &e)) {
            atomic_fetch_add_explicit(&ts->lost, lost - s->lost_reported, memory_order_relaxed);
            s->lost_reported = lost;
        }
    }
}

static void source_collect(d9_source *src, d9_src_batch *out) {
    timer_src *ts = src->ctx;
    if (!ts->handler_lost && !handler_is_ours()) {
        /* our timers would now run the application's handler: stop them */
        ts->handler_lost = true;
        d9_collector_note_source(ts->collector, "cpu_profile", false,
                                 "timer sampling stopped: the application replaced the SIGPROF handler");
    }
    ts->tables = d9_unwind_tables_acquire();
    pthread_mutex_lock(&g_lock);
    /* Under g_lock: a thread is listed before it arms (under g_lock), so every armed slot's
     * thread is in the snapshot. Taken before the lock, a thread that armed in between looked
     * dead and lost its timer for good. */
    free(ts->threads);
    ts->threads = d9_threads_snapshot(&ts->nthreads);
    if (!ts->threads) ts->nthreads = 0;
    for (uint32_t i = 0; i < MAX_SLOTS; i++) {
        timer_slot *s = atomic_load_explicit(&g_slots[i], memory_order_relaxed);
        if (!s) break;
        if (atomic_load_explicit(&s->state, memory_order_relaxed) != SLOT_ARMED) continue;
        drain_slot(ts, s, out);
        if (ts->handler_lost || (ts->threads && !thread_alive(ts, s))) disarm_locked(s);
    }
    pthread_mutex_unlock(&g_lock);
    if (ts->tables) d9_unwind_tables_release();
    ts->tables = NULL;
    free(ts->threads);
    ts->threads = NULL;
    ts->nthreads = 0;
}

static void source_close(d9_source *src) {
    timer_src *ts = src->ctx;
    pthread_mutex_lock(&g_lock);
    atomic_store_explicit(&g_active, NULL, memory_order_release);
    for (uint32_t i = 0; i < MAX_SLOTS; i++) {
        timer_slot *s = atomic_load_explicit(&g_slots[i], memory_order_relaxed);
        if (!s) break;
        disarm_locked(s);
    }
    pthread_mutex_unlock(&g_lock);
    free(ts->threads);
    free(ts);
}

d9_source *d9_timer_sampler_open(uint32_t hz, d9_collector *c, d9_timer_report *rep) {
    memset(rep, 0, sizeof *rep);
    timer_src *ts = calloc(1, sizeof *ts);
    if (!ts) {
        rep->err = -ENOMEM;
        return NULL;
    }
    ts->interval_ns = 1000000000ull / (hz ? hz : 1);
    ts->collector = c;
    ts->base.name = "timer";
    ts->base.collect = source_collect;
    ts->base.close = source_close;
    ts->base.ctx = ts;
    pthread_mutex_lock(&g_lock);
    int rc = install_handler(&rep->chained);
    if (rc != 0) {
        pthread_mutex_unlock(&g_lock);
        free(ts);
        rep->err = rc;
        return NULL;
    }
    atomic_store_explicit(&g_active, ts, memory_order_release);
    /* threads that registered before this run never call the hook again */
    size_t n = 0;
    d9_thread **threads = d9_threads_snapshot(&n);
    d9_thread *self = d9_thread_peek();
    for (size_t i = 0; threads && i < n; i++)
        if (!atomic_load_explicit(&threads[i]->exited, memory_order_acquire))
            arm_locked(ts, threads[i], threads[i]->tid, threads[i] == self);
    free(threads);
    rep->threads = (unsigned)atomic_load(&ts->armed);
    pthread_mutex_unlock(&g_lock);
    return &ts->base;
}

void d9_timer_sampler_forget_after_fork(void) {
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    g_lock = fresh;
    atomic_store(&g_active, NULL);
    for (uint32_t i = 0; i < MAX_SLOTS; i++) {
        timer_slot *s = atomic_load_explicit(&g_slots[i], memory_order_relaxed);
        if (!s) break;
        atomic_store(&s->state, SLOT_FREE); /* the child has none of the parent's timers */
    }
}

void d9_timer_sampler_counters(d9_source *src, d9_timer_counters *out) {
    timer_src *ts = src->ctx;
    out->samples = atomic_load(&ts->samples);
    out->lost = atomic_load(&ts->lost);
    out->threads_armed = atomic_load(&ts->armed);
    out->arm_failures = atomic_load(&ts->arm_failures);
}
