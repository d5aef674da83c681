/* The hooks: each appends one raw record to the calling thread's ring. No lock, allocation or
 * system call here, but park's read of the thread's CPU time and park/unpark's of schedstat (by
 * design: dial9's fields); everything else is the collector's. */
#include <stdatomic.h>
#include <string.h>

#include "core/clock.h"
#include "core/event_types.h"
#include "core/flight_rule_wake.h"
#include "core/fork_guard.h"
#include "core/locations.h"
#include "core/poll_cpu.h"
#include "core/records.h"
#include "core/schedstat.h"
#include "core/thread_cpu_clock.h"
#include "core/thread_cpu_time.h"
#include "core/thread_buffer.h"
#include "core/workers.h"
#include "dial9/dial9.h"

int d9__active;
int d9__paused;

#define BEGIN(words)                                                                       \
    d9_thread *t = d9_thread_current();                                                    \
    if (__builtin_expect(t == NULL, 0)) return;                                            \
    uint64_t *r = d9_thread_reserve(t, (words));                                           \
    if (__builtin_expect(r == NULL, 0)) return

/* A hook's fast path: the thread has a ring with room for `words` more words, the clock is the
 * TSC and `cond` holds. Otherwise (the thread's first event, a full ring, an owed record, a
 * location not interned yet) its slow twin, the whole hook, does it. The fast path calls
 * nothing, so it saves no register: a hook that may call paid ~18 instructions of prologue and
 * epilogue per event (this library keeps frame pointers), a third of the hook. */
#define FAST_PATH(words, cond, slow_call)                                                  \
    d9_thread *t = d9__tls_thread;                                                         \
    if (__builtin_expect(!t || t->head + (words) > t->limit || !(cond) ||                  \
                             !__atomic_load_n(&d9_clock_use_tsc, __ATOMIC_RELAXED), 0)) {  \
        slow_call;                                                                         \
        return;                                                                            \
    }                                                                                      \
    uint64_t *r = t->ring + (t->head & t->mask)

/* The same on either clock, for the hooks' twins where the kernel does not vouch for the TSC (a
 * kvm-clock guest): there every poll used to take the slow twin, ~76 instructions an event
 * besides clock_gettime against ~33 with the TSC (callgrind, test_poll_instructions). Park and
 * unpark keep theirs (their schedstat read decides the path). */
#define FAST_PATH_READING(words, cond, slow_call, read_clock)                              \
    d9_thread *t = d9__tls_thread;                                                         \
    if (__builtin_expect(!t || t->head + (words) > t->limit || !(cond), 0)) {              \
        slow_call;                                                                         \
        return;                                                                            \
    }                                                                                      \
    uint64_t ticks = (read_clock);                                                         \
    uint64_t *r = t->ring + (t->head & t->mask)
/* The other clock's twins read it first, before the thread's state: then only the hook's own
 * arguments live across clock_gettime (one callee-saved register fewer to save and restore),
 * and the clock's choice, tested by the hook that called the twin, is not tested again. The
 * slow twin reads the clock anew (the thread's first event, a full ring: rare). */
#define FAST_PATH_ANY_CLOCK(words, cond, slow_call)                                        \
    uint64_t ticks = d9_mono_ns();                                                         \
    d9_thread *t = d9__tls_thread;                                                         \
    if (__builtin_expect(!t || t->head + (words) > t->limit || !(cond), 0)) {              \
        slow_call;                                                                         \
        return;                                                                            \
    }                                                                                      \
    uint64_t *r = t->ring + (t->head & t->mask)

/* Hooks with a twin for the other clock test the clock first, so that twin need not test
 * again what the hook's fast path tests. */
#define UNLESS_TSC(other_clock_call)                                                       \
    if (__builtin_expect(!__atomic_load_n(&d9_clock_use_tsc, __ATOMIC_RELAXED), 0)) {      \
        other_clock_call;                                                                  \
        return;                                                                            \
    }

#define SLOW static __attribute__((noinline, cold))

/* A reservation for two events' records failed: the reserve counted one drop, this the other. */
static inline void count_second_drop(d9_thread *t) {
    atomic_store_explicit(&t->drops_total, atomic_load_explicit(&t->drops_total, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

static inline uint32_t loc_id_if_known(const d9_loc *where) {
    return where ? __atomic_load_n(&where->id, __ATOMIC_ACQUIRE) : 0;
}

#define POLL_BEGIN_BODY(ticks)                                                             \
    r[0] = D9_REC_HEADER((ticks), D9_REC_POLL_BEGIN);                                      \
    r[1] = task_id;                                                                        \
    r[2] = loc | (uint64_t)t->local_queue << 32;                                           \
    d9_thread_commit(t, D9_REC_WORDS_POLL_BEGIN);                                          \
    t->unpark_ticks = 0; /* a readiness wake after a poll was not found by that unpark */  \
    __atomic_store_n(&t->in_poll, true, __ATOMIC_RELAXED); /* read by pause_ends.c */      \
    d9_poll_cpu_begin(ticks) /* poll_cpu.h: the task-clock page's lock now */

/* loc: the location's id, interned */
SLOW void poll_begin_slow_loc(uint64_t task_id, uint32_t loc) {
    BEGIN(D9_REC_WORDS_POLL_BEGIN);
    uint64_t now = d9_clock_ticks(); /* once: the body uses it twice */
    POLL_BEGIN_BODY(now);
}

SLOW void poll_begin_slow(uint64_t task_id, const d9_loc *where) { poll_begin_slow_loc(task_id, d9_loc_id(where)); }

/* The thread's first event, the ring's wrap point: a poll's begin at the caller's time `now`
 * (d9__unpark_wake_ready_poll_begin's, the unpark's). */
SLOW void poll_begin_slow_at(uint64_t task_id, uint32_t loc, uint64_t now) {
    BEGIN(D9_REC_WORDS_POLL_BEGIN);
    POLL_BEGIN_BODY(now);
}

/* Not the TSC: the same fast path with the clock read as a call (not inlined into the hook,
 * whose TSC path then stays free of a prologue). A location not interned yet goes slow before
 * the clock read, so that only the task and the location's id live across it. */
static __attribute__((noinline)) void poll_begin_other_clock(uint64_t task_id, const d9_loc *where) {
    uint32_t loc = loc_id_if_known(where);
    if (__builtin_expect(loc == 0, 0)) {
        poll_begin_slow(task_id, where);
        return;
    }
    FAST_PATH_ANY_CLOCK(D9_REC_WORDS_POLL_BEGIN, true, poll_begin_slow_loc(task_id, loc));
    POLL_BEGIN_BODY(ticks);
}

void d9__poll_begin(uint64_t task_id, const d9_loc *where) {
    UNLESS_TSC(poll_begin_other_clock(task_id, where));
    uint32_t loc = loc_id_if_known(where);
    FAST_PATH_READING(D9_REC_WORDS_POLL_BEGIN, loc != 0, poll_begin_slow(task_id, where), __rdtsc());
    POLL_BEGIN_BODY(ticks);
}

#define POLL_END_BODY(ticks)                                                               \
    r[0] = D9_REC_HEADER((ticks), D9_REC_POLL_END);                                        \
    d9_thread_commit(t, D9_REC_WORDS_POLL_END);                                            \
    __atomic_store_n(&t->in_poll, false, __ATOMIC_RELAXED);                                \
    d9_rule_wake_poll_end(ticks);                                                          \
    d9_poll_cpu_end(ticks) /* poll_cpu.h: a long poll with a switch inside, its CPU time */

SLOW void poll_end_slow(void) {
    BEGIN(D9_REC_WORDS_POLL_END);
    uint64_t now = d9_clock_ticks(); /* once: the body uses it twice */
    POLL_END_BODY(now);
}

static __attribute__((noinline)) void poll_end_other_clock(void) {
    FAST_PATH_ANY_CLOCK(D9_REC_WORDS_POLL_END, true, poll_end_slow());
    POLL_END_BODY(ticks);
}

void d9__poll_end(void) {
    UNLESS_TSC(poll_end_other_clock());
    FAST_PATH_READING(D9_REC_WORDS_POLL_END, true, poll_end_slow(), __rdtsc());
    POLL_END_BODY(ticks);
}

/* A poll's end and the next poll's begin, back to back on this thread (a callback nested in
 * another's, the shim's loop moving on to another connection): one clock read for both
 * records, both committed at once. The records are the two of d9__poll_end and d9__poll_begin,
 * at the same tick: the time between the two calls was nobody's anyway. */
#define POLL_END_BEGIN_WORDS (D9_REC_WORDS_POLL_END + D9_REC_WORDS_POLL_BEGIN)
#define POLL_END_BEGIN_BODY(ticks)                                                         \
    r[0] = D9_REC_HEADER((ticks), D9_REC_POLL_END);                                        \
    r[D9_REC_WORDS_POLL_END] = D9_REC_HEADER((ticks), D9_REC_POLL_BEGIN);                  \
    r[D9_REC_WORDS_POLL_END + 1] = task_id;                                                \
    r[D9_REC_WORDS_POLL_END + 2] = loc | (uint64_t)t->local_queue << 32;                   \
    d9_thread_commit(t, POLL_END_BEGIN_WORDS);                                             \
    t->unpark_ticks = 0;                                                                   \
    __atomic_store_n(&t->in_poll, true, __ATOMIC_RELAXED);                                 \
    d9_rule_wake_poll_end_begin(ticks);                                                    \
    d9_poll_cpu_end_begin(ticks) /* poll_cpu.h */

SLOW void poll_end_begin_slow_loc(uint64_t task_id, uint32_t loc) {
    d9_thread *t = d9_thread_current();
    if (__builtin_expect(t == NULL, 0)) return;
    uint64_t *r = d9_thread_reserve(t, POLL_END_BEGIN_WORDS);
    if (__builtin_expect(r == NULL, 0)) { /* two events lost */
        count_second_drop(t);
        return;
    }
    uint64_t now = d9_clock_ticks(); /* once: the body uses it twice */
    POLL_END_BEGIN_BODY(now);
}

SLOW void poll_end_begin_slow(uint64_t task_id, const d9_loc *where) {
    poll_end_begin_slow_loc(task_id, d9_loc_id(where));
}

static __attribute__((noinline)) void poll_end_begin_other_clock(uint64_t task_id, const d9_loc *where) {
    uint32_t loc = loc_id_if_known(where);
    if (__builtin_expect(loc == 0, 0)) { /* as poll_begin_other_clock */
        poll_end_begin_slow(task_id, where);
        return;
    }
    FAST_PATH_ANY_CLOCK(POLL_END_BEGIN_WORDS, true, poll_end_begin_slow_loc(task_id, loc));
    POLL_END_BEGIN_BODY(ticks);
}

void d9__poll_end_begin(uint64_t task_id, const d9_loc *where) {
    UNLESS_TSC(poll_end_begin_other_clock(task_id, where));
    uint32_t loc = loc_id_if_known(where);
    FAST_PATH_READING(POLL_END_BEGIN_WORDS, loc != 0, poll_end_begin_slow(task_id, where), __rdtsc());
    POLL_END_BEGIN_BODY(ticks);
}

/* Paused: only an end whose begin was recorded (a pause from inside the poll). Polls do not
 * nest in the format (the adapters end the outer one before an inner one begins): one flag. */
void d9__poll_end_paused(void) {
    d9_thread *t = d9_thread_current();
    if (t && __atomic_load_n(&t->in_poll, __ATOMIC_RELAXED)) d9__poll_end();
}

uint32_t d9_thread_cpu_time_key[2];

/* The cpu_time_ns of a park or unpark: by default read at the park only (a system call,
 * thread_cpu_time.h says why and why once), an unpark carrying its park's value. A park leaves
 * the recording's park key on the thread, and an unpark carries the park's value when that is
 * its unpark key (equal only with `park`), taking it off: one compare tells an unpark whose
 * park's value it may carry; another one (the thread's first, the first after d9_start, a
 * second unpark) reads. */
static inline __attribute__((always_inline)) uint64_t park_cpu_time(d9_thread *t, unsigned kind, uint64_t now) {
    uint32_t gen = __atomic_load_n(&d9_thread_cpu_clock_gen, __ATOMIC_RELAXED); /* 0 with `off` */
    if (now && gen) {
        uint64_t page = d9_thread_cpu_clock_ns(kind == D9_REC_UNPARK ? D9_TCC_UNPARK : D9_TCC_PARK, now,
                                               gen); /* no system call but rare reads: thread_cpu_clock.h */
        if (__builtin_expect(page != D9_TCC_NONE, 1)) {
            if (kind == D9_REC_PARK) t->park_cpu_key = 0; /* its unpark never carries an older value */
            return page;
        }
    }
    uint32_t key = __atomic_load_n(&d9_thread_cpu_time_key[kind == D9_REC_UNPARK], __ATOMIC_RELAXED);
    if (kind == D9_REC_UNPARK && t->park_cpu_key == key) {
        t->park_cpu_key = 0;
        return t->park_cpu_ns;
    }
    if (kind == D9_REC_PARK) t->park_cpu_key = key; /* before the read: only `t` lives across it */
    uint64_t cpu = (key & 3) == D9_THREAD_CPU_TIME_OFF ? 0 : d9_thread_cpu_time_ns();
    if (kind == D9_REC_PARK) t->park_cpu_ns = cpu;
    return cpu;
}

/* Where the calling thread's park and unpark take its CPU time this recording, tested once at a
 * hook's entry: its page (the page paths), none to be had (syscall's paths without a call to
 * be told so: a lazy thread before its first long poll, one refused), or ask (the general
 * paths: DIAL9_THREAD_CPU=syscall, and a thread not set up yet under this recording). */
enum cpu_source { CPU_FROM_PAGE, CPU_NO_PAGE, CPU_GENERAL };
static inline __attribute__((always_inline)) enum cpu_source cpu_source(void) {
    uint32_t gen = __atomic_load_n(&d9_thread_cpu_clock_gen, __ATOMIC_RELAXED);
    if (__builtin_expect(!gen, 0)) return CPU_GENERAL;
    uint32_t differs = d9__tls_cpu_clock.gen ^ gen;
    if (__builtin_expect(!differs, 1)) return CPU_FROM_PAGE;
    return differs == D9_TCC_LAZY || differs == D9_TCC_NO_PAGE ? CPU_NO_PAGE : CPU_GENERAL;
}

/* Every park and unpark carries the thread's CPU time (dial9 requires cpu_time_ns on both;
 * park_cpu_time) and, when due, schedstat's run-queue wait (at most one read per
 * DIAL9_SCHEDSTAT_RESOLUTION_US per thread). The slow twin registers the thread and reads
 * schedstat. `now`: the hook's time (0: read it here, after registering), from the fast path;
 * a park's comes with its CPU time `park_cpu`, already read there. */
#define CPU_NOT_READ UINT64_MAX /* park_record's park_cpu: read it there */
SLOW void park_record(unsigned kind, uint64_t now, uint64_t park_cpu, bool with_end, bool keep_now) {
    d9_thread *t = d9_thread_current();
    if (!t) return;
    bool have_cpu = now && park_cpu != CPU_NOT_READ;
    if (!now) now = d9_clock_ticks(); /* an unpark is stamped at entry, when the wait ended */
    uint64_t wait = D9_NS_UNKNOWN;
    if (__atomic_load_n(&d9_schedstat_enabled, __ATOMIC_RELAXED)) {
        uint32_t run = __atomic_load_n(&d9_schedstat_run, __ATOMIC_RELAXED);
        if (now - t->schedstat_ticks >= __atomic_load_n(&d9_schedstat_min_ticks, __ATOMIC_RELAXED) ||
            t->schedstat_run != run) {
            d9_schedstat_read(t, &wait);
            t->schedstat_ticks = now;
            t->schedstat_run = run;
        } else {
            wait = D9_NS_NOT_READ;
        }
    }
    bool page = __atomic_load_n(&d9_thread_cpu_clock_gen, __ATOMIC_RELAXED); /* read at the hook's time */
    uint64_t cpu = have_cpu ? park_cpu : page ? CPU_NOT_READ : park_cpu_time(t, kind, 0);
    /* after the reads, as close to blocking as it gets; but a park with a poll's end (in its
     * record, or just before it: d9__poll_end_park) keeps the end's time */
    if (kind == D9_REC_PARK && !keep_now) now = d9_clock_ticks();
    if (cpu == CPU_NOT_READ) cpu = park_cpu_time(t, kind, now);
    t->unpark_ticks = kind == D9_REC_UNPARK ? now : 0;
    __atomic_store_n(&t->parked, kind == D9_REC_PARK, __ATOMIC_RELAXED);
    uint64_t *r = d9_thread_reserve(t, D9_REC_WORDS_PARK);
    if (!r) {
        if (with_end) count_second_drop(t); /* two events lost */
        return;
    }
    r[0] = D9_REC_HEADER(now, with_end ? D9_REC_POLL_END_PARK : kind);
    r[1] = cpu;
    r[2] = wait;
    r[3] = t->local_queue;
    d9_thread_commit(t, D9_REC_WORDS_PARK);
    d9_rule_wake_schedstat(kind == D9_REC_UNPARK, wait, now); /* a sched_delay_ms rule's wake */
}

/* The fast path of a park or unpark whose schedstat read is not due (nearly all of a busy
 * loop's): the same record as park_record's. One clock read each: an unpark is stamped at
 * entry (when the wait ended), a park after its CPU time's read (as close to blocking as it
 * gets), and that one time also decides whether schedstat is due (reading the clock at the
 * park's entry too cost ~15 instructions and, on CLOCK_MONOTONIC, ~28 ns a park). The park's
 * clock_gettime stays a call, so a prologue is paid anyway; what this saves is the slow twin's
 * register traffic. On CLOCK_MONOTONIC (callgrind, test_poll_instructions) a park+unpark pair
 * takes 164.1 instructions besides clock_gettime's own and 3 clock_gettime calls; 165.1 and 5
 * with the CPU time read at both and the clock read twice at the park, 204.1 on park_record's
 * path. */
static inline __attribute__((always_inline)) void park_fast(unsigned kind, uint64_t given_now, uint64_t woken) {
    /* woken: an unpark's, as park_page's, the unpark and that task's ready wake in one record
     * (where park_record takes over, two records); a park's (WITH_POLL_END, a constant), the
     * poll's end at its time in its record (D9_REC_POLL_END_PARK); a constant 0 otherwise */
    const bool with_end = kind == D9_REC_PARK && woken;
    d9_thread *t = d9__tls_thread;
    if (__builtin_expect(!t, 0)) {
        park_record(kind, given_now, given_now ? CPU_NOT_READ : 0, with_end, with_end);
        if (woken && !with_end) d9__wake_ready(woken);
        return;
    }
    uint64_t cpu = CPU_NOT_READ;
    bool page = __atomic_load_n(&d9_thread_cpu_clock_gen, __ATOMIC_RELAXED); /* read after the clock */
    if (kind == D9_REC_PARK && !page && !given_now) {
        cpu = park_cpu_time(t, kind, 0);
        t = d9__tls_thread;
    }
    uint64_t now = given_now ? given_now : d9_clock_ticks();
    if (page) {
        cpu = park_cpu_time(t, kind, now);
        t = d9__tls_thread;
    }
    uint64_t wait = D9_NS_UNKNOWN;
    if (__atomic_load_n(&d9_schedstat_enabled, __ATOMIC_RELAXED)) {
        if (__builtin_expect(
                now - t->schedstat_ticks >= __atomic_load_n(&d9_schedstat_min_ticks, __ATOMIC_RELAXED) ||
                    t->schedstat_run != __atomic_load_n(&d9_schedstat_run, __ATOMIC_RELAXED),
                0)) {
            park_record(kind, now, cpu, with_end, with_end);
            if (woken && !with_end) d9__wake_ready(woken); /* stamped with the unpark's tick, t->unpark_ticks */
            return;
        }
        wait = D9_NS_NOT_READ;
    }
    if (cpu == CPU_NOT_READ) cpu = park_cpu_time(t, kind, now);
    t = d9__tls_thread;
    t->unpark_ticks = kind == D9_REC_UNPARK ? now : 0;
    __atomic_store_n(&t->parked, kind == D9_REC_PARK, __ATOMIC_RELAXED);
    const uint64_t words = woken && !with_end ? D9_REC_WORDS_UNPARK_WAKE : D9_REC_WORDS_PARK;
    uint64_t *r = d9_thread_reserve(t, words);
    if (__builtin_expect(!r, 0)) {
        if (woken) count_second_drop(t); /* two events lost */
        return;
    }
    r[0] = D9_REC_HEADER(now, with_end ? D9_REC_POLL_END_PARK : woken ? D9_REC_UNPARK_WAKE : kind);
    r[1] = cpu;
    r[2] = wait;
    r[3] = t->local_queue;
    if (woken && !with_end) r[4] = woken;
    d9_thread_commit(t, words);
}

/* park_fast for a thread the hook found without its page this recording (CPU_NO_PAGE: lazy
 * before its first long poll, or refused): syscall's path, the CPU time by the system call's
 * rules alone, not asked of the page first (a test of the thread's gen each, ~9 instructions).
 * A copy, not park_fast with a flag: that flag, even constant, changed park_fast's code for the
 * other callers (+4 instructions a park + unpark with DIAL9_THREAD_CPU=syscall, callgrind). */
static inline __attribute__((always_inline)) uint64_t no_page_cpu_time(d9_thread *t, unsigned kind) {
    uint32_t key = __atomic_load_n(&d9_thread_cpu_time_key[kind == D9_REC_UNPARK], __ATOMIC_RELAXED);
    if (kind == D9_REC_UNPARK && t->park_cpu_key == key) {
        t->park_cpu_key = 0;
        return t->park_cpu_ns;
    }
    if (kind == D9_REC_PARK) t->park_cpu_key = key;
    uint64_t cpu = (key & 3) == D9_THREAD_CPU_TIME_OFF ? 0 : d9_thread_cpu_time_ns();
    if (kind == D9_REC_PARK) t->park_cpu_ns = cpu;
    return cpu;
}
static inline __attribute__((always_inline)) void park_fast_no_page(unsigned kind, uint64_t given_now, uint64_t woken) {
    const bool with_end = kind == D9_REC_PARK && woken;
    d9_thread *t = d9__tls_thread;
    if (__builtin_expect(!t, 0)) {
        park_record(kind, given_now, given_now ? CPU_NOT_READ : 0, with_end, with_end);
        if (woken && !with_end) d9__wake_ready(woken);
        return;
    }
    uint64_t cpu = CPU_NOT_READ;
    if (kind == D9_REC_PARK && !given_now) {
        cpu = no_page_cpu_time(t, kind);
        t = d9__tls_thread;
    }
    uint64_t now = given_now ? given_now : d9_clock_ticks();
    uint64_t wait = D9_NS_UNKNOWN;
    if (__atomic_load_n(&d9_schedstat_enabled, __ATOMIC_RELAXED)) {
        if (__builtin_expect(
                now - t->schedstat_ticks >= __atomic_load_n(&d9_schedstat_min_ticks, __ATOMIC_RELAXED) ||
                    t->schedstat_run != __atomic_load_n(&d9_schedstat_run, __ATOMIC_RELAXED),
                0)) {
            park_record(kind, now, cpu, with_end, with_end);
            if (woken && !with_end) d9__wake_ready(woken);
            return;
        }
        wait = D9_NS_NOT_READ;
    }
    if (cpu == CPU_NOT_READ) cpu = no_page_cpu_time(t, kind);
    t = d9__tls_thread;
    t->unpark_ticks = kind == D9_REC_UNPARK ? now : 0;
    __atomic_store_n(&t->parked, kind == D9_REC_PARK, __ATOMIC_RELAXED);
    const uint64_t words = woken && !with_end ? D9_REC_WORDS_UNPARK_WAKE : D9_REC_WORDS_PARK;
    uint64_t *r = d9_thread_reserve(t, words);
    if (__builtin_expect(!r, 0)) {
        if (woken) count_second_drop(t);
        return;
    }
    r[0] = D9_REC_HEADER(now, with_end ? D9_REC_POLL_END_PARK : woken ? D9_REC_UNPARK_WAKE : kind);
    r[1] = cpu;
    r[2] = wait;
    r[3] = t->local_queue;
    if (woken && !with_end) r[4] = woken;
    d9_thread_commit(t, words);
}

/* given_now: the clock read at the hook's entry by park_page (0: park_fast reads it). */
static __attribute__((noinline)) void park_any(unsigned kind, uint64_t given_now) { park_fast(kind, given_now, 0); }
/* An unpark with its first ready wake where park_page does not take it (no task-clock page, its
 * tests failed): park_fast's one record, or two where park_record takes over. */
static __attribute__((noinline)) void park_any_wake(uint64_t given_now, uint64_t woken) {
    park_fast(D9_REC_UNPARK, given_now, woken);
}
/* The same for a thread the hook found without its page (CPU_NO_PAGE): syscall's instructions. */
static __attribute__((noinline)) void park_no_page(unsigned kind, uint64_t given_now) {
    park_fast_no_page(kind, given_now, 0);
}
static __attribute__((noinline)) void park_no_page_wake(uint64_t given_now, uint64_t woken) {
    park_fast_no_page(D9_REC_UNPARK, given_now, woken);
}

/* park_page's cases it does not take: park_any's records at the time it read, then the poll's
 * begin at that time. Out of line, so that park_page calls nothing but in tail position and
 * keeps no frame (it saved four registers for this call: ~19 instructions an unpark). */
SLOW void park_page_other(unsigned kind, uint64_t now, uint64_t woken, uint64_t begin_task, uint32_t begin_loc) {
    if (woken) park_any_wake(now, woken);
    else park_any(kind, now);
    if (begin_loc) poll_begin_slow_at(begin_task, begin_loc, now);
    d9_thread *t = d9__tls_thread;
    d9_schedstat_keep_if_stale(t, now); /* for the fast paths after this one */
}

/* The task-clock page's common cases, in a function of their own so that nothing lives across
 * its one call (clock_gettime on CLOCK_MONOTONIC; none with the TSC): the clock read first,
 * then the thread, its page unchanged since the last reading (or, at an unpark, moved: the
 * page's value), schedstat not due and room in the ring; anything else goes to park_any with
 * the time read (a tail call). park_fast's frame saved five registers for its calls (~14
 * instructions a park or unpark). The same record, the same values, in the same order of
 * reads: the clock, then the page. */
static inline __attribute__((always_inline)) void park_page(unsigned kind, uint64_t now, uint64_t woken,
                                                            uint64_t begin_task, uint32_t begin_loc) {
    /* woken (an unpark's only; a constant 0 for the others): the first task the poller found
     * ready, its readiness wake in the unpark's record (D9_REC_UNPARK_WAKE); begin_loc (an
     * unpark's only; a constant 0 for the others): the first callback's poll of task
     * begin_task begins at the unpark's time, its record after the unpark's in one commit
     * (d9__unpark_wake_ready_poll_begin) */
    const uint64_t unpark_words = woken ? D9_REC_WORDS_UNPARK_WAKE : D9_REC_WORDS_PARK;
    const uint64_t words = unpark_words + (begin_loc ? D9_REC_WORDS_POLL_BEGIN : 0);
    d9_thread *t = d9__tls_thread;
    d9_tcc_state *s = &d9__tls_cpu_clock; /* its page this recording's: the hook tested (cpu_source) */
    if (__builtin_expect(!t, 0)) goto other;
    uint32_t lock = s->page->lock;
    __asm__ __volatile__("" ::: "memory"); /* as d9_thread_cpu_clock_ns: the lock before the rest */
    double ns_per_tick;
    __atomic_load(&d9_thread_cpu_ns_per_tick, &ns_per_tick, __ATOMIC_RELAXED);
    /* schedstat not due (schedstat.h) and room in the ring: the thread's fields, read once
     * before any store (a store into the ring may alias them for the compiler) */
    uint64_t head = t->head;
    if (__builtin_expect(!(ns_per_tick > 0) || !d9_schedstat_skips(t, now) || head + words > t->limit, 0))
        goto other;
    /* What the record takes from the arguments and the thread's fields goes into the ring
     * first (room is there; nothing is committed before the end): what lives on is the slot,
     * not the three arguments, so that the page's snapshot below needs no register saved (a
     * frame of four: ~12 instructions an unpark). `other` reads them back from the slot. */
    uint64_t *r = t->ring + (head & t->mask);
    uint64_t local_queue = t->local_queue;
    r[2] = t->park_wait;
    r[3] = local_queue;
    if (woken) r[4] = woken;
    if (begin_loc) {
        r[unpark_words + 1] = begin_task;
        r[unpark_words + 2] = begin_loc | local_queue << 32;
    }
    /* The lock moved (the thread was switched in since the last value): a park takes its
     * rules in park_any (d9_tcc_step: the CPU time at that switch-in when it is short by less
     * than d9_tcc_park_slack_ns, else a read); an unpark, nearly every one of a server that
     * slept in its poller, takes the page's own value, here without a call (d9_tcc_step's
     * unpark), unless the page is still the one its park left no line on (the poller did not
     * sleep: it reads). */
    uint64_t cpu; /* after every test: it moves the thread's clock on */
    if (__builtin_expect(lock == s->lock, 1)) {
        cpu = d9_tcc_estimate(s, now, ns_per_tick);
    } else {
        uint64_t page_clock;
        if (kind == D9_REC_PARK || !d9_tcc_snapshot(s->page, &lock, &page_clock, 0, 0) ||
            ((lock ^ s->lock) | D9_TCC_UNSEEN(0)) == D9_TCC_UNSEEN(0))
            goto written; /* that last: s->lock or D9_TCC_UNSEEN of it in one compare (also a
                           * lock 2^30 sched-ins away, which park_any's exact rules then take) */
        cpu = d9_tcc_anchor(s, lock, s->base_ns + page_clock, now); /* as d9_tcc_step's unpark */
    }
    if (kind == D9_REC_PARK) t->park_cpu_key = 0; /* as park_cpu_time */
    /* a begin's poll was not found by this unpark's readiness (POLL_BEGIN_BODY): 0 at once */
    t->unpark_ticks = kind == D9_REC_UNPARK && !begin_loc ? now : 0;
    __atomic_store_n(&t->parked, kind == D9_REC_PARK, __ATOMIC_RELAXED);
    r[0] = D9_REC_HEADER(now, woken ? D9_REC_UNPARK_WAKE : kind);
    r[1] = cpu;
    if (begin_loc) r[unpark_words] = D9_REC_HEADER(now, D9_REC_POLL_BEGIN); /* POLL_BEGIN_BODY's */
    t->head = head + words;
    atomic_store_explicit(&t->head_pub, head + words, memory_order_release);
    if (begin_loc) {
        __atomic_store_n(&t->in_poll, true, __ATOMIC_RELAXED);
        d9_poll_cpu_begin(now);
    }
    return;
written: /* the arguments are in the slot, as written above */
    park_page_other(kind, now, woken ? r[4] : 0, begin_loc ? r[unpark_words + 1] : 0,
                    begin_loc ? (uint32_t)r[unpark_words + 2] : 0);
    return;
other:
    park_page_other(kind, now, woken, begin_task, begin_loc); /* a tail call: no frame here */
}

static __attribute__((noinline)) void park_page_unpark(void) { park_page(D9_REC_UNPARK, d9_clock_ticks(), 0, 0, 0); }
static __attribute__((noinline)) void park_page_unpark_wake(uint64_t woken) {
    park_page(D9_REC_UNPARK, d9_clock_ticks(), woken, 0, 0);
}

/* A park keeps park_fast: one whose page moved (a switch since the unpark) reads by system call
 * there, and paid park_page's tests on top; memcached under callgrind, where most do, counted
 * +44 instructions a request that way (natively ~0.3 a request do: bench/README.md). */
void d9__park(void) { park_fast(D9_REC_PARK, 0, 0); }
void d9__unpark(void) {
    enum cpu_source from = cpu_source();
    if (__builtin_expect(from == CPU_FROM_PAGE, 1)) park_page_unpark();
    else if (__builtin_expect(from == CPU_GENERAL, 1)) park_any(D9_REC_UNPARK, 0);
    else park_no_page(D9_REC_UNPARK, 0);
}

/* An unpark and the readiness wake of the first task its poller returned (woken != 0, the
 * inline wrapper tests): one clock read, one record, one commit; the collector emits the two
 * events d9__unpark and d9__wake_ready would have made, at the same tick. */
void d9__unpark_wake_ready(uint64_t woken) {
    enum cpu_source from = cpu_source();
    if (__builtin_expect(from == CPU_FROM_PAGE, 1)) park_page_unpark_wake(woken);
    else if (from == CPU_NO_PAGE) park_no_page_wake(0, woken);
    else park_any_wake(0, woken);
}

/* The loop's poller returned and the first callback after it begins (the adapters owe the
 * unpark, with the one readiness wake its poller returned, to that callback: thread_state.h,
 * d9a_poll_enter): one clock read, one hook call and one commit for the records
 * d9__unpark_wake_ready (d9__unpark, `woken` 0) and d9__poll_begin write, at one time (park_page
 * with a begin; where its tests fail, park_any's records, then the begin's at that time). The
 * unpark moves from the poller's return to the callback's start: what the loop did between
 * (libuv's and libevent's dispatch up to the callback, libev's feeding of its ready watchers)
 * is nobody's time, as before. The shim's home-grown loops call it too, for a parked wait that
 * returned one known connection (preload_loop_work.c, one_known_ready_begins). */
static inline __attribute__((always_inline)) void unpark_begin_at(uint64_t now, uint64_t woken, uint64_t task_id,
                                                                  uint32_t loc) {
    if (woken) park_page(D9_REC_UNPARK, now, woken, task_id, loc);
    else park_page(D9_REC_UNPARK, now, 0, task_id, loc); /* a constant: the record's length */
}
/* Not the TSC: the clock read first (the three arguments live across it), then park_page. */
static __attribute__((noinline)) void unpark_begin_other_clock(uint64_t woken, uint64_t task_id, uint32_t loc) {
    unpark_begin_at(d9_mono_ns(), woken, task_id, loc);
}

static __attribute__((noinline)) void unpark_poll_begin_any(uint64_t woken, uint64_t task_id, const d9_loc *where) {
    uint32_t loc = d9_loc_id(where); /* before the clock read, as poll_begin_other_clock */
    uint64_t now = d9_clock_ticks();
    if (woken) park_any_wake(now, woken);
    else park_any(D9_REC_UNPARK, now);
    poll_begin_slow_at(task_id, loc, now);
}
/* The same for a thread the hook found without its page (CPU_NO_PAGE). */
static __attribute__((noinline)) void unpark_poll_begin_no_page(uint64_t woken, uint64_t task_id, const d9_loc *where) {
    uint32_t loc = d9_loc_id(where);
    uint64_t now = d9_clock_ticks();
    if (woken) park_no_page_wake(now, woken);
    else park_no_page(D9_REC_UNPARK, now);
    poll_begin_slow_at(task_id, loc, now);
}

void d9__unpark_wake_ready_poll_begin(uint64_t woken, uint64_t task_id, const d9_loc *where) {
    uint32_t loc = loc_id_if_known(where);
    enum cpu_source from = cpu_source();
    /* !where: loc is 0 then too, but said so the compiler does not compute loc branch-free
     * before the tests (+1 instruction on syscall's path, callgrind) */
    if (__builtin_expect(!where || !loc || from != CPU_FROM_PAGE, 0)) {
        if (from == CPU_NO_PAGE) unpark_poll_begin_no_page(woken, task_id, where);
        else unpark_poll_begin_any(woken, task_id, where);
    } else if (__builtin_expect(!__atomic_load_n(&d9_clock_use_tsc, __ATOMIC_RELAXED), 0)) {
        unpark_begin_other_clock(woken, task_id, loc);
    } else { /* the TSC: park_page inline, nothing called but in tail position, no frame */
        unpark_begin_at(__rdtsc(), woken, task_id, loc);
    }
}

/* A poll's end and the park right after it: the loop's last callback returned and its poller
 * is about to block (the adapters owe the end until then: thread_state.h, d9a_park_owing_end).
 * One clock read, one hook call and one record for both (D9_REC_POLL_END_PARK, park_fast's
 * PARK record with another kind): the collector writes the PollEnd and the WorkerPark
 * d9__poll_end and d9__park would, at one time. The poll's end
 * moves from its callback's return to the park, so the poll takes in what the loop did between
 * (its bookkeeping before it blocks: nobody's else either). The slow paths (the ring's wrap
 * point, schedstat due, the thread's first event) keep that one time too. */
#define WITH_POLL_END 1 /* park_fast's `woken` for a park: its record carries the poll's end */

/* A switch inside a long poll: its PollCpuEvent must follow its end's record (every reader pairs
 * it with its worker's latest closed poll), so the end is a record of its own (and the park's
 * after it, at the same time). False, nothing done: a short poll, which records nothing more
 * (d9_poll_cpu_end_slow's tests). A slow twin of poll_cpu.h's, as the counted tests take it. */
SLOW bool poll_end_alone_slow(uint64_t now) {
    if (!d9_poll_cpu_end_due(now, d9__tls_cpu_clock.poll_ticks)) return false;
    d9_thread *t = d9__tls_thread;
    uint64_t *r = d9_thread_reserve(t, D9_REC_WORDS_POLL_END);
    if (r) {
        POLL_END_BODY(now); /* the PollCpuEvent: before the park's CPU time, its anchor */
    }
    return true;
}

/* The general path at the hook's time `now`: the poll's end's parts, then park_fast's. */
static inline __attribute__((always_inline)) void poll_end_park_body(uint64_t now, bool no_page) {
    d9_thread *t = d9__tls_thread;
    if (__builtin_expect(t != NULL, 1)) { /* POLL_END_BODY's, but the record: the park's has it */
        if (__builtin_expect(!d9_poll_cpu_quiet(), 0) && !d9_poll_cpu_lazy_short(now) && poll_end_alone_slow(now)) {
            park_record(D9_REC_PARK, now, CPU_NOT_READ, false, true); /* at the end's time */
            return;
        }
        __atomic_store_n(&t->in_poll, false, __ATOMIC_RELAXED);
        d9_rule_wake_poll_end(now);
    }
    if (no_page) park_fast_no_page(D9_REC_PARK, now, WITH_POLL_END);
    else park_fast(D9_REC_PARK, now, WITH_POLL_END);
}

/* Every call on a thread of a recording without the task-clock page (DIAL9_THREAD_CPU=syscall,
 * perf refused): the hook as it was, its clock read inside (not cold: a cold function is
 * compiled for size, its inline helpers then calls). */
static __attribute__((noinline)) void poll_end_park_general(void) { poll_end_park_body(d9_clock_ticks(), false); }
/* The same for a thread the hook found without its page (CPU_NO_PAGE). */
static __attribute__((noinline)) void poll_end_park_no_page(void) { poll_end_park_body(d9_clock_ticks(), true); }

/* The fast path's tests failed: the general path at its time, and what the next fast path
 * decides from kept anew where it was stale (schedstat.h). Not cold either: under valgrind's
 * thread switches most parks come here (the page moved), and natively ~0.3 a request. */
static __attribute__((noinline)) void poll_end_park_slow(uint64_t now) {
    poll_end_park_body(now, false);
    d9_thread *t = d9__tls_thread;
    d9_schedstat_keep_if_stale(t, now);
}

/* The steady case, where every part of poll_end_park_slow but the record has nothing to do: no
 * poll_ms rule armed, no switch inside the poll (poll_cpu.h), none since the thread's last CPU
 * time (its page's lock unchanged: the estimate, d9_thread_cpu_clock_ns's fast path),
 * schedstat not due (schedstat.h) and room in the ring. The same record and state as that
 * path; tested before anything is stored, so anything else is that path from the start. It
 * calls nothing but in tail position: no frame, no register saved. */
static inline __attribute__((always_inline)) void poll_end_park_at(uint64_t now) {
    d9_thread *t = d9__tls_thread;
    d9_tcc_state *s = &d9__tls_cpu_clock; /* its page this recording's: the hook tested (cpu_source) */
    if (__builtin_expect(!t || __atomic_load_n(&d9_rule_wake_on, __ATOMIC_RELAXED), 0)) goto slow;
    uint32_t lock = s->page->lock;
    __asm__ __volatile__("" ::: "memory"); /* as d9_thread_cpu_clock_ns: the lock before the rest */
    double ns_per_tick;
    __atomic_load(&d9_thread_cpu_ns_per_tick, &ns_per_tick, __ATOMIC_RELAXED);
    uint64_t head = t->head;
    if (__builtin_expect(lock != s->lock || !d9_poll_cpu_quiet() || !(ns_per_tick > 0) ||
                             !d9_schedstat_skips(t, now) || head + D9_REC_WORDS_PARK > t->limit,
                         0))
        goto slow;
    uint64_t cpu = d9_tcc_estimate(s, now, ns_per_tick);
    uint64_t wait = t->park_wait, local_queue = t->local_queue;
    uint64_t *r = t->ring + (head & t->mask);
    t->park_cpu_key = 0; /* as park_cpu_time */
    t->unpark_ticks = 0;
    __atomic_store_n(&t->in_poll, false, __ATOMIC_RELAXED);
    __atomic_store_n(&t->parked, true, __ATOMIC_RELAXED);
    r[0] = D9_REC_HEADER(now, D9_REC_POLL_END_PARK);
    r[1] = cpu;
    r[2] = wait;
    r[3] = local_queue;
    t->head = head + D9_REC_WORDS_PARK;
    atomic_store_explicit(&t->head_pub, head + D9_REC_WORDS_PARK, memory_order_release);
    return;
slow:
    poll_end_park_slow(now);
}

/* Not the TSC: the clock read first, when nothing lives across it. */
static __attribute__((noinline)) void poll_end_park_other_clock(void) { poll_end_park_at(d9_mono_ns()); }

void d9__poll_end_park(void) {
    enum cpu_source from = cpu_source();
    if (__builtin_expect(from != CPU_FROM_PAGE, 0)) {
        if (from == CPU_NO_PAGE) poll_end_park_no_page();
        else poll_end_park_general();
        return;
    }
    UNLESS_TSC(poll_end_park_other_clock());
    poll_end_park_at(__rdtsc());
}

/* Paused: only the unpark of a park that was recorded (a pause while the worker waited). */
void d9__unpark_paused(void) {
    d9_thread *t = d9_thread_current();
    if (t && __atomic_load_n(&t->parked, __ATOMIC_RELAXED)) d9__unpark();
}

#define WAKE_BODY(ticks, kind)                                                             \
    r[0] = D9_REC_HEADER((ticks), (kind));                                                 \
    r[1] = woken_task_id;                                                                  \
    d9_thread_commit(t, D9_REC_WORDS_WAKE)

SLOW void wake_slow(uint64_t woken_task_id) {
    BEGIN(D9_REC_WORDS_WAKE);
    WAKE_BODY(d9_clock_ticks(), D9_REC_WAKE);
}

static __attribute__((noinline)) void wake_other_clock(uint64_t woken_task_id) {
    FAST_PATH_ANY_CLOCK(D9_REC_WORDS_WAKE, true, wake_slow(woken_task_id));
    WAKE_BODY(ticks, D9_REC_WAKE);
}

void d9__wake(uint64_t woken_task_id) {
    UNLESS_TSC(wake_other_clock(woken_task_id));
    FAST_PATH_READING(D9_REC_WORDS_WAKE, true, wake_slow(woken_task_id), __rdtsc());
    WAKE_BODY(ticks, D9_REC_WAKE);
}

/* Stamped when the poller returned (the unpark), so the wake-to-poll delay starts there; a
 * poller call that did not park (timeout 0) has no unpark: then now. */
SLOW void wake_ready_slow(uint64_t woken_task_id) {
    BEGIN(D9_REC_WORDS_WAKE);
    WAKE_BODY(t->unpark_ticks ? t->unpark_ticks : d9_clock_ticks(), D9_REC_WAKE_READY);
}

static __attribute__((noinline)) void wake_ready_other_clock(uint64_t woken_task_id) {
    FAST_PATH_READING(D9_REC_WORDS_WAKE, true, wake_ready_slow(woken_task_id),
                      t->unpark_ticks ? t->unpark_ticks : d9_mono_ns()); /* not the TSC: the hook tested */
    WAKE_BODY(ticks, D9_REC_WAKE_READY);
}

void d9__wake_ready(uint64_t woken_task_id) {
    UNLESS_TSC(wake_ready_other_clock(woken_task_id));
    FAST_PATH_READING(D9_REC_WORDS_WAKE, true, wake_ready_slow(woken_task_id),
                      t->unpark_ticks ? t->unpark_ticks : __rdtsc());
    WAKE_BODY(ticks, D9_REC_WAKE_READY);
}

#define SPAWN_BODY(ticks)                                                                  \
    r[0] = D9_REC_HEADER((ticks), D9_REC_SPAWN);                                           \
    r[1] = task_id;                                                                        \
    r[2] = loc;                                                                            \
    r[3] = (uintptr_t)object;                                                              \
    d9_thread_commit(t, D9_REC_WORDS_SPAWN)

SLOW void spawn_slow(uint64_t task_id, const d9_loc *where, const void *object) {
    uint32_t loc = d9_loc_id(where);
    BEGIN(D9_REC_WORDS_SPAWN);
    SPAWN_BODY(d9_clock_ticks());
}

static __attribute__((noinline)) void spawn_other_clock(uint64_t task_id, const d9_loc *where,
                                                        const void *object) {
    uint32_t loc = loc_id_if_known(where);
    FAST_PATH_ANY_CLOCK(D9_REC_WORDS_SPAWN, loc != 0, spawn_slow(task_id, where, object));
    SPAWN_BODY(ticks);
}

void d9__task_spawn_object(uint64_t task_id, const d9_loc *where, const void *object) {
    UNLESS_TSC(spawn_other_clock(task_id, where, object));
    uint32_t loc = loc_id_if_known(where);
    FAST_PATH_READING(D9_REC_WORDS_SPAWN, loc != 0, spawn_slow(task_id, where, object), __rdtsc());
    SPAWN_BODY(ticks);
}

void d9__task_spawn(uint64_t task_id, const d9_loc *where) {
    d9__task_spawn_object(task_id, where, NULL);
}

/* Ids come from one process-wide counter in blocks, so that a new id is a thread-local
 * increment nearly always (no shared cache line per spawn) and no id is ever handed out twice
 * while the process lives, whatever the allocator does with addresses. */
#define TASK_ID_BLOCK 256
static _Atomic uint64_t g_next_task_block = 1; /* 0 means "no task" */
/* initial-exec, as the rings' pointer: in libdial9.so the default model calls __tls_get_addr
 * (~22 instructions) at every new id */
static __thread uint64_t t_task_next __attribute__((tls_model("initial-exec")));
static __thread uint64_t t_task_end __attribute__((tls_model("initial-exec")));

uint64_t d9_task_id_new(void) {
    if (__builtin_expect(t_task_next == t_task_end, 0)) {
        t_task_next = atomic_fetch_add_explicit(&g_next_task_block, TASK_ID_BLOCK,
                                                memory_order_relaxed);
        t_task_end = t_task_next + TASK_ID_BLOCK;
    }
    return t_task_next++;
}

#define TERMINATE_BODY(ticks)                                                              \
    r[0] = D9_REC_HEADER((ticks), D9_REC_TERMINATE);                                       \
    r[1] = task_id;                                                                        \
    d9_thread_commit(t, D9_REC_WORDS_TERMINATE)

SLOW void terminate_slow(uint64_t task_id) {
    BEGIN(D9_REC_WORDS_TERMINATE);
    TERMINATE_BODY(d9_clock_ticks());
}

static __attribute__((noinline)) void terminate_other_clock(uint64_t task_id) {
    FAST_PATH_ANY_CLOCK(D9_REC_WORDS_TERMINATE, true, terminate_slow(task_id));
    TERMINATE_BODY(ticks);
}

void d9__task_terminate(uint64_t task_id) {
    UNLESS_TSC(terminate_other_clock(task_id));
    FAST_PATH_READING(D9_REC_WORDS_TERMINATE, true, terminate_slow(task_id), __rdtsc());
    TERMINATE_BODY(ticks);
}

/* A poll's end and its task's terminate right after it (the adapters' last callback of a
 * request or a closed handle: d9a_poll_exit): one clock read, one hook call and one commit for
 * the two records d9__poll_end and d9__task_terminate write, at one tick. Only where the poll's
 * end records nothing more: a switch inside the poll (the task-clock page moved since its
 * begin) may add its PollCpuEvent after the end, before the terminate, so that poll takes the
 * two hooks, as do the thread's first event and a full ring. */
#define POLL_END_TERMINATE_WORDS (D9_REC_WORDS_POLL_END + D9_REC_WORDS_TERMINATE)
#define POLL_END_TERMINATE_BODY(ticks)                                                     \
    r[0] = D9_REC_HEADER((ticks), D9_REC_POLL_END);                                        \
    r[D9_REC_WORDS_POLL_END] = D9_REC_HEADER((ticks), D9_REC_TERMINATE);                   \
    r[D9_REC_WORDS_POLL_END + 1] = task_id;                                                \
    d9_thread_commit(t, POLL_END_TERMINATE_WORDS);                                         \
    __atomic_store_n(&t->in_poll, false, __ATOMIC_RELAXED);                                \
    d9_rule_wake_poll_end(ticks)

/* The thread's first event, the ring's wrap point: the two records at one time, `now`, still; a
 * PollCpuEvent due: the end's record and what its poll_cpu.h part adds, then the terminate's,
 * each reserved alone, at that one time too. */
SLOW void poll_end_terminate_at(uint64_t task_id, uint64_t now) {
    d9_thread *t = d9_thread_current();
    if (__builtin_expect(t == NULL, 0)) return;
    uint64_t *r;
    if (!d9_poll_cpu_nothing_due(now)) {
        if ((r = d9_thread_reserve(t, D9_REC_WORDS_POLL_END)) != NULL) {
            POLL_END_BODY(now);
        }
        if ((r = d9_thread_reserve(t, D9_REC_WORDS_TERMINATE)) != NULL) {
            TERMINATE_BODY(now);
        }
        return;
    }
    r = d9_thread_reserve(t, POLL_END_TERMINATE_WORDS);
    if (__builtin_expect(r == NULL, 0)) { /* two events lost */
        count_second_drop(t);
        return;
    }
    POLL_END_TERMINATE_BODY(now);
}

SLOW void poll_end_terminate_slow(uint64_t task_id) { poll_end_terminate_at(task_id, d9_clock_ticks()); }

static __attribute__((noinline)) void poll_end_terminate_other_clock(uint64_t task_id) {
    FAST_PATH_ANY_CLOCK(POLL_END_TERMINATE_WORDS, d9_poll_cpu_quiet(), poll_end_terminate_slow(task_id));
    POLL_END_TERMINATE_BODY(ticks);
}

void d9__poll_end_terminate(uint64_t task_id) {
    UNLESS_TSC(poll_end_terminate_other_clock(task_id));
    FAST_PATH_READING(POLL_END_TERMINATE_WORDS, d9_poll_cpu_quiet(), poll_end_terminate_slow(task_id), __rdtsc());
    POLL_END_TERMINATE_BODY(ticks);
}

/* A poll's end, its task's terminate and the park right after them: the loop's last callback
 * completed a request and its poller is about to block (the adapters owe the end and the
 * terminate until then: thread_state.h, d9a_park_owing_end). One clock read and one hook call
 * for the three records d9__poll_end_terminate and d9__park write, at one time (as
 * d9__poll_end_park: the poll and the task take in the loop's bookkeeping before it blocks). */
void d9__poll_end_terminate_park(uint64_t task_id) {
    uint64_t now = d9_clock_ticks();
    d9_thread *t = d9__tls_thread;
    if (__builtin_expect(t != NULL && t->head + POLL_END_TERMINATE_WORDS <= t->limit && d9_poll_cpu_nothing_due(now), 1)) {
        uint64_t *r = t->ring + (t->head & t->mask);
        POLL_END_TERMINATE_BODY(now);
    } else {
        poll_end_terminate_at(task_id, now);
    }
    park_fast(D9_REC_PARK, now, 0);
}

void d9__set_local_queue(uint32_t depth) {
    d9_thread *t = d9_thread_current();
    if (t) t->local_queue = depth;
}

uint32_t d9__worker_begin(const char *runtime, uint32_t index) {
    d9_fork_guard_install(); /* a thread list that a child must forget, recording or not */
    uint32_t id = d9_workers_id_for(runtime, index);
    d9_thread *t = d9_thread_current();
    if (!t) return id;
    /* Recorded whether or not recording is on: the ring then says, in order with the thread's
     * other records, when it became a worker. A d9_start racing this call either skips the
     * record with everything before its snapshot (and takes worker_id) or decodes it. */
    atomic_store_explicit(&t->ever_worker, true, memory_order_release);
    atomic_store_explicit(&t->worker_id, id, memory_order_release);
    d9_thread_record_worker(t, id);
    return id;
}

void d9__worker_end(void) {
    d9_thread *t = d9_thread_peek();
    if (!t) return;
    atomic_store_explicit(&t->worker_id, 255, memory_order_release);
    d9_thread_record_worker(t, 255); /* whether or not recording is on, as in d9__worker_begin */
}

static size_t string_words(const char *s, size_t *len) {
    size_t n = s ? strnlen(s, D9_MAX_STRING_ARG) : 0;
    *len = n;
    return 1 + (n + 7) / 8;
}

void d9__emit(const d9_event_type *type, const d9_arg *args) {
    if (!type) return;
    size_t payload = type->field_count;
    if (type->has_strings) {
        payload = 0;
        for (uint16_t i = 0; i < type->field_count; i++) {
            size_t len;
            payload += type->kinds[i] == D9_STRING ? string_words(args[i].s, &len) : 1;
        }
    }
    size_t words = 2 + payload;
    BEGIN(words);
    r[0] = D9_REC_HEADER(d9_clock_ticks(), D9_REC_CUSTOM);
    r[1] = type->index | (uint64_t)payload << 32;
    uint64_t *p = r + 2;
    for (uint16_t i = 0; i < type->field_count; i++) {
        switch (type->kinds[i]) {
        case D9_STRING: {
            size_t len;
            size_t w = string_words(args[i].s, &len);
            *p++ = len;
            if (len) {
                p[w - 2] = 0; /* zero the padding of the last word */
                memcpy(p, args[i].s, len);
            }
            p += w - 1;
            break;
        }
        case D9_BOOL: *p++ = args[i].b ? 1 : 0; break;
        case D9_F64: memcpy(p++, &args[i].f, sizeof(double)); break;
        default: *p++ = args[i].u; break;
        }
    }
    d9_thread_commit(t, words);
}

/* Spans: as cheap as a poll (the same three words and fast path). The worker, the task being
 * polled and the thread are the collector's to add, from the thread's state at this record. */
#define SPAN_BODY(ticks, kind)                                                             \
    r[0] = D9_REC_HEADER((ticks), (kind));                                                 \
    r[1] = id;                                                                             \
    r[2] = loc;                                                                            \
    d9_thread_commit(t, D9_REC_WORDS_SPAN)

SLOW void span_slow(unsigned kind, const d9_loc *name, uint64_t id) {
    uint32_t loc = d9_loc_id(name);
    BEGIN(D9_REC_WORDS_SPAN);
    SPAN_BODY(d9_clock_ticks(), kind);
}

/* A hook and its other-clock twin per kind, the kind a constant in each (as the poll hooks). */
#define SPAN_HOOK(fn, kind)                                                                \
    static __attribute__((noinline)) void fn##_other_clock(const d9_loc *name, uint64_t id) { \
        uint32_t loc = loc_id_if_known(name);                                              \
        FAST_PATH_ANY_CLOCK(D9_REC_WORDS_SPAN, loc != 0, span_slow(kind, name, id));       \
        SPAN_BODY(ticks, kind);                                                            \
    }                                                                                      \
    void fn(const d9_loc *name, uint64_t id) {                                             \
        UNLESS_TSC(fn##_other_clock(name, id));                                            \
        uint32_t loc = loc_id_if_known(name);                                              \
        FAST_PATH_READING(D9_REC_WORDS_SPAN, loc != 0, span_slow(kind, name, id), __rdtsc()); \
        SPAN_BODY(ticks, kind);                                                            \
    }

SPAN_HOOK(d9__span_begin, D9_REC_SPAN_BEGIN)
SPAN_HOOK(d9__span_end, D9_REC_SPAN_END)
