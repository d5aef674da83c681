/* The thread's CPU time for parks and unparks without a system call (issue #32): a per-thread
 * perf software event PERF_COUNT_SW_TASK_CLOCK (pid 0, cpu -1), its first page mapped read-only.
 *
 * What the kernel does with that page (measured on 6.18, kvm-clock, cap_user_time 0): at every
 * sched-in of the thread it rewrites the page under its seqcount `lock` (+2 per update, odd
 * during one) with `offset` = the task clock as of that sched-in; while the thread runs, the
 * page does not change. cap_user_time is 0 on kvm-clock hosts, so "now" cannot be computed
 * from the page, and need not be:
 *   - `lock` unchanged since the thread's last value: the thread ran without interruption, so
 *     its CPU time advanced exactly by the wall time elapsed (the recorder's ticks -> ns);
 *   - changed, at an unpark (the poller's call slept; the page was just rewritten at its
 *     sched-in): base + the page's task clock (the few us of the kernel's wake-up path after
 *     the sched-in are not counted there: they land in the active period that follows);
 *   - changed, at a park (the thread was descheduled inside its active period): base + the
 *     page's task clock, the CPU time as of the last sched-in, a lower bound short of the exact
 *     value by what the thread ran since that sched-in. That run is at most the wall time since
 *     the thread's last value less the CPU time the page accounts since (what is left: the
 *     off-CPU time and that run), so the page's value is taken when that is under
 *     d9_tcc_park_slack_ns (DIAL9_POLL_CPU_MIN_US / 20: 50 us), the bound on its error. No line is
 *     left (`lock` becomes D9_TCC_UNSEEN of the page's): nothing estimates from a lower bound;
 *     the next unpark takes the page's value when its poller slept (a sched-in since), and
 *     reads when it did not (the read deferred to where a value is needed);
 *   - changed, at a park with more left unaccounted, or for a long poll's CPU time (poll_cpu.h,
 *     whose exactness readers rely on), or at an unpark whose page is still the one its park
 *     left no line on: the exact task clock, by read() of the event (one system call);
 *   - a park with the page still the one a value without a line saw: that value plus the wall
 *     time (the thread ran throughout), still no line;
 *   - a poll's exact read, or an unpark's page value after the lock moved, that the thread got
 *     more than the park slack after the hook's time (a switch may have come between them, and
 *     the value is then of a later moment): stamped then, no line (thread_cpu_clock.c);
 *   - a thread's first value (its event opened): stamped after the open, no line.
 * With the thread's switch ring (thread_cpu_switch_ring.h: DIAL9_THREAD_CPU=ring, not auto:
 * priced in bench/README.md; where the kernel writes the thread's switch records; up to
 * D9_TCC_MAX_RING_THREADS threads), every
 * value after a switch comes from it instead, before any rule above: the CPU time at the last
 * switch in plus the wall time since it, exact, a new line, no system call (the park's lower
 * bound, the back-to-back unpark's read, a long poll's reads, the late stamps: none). The rules
 * above stay for a thread without its ring and when the ring cannot say (thread_cpu_clock.c).
 * Values are the task clock offset by `base`, which starts them at CLOCK_THREAD_CPUTIME_ID
 * when the thread's event opens. The one way an estimate runs ahead of the task clock: the
 * host stops the vCPU inside an uninterrupted run (no switch in the guest, so `lock` stays;
 * the wall time counts it, the guest's CPU clocks do not; seen on this bhyve guest,
 * whose /proc/stat shows no steal: 7 us and 2 ms in 20 ms runs, 0.3 % of a busy loop's time,
 * up to ~10 % at moments of heavy load). The next exact value (a
 * sched-in, a read) is then below the estimate: `base` takes the difference, so values never
 * go down, the stall stays as CPU in the period it fell in, and later deltas are exact. Where the event cannot be had (perf_event_open refused:
 * perf_event_paranoid, seccomp, EMFILE; past D9_TCC_MAX_THREADS threads; DIAL9_THREAD_CPU=
 * syscall) the park's clock_gettime stays (thread_cpu_time.h). With DIAL9_THREAD_CPU=lazy a thread
 * reads that way too until its first poll over DIAL9_POLL_CPU_MIN_US, then opens its page
 * (thread_cpu_clock_lazy.h). docs/kernel-sources.md. */
#ifndef D9_CORE_THREAD_CPU_CLOCK_H
#define D9_CORE_THREAD_CPU_CLOCK_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stdint.h>

/* What DIAL9_THREAD_CPU asks for. */
typedef enum d9_thread_cpu_source {
    D9_THREAD_CPU_AUTO = 0, /* the page where the kernel gives it, else the system call */
    D9_THREAD_CPU_PERF,     /* the page, or d9_start fails saying why */
    D9_THREAD_CPU_SYSCALL,  /* clock_gettime(CLOCK_THREAD_CPUTIME_ID), as before */
    D9_THREAD_CPU_PAGE,     /* the page without its switch ring (the read after a switch), as auto */
    D9_THREAD_CPU_RING,     /* the page with its switch ring where the kernel gives it (opt-in: it
                             * adds more to every switch of the thread than the reads it saves
                             * cost, bench/README.md), else as auto */
    D9_THREAD_CPU_LAZY      /* a thread reads by system call until its first poll over
                             * DIAL9_POLL_CPU_MIN_US, then has its page: the kernel's per-switch
                             * cost only where a poll is long (thread_cpu_clock_lazy.h) */
} d9_thread_cpu_source;
/* For the messages about a bad DIAL9_THREAD_CPU. */
#define D9_THREAD_CPU_SOURCES "auto, perf, page, ring, lazy or syscall"

/* Per-thread events at most, per process: a thread beyond them reads by system call. */
#define D9_TCC_MAX_THREADS 256
/* Of those, with a switch ring (thread_cpu_switch_ring.h): each locks a page of the user's perf
 * budget (perf_event_mlock_kb per CPU), which the CPU sampler's and switch source's rings share;
 * a thread beyond them has the page alone. */
#define D9_TCC_MAX_RING_THREADS 64

/* A thread's gen when its event was refused (or lost) under that gen. */
#define D9_TCC_NO_PAGE 0x80000000u
/* A thread's gen while it has no page until its first long poll (DIAL9_THREAD_CPU=lazy:
 * thread_cpu_clock_lazy.h). Every park and unpark then takes its no-page path. */
#define D9_TCC_LAZY 0x40000000u

/* "the value is not to be had here": the caller reads by system call. */
#define D9_TCC_NONE UINT64_MAX

/* The `lock` a value leaves when it is no line to estimate from (a park's lower bound, an exact
 * read whose snapshot tore, a thread's first value), made from the page's lock then: odd (no
 * snapshot is), and D9_TCC_UNSEEN of it gives that lock back, so an unpark sees whether the
 * page moved since. */
#define D9_TCC_UNSEEN(lock) ((lock) ^ 0x80000001u)

/* What a value is for (d9_tcc_step's rules differ). */
typedef enum d9_tcc_use {
    D9_TCC_PARK = 0,   /* a park's cpu_time_ns: a lower bound after a switch, when close enough */
    D9_TCC_UNPARK = 1, /* an unpark's: the page's value after a sched-in */
    D9_TCC_EXACT = 2,  /* a long poll's begin or end (poll_cpu.h): exact, or read */
    D9_TCC_READ = 3,   /* a long poll's end on a line made inside it: read, even without a switch
                        * since (an unpark's page value is short by what the thread ran between its
                        * sched-in and the hook; an estimate along it would leave that out of the
                        * poll: poll_cpu.c) */
    D9_TCC_OPEN = 4    /* a lazy thread's first long poll ended: open its page now (its value is the
                        * thread's first, as at a first park) */
} d9_tcc_use;

/* One thread's clock (thread-local, d9__tls_cpu_clock). */
typedef struct d9_tcc_state {
    const volatile struct perf_event_mmap_page *page; /* NULL: no event on this thread */
    uint32_t gen;      /* the d9_thread_cpu_clock_gen it has its page under (with D9_TCC_NO_PAGE:
                        * refused under it; 0: never set up) */
    int32_t slot;      /* its entry in thread_cpu_clock.c's table (-1: none) */
    uint32_t lock;     /* the page's lock when cpu_ns was given */
    uint32_t exact_reads; /* how many values took the system call (tests, docs) */
    uint32_t ring_values; /* how many values after a switch came from the switch ring instead */
    uint32_t ring_key;    /* the ring's relation to the page (d9_tcc_ring_key) at the event's open */
    const volatile char *ring; /* the switch records (NULL: none on this thread) */
    uint64_t ring_size;        /* its bytes, a power of 2 */
    uint64_t cpu_ns;   /* the last value given */
    uint64_t ticks;    /* the recorder's clock then */
    uint64_t base_ns;  /* value = base_ns + task clock */
    /* long polls' CPU time (poll_cpu.h), here so that the hooks reach all of it from one base */
    const volatile struct perf_event_mmap_page *poll_page; /* page, or d9_tcc_no_page (whose
                                                            * lock, 1, `lock` is without a page) */
    uint64_t poll_ticks;  /* the poll's begin */
    uint32_t poll_lock;   /* `lock` at the poll's begin: the line its CPU time is on */
    uint32_t poll_line_lock; /* the last line replaced while it was poll_lock's (d9_tcc_keep_poll_line) */
    uint64_t poll_line_cpu, poll_line_ticks;
    /* DIAL9_THREAD_CPU=lazy: the page was opened lazily, and when the thread's last long poll
     * ended (its open, or one with a switch inside since): quiet long enough, a park after a
     * switch closes it again (thread_cpu_clock_lazy.h) */
    bool lazy_opened;
    uint64_t long_poll_ticks;
} d9_tcc_state;

/* Before a new anchor replaces the thread's line (cpu_ns at ticks, under lock): when that line
 * is the one the poll under way began on, keep it, so that the poll's end still has its
 * begin's CPU time after a park and unpark inside it (poll_cpu.h). A compare per new anchor
 * (a sched-in seen by a park or unpark), three stores when it is the poll's line. */
static inline __attribute__((always_inline)) void d9_tcc_keep_poll_line(d9_tcc_state *s) {
    if (s->lock == s->poll_lock) {
        s->poll_line_lock = s->lock;
        s->poll_line_cpu = s->cpu_ns;
        s->poll_line_ticks = s->ticks;
    }
}

/* What poll_page points to on a thread without its page: a lock that never moves. */
extern const struct perf_event_mmap_page d9_tcc_no_page;

/* Nonzero while a recording uses the page (changes at each d9_start: a thread whose state was
 * set up under another reopens). */
extern uint32_t d9_thread_cpu_clock_gen;
/* ns per tick of the recorder's clock: 1 on CLOCK_MONOTONIC, the collector's slope on the TSC,
 * 0 until known (then every value takes the exact read). */
extern double d9_thread_cpu_ns_per_tick;
/* A park after a switch takes the page's value (a lower bound) when it would be short of the
 * exact one by less than this (ns), else reads: DIAL9_POLL_CPU_MIN_US / 20 (its default's when
 * that is 0), set at d9_start. */
extern uint64_t d9_tcc_park_slack_ns;
#define D9_TCC_PARK_SLACK_PER_POLL_CPU_MIN 20
extern __thread d9_tcc_state d9__tls_cpu_clock __attribute__((tls_model("initial-exec")));

/* A consistent (lock, task clock) of the page: the kernel's seqcount protocol, retried while
 * an update is under way or one happened between the two reads of `lock` (at most 8 tries;
 * false then). `between` (NULL but in tests) runs between the reads. */
static inline __attribute__((always_inline)) bool d9_tcc_snapshot(const volatile struct perf_event_mmap_page *p,
                                                                  uint32_t *lock, uint64_t *clock,
                                                                  void (*between)(void *), void *ctx) {
    for (int tries = 0; tries < 8; tries++) {
        uint32_t before = p->lock;
        __asm__ __volatile__("" ::: "memory");
        int64_t offset = p->offset;
        if (between) between(ctx);
        __asm__ __volatile__("" ::: "memory");
        if (p->lock == before && !(before & 1)) {
            *lock = before;
            *clock = (uint64_t)offset;
            return true;
        }
    }
    return false;
}

/* The value while `lock` is unchanged since the last one: that value plus the wall time since. */
static inline __attribute__((always_inline)) uint64_t d9_tcc_estimate(d9_tcc_state *s, uint64_t now_ticks,
                                                                      double ns_per_tick) {
    /* a signed conversion: one instruction, where an unsigned one costs ~8 (callgrind) */
    uint64_t v = s->cpu_ns + (uint64_t)(int64_t)((double)(int64_t)(now_ticks - s->ticks) * ns_per_tick);
    s->cpu_ns = v;
    s->ticks = now_ticks;
    return v;
}

/* A new anchor after the lock moved: `v` (base + the task clock), never behind the last value
 * given (the estimate since the last anchor may have run ahead: the base absorbs it). */
static inline __attribute__((always_inline)) uint64_t d9_tcc_anchor(d9_tcc_state *s, uint32_t lock, uint64_t v,
                                                                    uint64_t now_ticks) {
    d9_tcc_keep_poll_line(s);
    if ((int64_t)(v - s->cpu_ns) < 0) {
        s->base_ns += s->cpu_ns - v;
        v = s->cpu_ns;
    }
    s->lock = lock;
    s->cpu_ns = v;
    s->ticks = now_ticks;
    return v;
}

/* A park's value after a switch, close enough: the CPU time at the last sched-in (never
 * below the last value given; the base does not move: it is no exact value), leaving no line. */
static inline __attribute__((always_inline)) uint64_t d9_tcc_lower_bound(d9_tcc_state *s, uint32_t lock,
                                                                         uint64_t page_clock, uint64_t now_ticks) {
    uint64_t v = s->base_ns + page_clock;
    if ((int64_t)(v - s->cpu_ns) < 0) v = s->cpu_ns;
    d9_tcc_keep_poll_line(s);
    s->lock = D9_TCC_UNSEEN(lock);
    s->cpu_ns = v;
    s->ticks = now_ticks;
    return v;
}

/* The next value from a consistent snapshot (the rules above) for `use`. `exact` reads the task
 * clock by system call (D9_TCC_NONE if it cannot). Returns D9_TCC_NONE only when `exact` was
 * needed and failed, the state then untouched. */
static inline __attribute__((always_inline)) uint64_t d9_tcc_step(d9_tcc_state *s, d9_tcc_use use, uint32_t lock,
                                                                  uint64_t page_clock, uint64_t now_ticks,
                                                                  double ns_per_tick, uint64_t park_slack_ns,
                                                                  uint64_t (*exact)(d9_tcc_state *)) {
    uint64_t v;
    if (lock == s->lock && ns_per_tick > 0 && use != D9_TCC_READ) return d9_tcc_estimate(s, now_ticks, ns_per_tick);
    if (use == D9_TCC_PARK && ns_per_tick > 0) {
        /* no sched-in since a value that left no line: it plus the wall time, still no line
         * (exact or a lower bound, as that value was) */
        if (lock == D9_TCC_UNSEEN(s->lock)) return d9_tcc_estimate(s, now_ticks, ns_per_tick);
        /* the wall time since the last value less the CPU time the page accounts since: the
         * most the page's value can be short of the exact one */
        double unaccounted = (double)(int64_t)(now_ticks - s->ticks) * ns_per_tick -
                             (double)(int64_t)(s->base_ns + page_clock - s->cpu_ns);
        if (unaccounted < (double)park_slack_ns) return d9_tcc_lower_bound(s, lock, page_clock, now_ticks);
    }
    if (lock != s->lock && use == D9_TCC_UNPARK && lock != D9_TCC_UNSEEN(s->lock)) {
        v = s->base_ns + page_clock;
    } else {
        uint64_t e = exact(s);
        if (e == D9_TCC_NONE) return D9_TCC_NONE;
        v = s->base_ns + e;
    }
    return d9_tcc_anchor(s, lock, v, now_ticks);
}

/* The value when the fast path below cannot give it: a snapshot and d9_tcc_step, or setting up,
 * reopening or refusing the calling thread's event (D9_TCC_NONE: by system call). */
uint64_t d9_thread_cpu_clock_slow(d9_tcc_state *s, d9_tcc_use use, uint64_t now_ticks);
/* The task clock by read() of the thread's event; D9_TCC_NONE if that failed (the thread then
 * reads by system call from now on). */
uint64_t d9_thread_cpu_clock_exact(d9_tcc_state *s);

/* The calling thread's CPU time in ns at `now_ticks` (the hook's time, just read), or
 * D9_TCC_NONE: read it by system call. `gen`: d9_thread_cpu_clock_gen, nonzero. The fast path
 * is the first rule alone: only `lock` is read, and compared with the last snapshot's (even;
 * after an exact read, an odd value no snapshot has), so an update under way (odd) never
 * passes for "unchanged". ~20 instructions; the rest is d9_thread_cpu_clock_slow's. */
static inline __attribute__((always_inline)) uint64_t d9_thread_cpu_clock_ns(d9_tcc_use use, uint64_t now_ticks,
                                                                             uint32_t gen) {
    d9_tcc_state *s = &d9__tls_cpu_clock;
    if (__builtin_expect(s->gen == gen, 1)) { /* a thread without its page has another gen */
        uint32_t lock = s->page->lock;
        __asm__ __volatile__("" ::: "memory");
        double ns_per_tick;
        __atomic_load(&d9_thread_cpu_ns_per_tick, &ns_per_tick, __ATOMIC_RELAXED);
        if (__builtin_expect(lock == s->lock && ns_per_tick > 0, 1)) return d9_tcc_estimate(s, now_ticks, ns_per_tick);
    } else if (!((s->gen ^ gen) & ~(D9_TCC_LAZY | D9_TCC_NO_PAGE))) { /* one of them (never both) */
        return D9_TCC_NONE; /* no page under this recording (lazy, or refused): no call to be told so */
    }
    return d9_thread_cpu_clock_slow(s, use, now_ticks);
}

/* DIAL9_THREAD_CPU's values (D9_THREAD_CPU_SOURCES; any case) -> *out; false otherwise. */
bool d9_thread_cpu_source_parse(const char *s, d9_thread_cpu_source *out);
/* At d9_start: decide from `requested` (and a probe of the kernel) whether this recording uses
 * the page; `ticks_are_ns` when the recorder's clock is CLOCK_MONOTONIC; `unread`: parks and
 * unparks read no CPU time (DIAL9_THREAD_CPU_TIME=off). -1 (the error set) when `perf` was
 * asked for and the kernel refuses. */
int d9_thread_cpu_clock_start(d9_thread_cpu_source requested, bool ticks_are_ns, bool unread);
/* At d9_stop: no thread uses the page any more; the events no thread is reading are closed. */
void d9_thread_cpu_clock_stop(void);
/* The collector's ns per tick of the TSC. */
void d9_thread_cpu_clock_set_ns_per_tick(double ns_per_tick);
/* The choice and its reason, for the metadata's thread_cpu_clock ("perf: ..." or "syscall: ..."). */
const char *d9_thread_cpu_clock_reason(void);
/* In a forked child: the parent's events (copied fds, mapped pages) are closed and forgotten. */
void d9_thread_cpu_clock_forget_after_fork(void);
/* The preload shim protects the recorder's fds from the program (preload_fds.c: close() of one
 * pretends, dup2 onto one stops recording first): an event's fd then needs no check that it is
 * still ours before each read() (a system call saved at every park after a switch). */
void d9_thread_cpu_clock_set_fds_guarded(bool guarded);
/* The calling thread's own task-clock event as the recorder opens it (with `switches`, its
 * switch records too), not mapped, not in the table: its fd, or -errno where perf_event_open
 * refuses it. The tests' reference clock and the switch-ring bench's arms. */
int d9_task_clock_open(bool switches);
/* The attributes d9_task_clock_open opens with: the switch-ring bench's variants start from them. */
void d9_task_clock_attr(struct perf_event_attr *a, bool switches);
/* How many events are open now, and the calling thread's fd (-1: none): tests. */
int d9_thread_cpu_clock_open_count(void);
/* Whether the calling thread's event has its switch ring: tests. */
bool d9_thread_cpu_clock_has_ring(void);
int d9_thread_cpu_clock_fd(void);

#endif
