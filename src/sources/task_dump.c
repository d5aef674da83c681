/* Task dumps (see task_dump.h). On the calling thread only; no lock, no system call after the
 * thread's first capture.
 *
 * d9_task_suspend(task) at time t0:
 *   1. If a held capture's instant has passed, resolve it: scan the records this thread wrote
 *      since then for a PollStart (or TaskTerminate) of that task between its t0 and its
 *      instant. None: the task was still idle at the instant, write the TaskDumpEvent (stamped
 *      t0, the moment the stack was real). Otherwise drop it.
 *   2. The decision before walking is one comparison: is one of the D9_TASK_DUMP_SLOTS
 *      capture slots free? Slots free up only at their instants (exponential, mean 10 ms), so
 *      a thread walks at most ~SLOTS / 10 ms = 400 stacks a second however fast it suspends.
 *   3. Walk the frame pointers from here (bounded by the thread's stack) into the slot, copy
 *      the top D9_UNWIND_STACK_BYTES of the caller's stack with its sp and bp, and draw the
 *      instant t0 + Exp(10 ms). The record carries chain, registers and copy; the collector
 *      unwinds it on the background thread (d9_task_dump_unwind).
 * A task resumed on another thread (work stealing) is not seen by the scan of this thread's
 * records: its dump may be written although it ran; readers can check against its PollStart. */
#include "sources/task_dump.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/exp_log.h"
#include "core/clock.h"
#include "core/records.h"
#include "core/thread_buffer.h"
#include "dial9/dial9.h"
#include "sources/fp_unwind.h"
#include "sources/unwind_tables.h"

typedef struct held_capture {
    uint64_t task;
    uint64_t t0, instant; /* ticks */
    bool resumed;
    uint32_t n;
    uint32_t copy_len;                       /* bytes of `copy`: [sp, sp + copy_len) */
    uint64_t sp, bp;                         /* of the frame that called d9__task_suspend */
    uint64_t frames[D9_TASK_DUMP_FRAMES];    /* frames[0]: the return address into it */
    uint64_t copy[D9_UNWIND_STACK_BYTES / 8];
} held_capture;

typedef struct dump_state {
    uint64_t rng;
    uint32_t run;             /* captures belong to this recording run */
    uint32_t held;
    uint64_t next_due;        /* earliest instant among held captures */
    uint64_t scan_pos;        /* ring position (words) scanned up to */
    uint64_t drops_at_scan;   /* the thread's drop count when scanning started */
    bool resolving;           /* in resolve_due (its dumps may grow the ring) */
    int bounds_state;         /* 0 unknown, 1 known, 2 unavailable */
    d9_stack_bounds stack, alt;
    uint64_t alt_checked;     /* ticks */
    held_capture slots[D9_TASK_DUMP_SLOTS];
} dump_state;

/* Written at start and stop while threads of an earlier run may still be reading them. */
static _Atomic bool g_enabled;
static _Atomic uint32_t g_run;
static _Atomic uint64_t g_mean_ticks = D9_TASK_DUMP_MEAN_NS;
static _Atomic uint64_t g_alt_recheck_ticks = 100u * 1000u * 1000u; /* 100 ms */
static double g_ticks_per_ns = 1.0; /* start/stop only */
static pthread_key_t g_key;
static pthread_once_t g_key_once = PTHREAD_ONCE_INIT;
static __thread dump_state *tls_state __attribute__((tls_model("initial-exec")));
static _Atomic uint64_t c_suspends, c_captured, c_emitted, c_resumed, c_unknown;

/* ---------------------------------------------------------------- randomness */

static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t exp_ticks(dump_state *d) {
    double u = (double)((splitmix(&d->rng) >> 11) + 1) / 9007199254740992.0; /* (0, 1] */
    double v = d9_neg_log(u) * (double)atomic_load_explicit(&g_mean_ticks, memory_order_relaxed);
    return v < 1 ? 1 : (uint64_t)v;
}

/* ---------------------------------------------------------------- per-thread state */

static void free_state(void *p) {
    tls_state = NULL;
    free(p);
}

static void make_key(void) { pthread_key_create(&g_key, free_state); }

static dump_state *state_of_thread(void) {
    dump_state *d = tls_state;
    if (__builtin_expect(d != NULL, 1)) return d;
    pthread_once(&g_key_once, make_key);
    d = calloc(1, sizeof *d);
    if (!d) return NULL;
    d->rng = d9_clock_ticks() ^ ((uint64_t)(uintptr_t)d << 17) ^ (uint64_t)gettid();
    pthread_setspecific(g_key, d);
    tls_state = d;
    return d;
}

/* ---------------------------------------------------------------- resolving held captures */


static void drop_all(dump_state *d) {
    if (d->held) atomic_fetch_add_explicit(&c_unknown, d->held, memory_order_relaxed);
    d->held = 0;
    d->next_due = UINT64_MAX;
}

/* Mark held captures whose task ran again (PollStart or TaskTerminate after its t0 and
 * before its instant) in the records written since the last scan. False when those records
 * cannot be trusted (overwritten, or some were dropped). */
static bool scan_records(d9_thread *t, dump_state *d, uint64_t now) {
    uint64_t cap = t->mask + 1, end = t->head;
    if (end - d->scan_pos > cap) return false;
    if (d->scan_pos < t->w_ring->start) return false; /* in an older ring, maybe freed */
    if (atomic_load_explicit(&t->drops_total, memory_order_relaxed) != d->drops_at_scan) return false;
    uint64_t pos = d->scan_pos;
    while (pos < end) {
        const uint64_t *r = t->ring + (pos & t->mask);
        unsigned kind = D9_REC_KIND(r[0]);
        if (kind == D9_REC_PAD) {
            pos = (pos & ~t->mask) + cap;
            continue;
        }
        uint64_t n = d9_record_words(r);
        if (n == 0) return false;
        if (kind == D9_REC_POLL_BEGIN || kind == D9_REC_TERMINATE) {
            uint64_t tick = d9_ticks_unwrap56(D9_REC_TICKS56(r[0]), now);
            for (uint32_t i = 0; i < d->held; i++) {
                held_capture *h = &d->slots[i];
                if (h->task == r[1] && tick > h->t0 && tick <= h->instant) h->resumed = true;
            }
        }
        pos += n;
    }
    d->scan_pos = end;
    return true;
}

/* The record's payload (after the task id and its length): [0] chain length n, [1..1+n) the
 * chain, then sp, bp, the copy's length in bytes and the copy. */
#define PAYLOAD_FIXED 4

static void write_dump(d9_thread *t, const held_capture *h) {
    uint64_t copy_words = h->copy_len / 8, payload = PAYLOAD_FIXED + h->n + copy_words;
    uint64_t *r = d9_thread_reserve(t, 3 + payload);
    if (!r) return;
    r[0] = D9_REC_HEADER(h->t0, D9_REC_TASK_DUMP);
    r[1] = h->task;
    r[2] = payload;
    uint64_t *p = r + 3;
    *p++ = h->n;
    memcpy(p, h->frames, h->n * sizeof(uint64_t));
    p += h->n;
    *p++ = h->sp;
    *p++ = h->bp;
    *p++ = h->copy_len;
    memcpy(p, h->copy, copy_words * sizeof(uint64_t));
    d9_thread_commit(t, 3 + payload);
    atomic_fetch_add_explicit(&c_emitted, 1, memory_order_relaxed);
}

/* The thread is about to move to another ring; the records not scanned yet are in this one,
 * which the collector may free once it has read it: scan them now. */
static void before_ring_moves(d9_thread *t) {
    dump_state *d = tls_state;
    if (!d || d->held == 0 || d->resolving || d->run != atomic_load_explicit(&g_run, memory_order_relaxed)) return;
    if (!scan_records(t, d, d9_clock_ticks())) drop_all(d);
}

/* Set once, when the library is loaded (as the register hook, sources.c): before any thread can
 * record, so the core's plain pointer is never written while a thread reads it. Set at every
 * d9_start, it raced with a thread of the last recording moving its ring (test_mt_recorder_restart
 * under TSan, 1 of 2 soak runs at load ~25); the hook does nothing without a dump held in this
 * recording. */
__attribute__((constructor)) static void install_move_hook(void) { d9_thread_move_hook = before_ring_moves; }

static void resolve_due(d9_thread *t, dump_state *d, uint64_t now) {
    if (!scan_records(t, d, now)) {
        drop_all(d);
        return;
    }
    d->resolving = true;
    uint32_t kept = 0;
    uint64_t next_due = UINT64_MAX;
    for (uint32_t i = 0; i < d->held; i++) {
        held_capture *h = &d->slots[i];
        if (h->instant > now) {
            if (h->instant < next_due) next_due = h->instant;
            if (kept != i) d->slots[kept] = *h;
            kept++;
            continue;
        }
        if (h->resumed) atomic_fetch_add_explicit(&c_resumed, 1, memory_order_relaxed);
        else write_dump(t, h);
    }
    d->resolving = false;
    d->held = kept;
    d->next_due = next_due;
    /* our own records need no scan; drops from writing them would void the rest */
    d->scan_pos = t->head;
    d->drops_at_scan = atomic_load_explicit(&t->drops_total, memory_order_relaxed);
}

/* ---------------------------------------------------------------- capturing */

static bool bounds_for(dump_state *d, uint64_t sp, uint64_t now, d9_stack_bounds *out) {
    if (d->bounds_state == 0) d->bounds_state = d9_stack_bounds_of_self(&d->stack) ? 1 : 2;
    if (d->bounds_state == 1 && sp >= d->stack.lo && sp < d->stack.hi) {
        *out = d->stack;
        return true;
    }
    /* on another stack (a coroutine runtime): look it up, at most every 100 ms */
    if (d->alt.hi && sp >= d->alt.lo && sp < d->alt.hi) {
        *out = d->alt;
        return true;
    }
    uint64_t every = atomic_load_explicit(&g_alt_recheck_ticks, memory_order_relaxed);
    if (d->alt_checked && now - d->alt_checked < every) return false;
    d->alt_checked = now;
    if (!d9_stack_bounds_from_maps(sp, &d->alt)) {
        d->alt.lo = d->alt.hi = 0;
        return false;
    }
    *out = d->alt;
    return true;
}

__attribute__((noinline)) void d9__task_suspend(uint64_t task_id) {
    if (!atomic_load_explicit(&g_enabled, memory_order_relaxed)) return;
    d9_thread *t = d9_thread_current();
    dump_state *d = state_of_thread();
    if (!t || !d) return;
    atomic_fetch_add_explicit(&c_suspends, 1, memory_order_relaxed);
    uint64_t now = d9_clock_ticks();
    uint32_t run = atomic_load_explicit(&g_run, memory_order_relaxed);
    if (d->run != run) { /* a new recording: what was held belongs to the last one */
        d->held = 0;
        d->next_due = UINT64_MAX;
        d->run = run;
    }
    if (d->held && now >= d->next_due) resolve_due(t, d, now);
    if (d->held == D9_TASK_DUMP_SLOTS) return;

    if (d->held == 0) {
        d->scan_pos = t->head;
        d->drops_at_scan = atomic_load_explicit(&t->drops_total, memory_order_relaxed);
        d->next_due = UINT64_MAX;
    }
    held_capture *h = &d->slots[d->held];
    /* frames at and above this function's own are the live ones */
    uint64_t fp = (uint64_t)(uintptr_t)__builtin_frame_address(0);
    d9_stack_bounds b;
    bool bounded = bounds_for(d, fp, now, &b);
    h->n = (uint32_t)d9_fp_walk(0, fp, fp, bounded ? &b : NULL, h->frames, D9_TASK_DUMP_FRAMES);
    if (h->n == 0) return;
    /* Our caller as it will be when we return: its sp is above our saved rbp and return
     * address, its rbp is the one we saved (d9_fp_walk read both, so they are in bounds). */
    h->sp = fp + 16;
    h->bp = *(const uint64_t *)(uintptr_t)fp;
    h->copy_len = d9_fp_copy_stack((uint8_t *)h->copy, h->sp, bounded ? &b : NULL, D9_UNWIND_STACK_BYTES);
    h->task = task_id;
    h->t0 = now;
    h->instant = now + exp_ticks(d);
    h->resumed = false;
    if (h->instant < d->next_due) d->next_due = h->instant;
    d->held++;
    atomic_fetch_add_explicit(&c_captured, 1, memory_order_relaxed);
}

/* ---------------------------------------------------------------- lifecycle */

void d9_task_dumps_start(bool enabled, uint64_t mean_ns) {
    static bool calibrated_tsc, calibrated;
    if (!calibrated || calibrated_tsc != d9_clock_use_tsc) {
        /* Over at least 100 us since the start selected the clock: it waits only for what
         * the start has not spent since (usually nothing; it spun 100 us here before), and
         * the rate only scales the mean gap between captures (0.1 % off is plenty). */
        g_ticks_per_ns = d9_clock_ticks_per_ns(100 * 1000);
        calibrated = true;
        calibrated_tsc = d9_clock_use_tsc;
    }
    uint64_t mean = (uint64_t)((double)(mean_ns ? mean_ns : D9_TASK_DUMP_MEAN_NS) * g_ticks_per_ns);
    atomic_store(&g_mean_ticks, mean ? mean : 1);
    atomic_store(&g_alt_recheck_ticks, (uint64_t)(1e8 * g_ticks_per_ns));
    atomic_fetch_add(&g_run, 1);
    atomic_store(&g_enabled, enabled);
}

void d9_task_dumps_stop(void) { atomic_store(&g_enabled, false); }

uint32_t d9_task_dump_unwind(const uint64_t *p, uint64_t words, uint64_t *out, uint32_t max, uint8_t *method) {
    *method = D9_STACK_UNRECORDED;
    if (words < PAYLOAD_FIXED || p[0] == 0 || p[0] > D9_TASK_DUMP_FRAMES || PAYLOAD_FIXED + p[0] > words) return 0;
    uint32_t n = (uint32_t)p[0];
    const uint64_t *chain = p + 1, *regs = chain + n;
    uint64_t copy_len = regs[2];
    if (copy_len > D9_UNWIND_STACK_BYTES || PAYLOAD_FIXED + n + copy_len / 8 > words) copy_len = 0;
    d9_unwind_input in = {.ip = chain[0], .ip_is_return = true, .sp = regs[0], .bp = regs[1],
                          .stack = (const uint8_t *)(regs + 3), .stack_len = copy_len, .chain = chain, .nchain = n};
    d9_unwind_tables *t = d9_unwind_tables_acquire();
    if (!t) { /* no tables at all: the chain as walked */
        n = n < max ? n : max;
        memcpy(out, chain, n * sizeof *out);
        return n;
    }
    d9_stack_method m;
    n = d9_unwind_user_stack(t, &in, out, max, &m);
    d9_unwind_tables_release();
    *method = (uint8_t)m;
    return n;
}

void d9_task_dump_counters_get(d9_task_dump_counters *out) {
    out->suspends = atomic_load(&c_suspends);
    out->captured = atomic_load(&c_captured);
    out->emitted = atomic_load(&c_emitted);
    out->resumed = atomic_load(&c_resumed);
    out->unknown = atomic_load(&c_unknown);
}
