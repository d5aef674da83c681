/* The per-thread task-clock events behind thread_cpu_clock.h: opened at a thread's first park
 * or unpark of a recording, kept in one table (at most D9_TCC_MAX_THREADS), closed at thread
 * exit (a pthread key), at d9_stop (those no thread is reading at that moment; the others by
 * their thread at its next use or exit), and in a forked child (a child's thread is a new
 * thread: the parent's events measure the parent's threads). Close-on-exec; never one of the
 * program's fds (under the shim, perf_event_open through syscall() is protected, preload_fds.c). */
#include "core/thread_cpu_clock.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/fork_guard.h"
#include "core/last_error.h"
#include "core/owned_fd.h"
#include "core/poll_cpu.h"
#include "core/thread_cpu_switch_ring.h"

uint32_t d9_thread_cpu_clock_gen;
double d9_thread_cpu_ns_per_tick;
uint64_t d9_tcc_park_slack_ns = D9_POLL_CPU_DEFAULT_MIN_US * 1000 / D9_TCC_PARK_SLACK_PER_POLL_CPU_MIN;
const struct perf_event_mmap_page d9_tcc_no_page = {.lock = 1};
__thread d9_tcc_state d9__tls_cpu_clock __attribute__((tls_model("initial-exec"))) = {.slot = -1, .lock = 1,
                                                                                     .poll_page = &d9_tcc_no_page,
                                                                                     .poll_lock = 1};

enum { SLOT_FREE, SLOT_OPEN, SLOT_READING, SLOT_CLOSED };

typedef struct slot {
    _Atomic int state;
    int fd;
    d9_fd_id id; /* what fd was opened on: a program that closes every fd may reuse the number */
    void *page;
    size_t map_bytes; /* the page, and the switch ring's page after it when it has one */
} slot;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static slot g_slots[D9_TCC_MAX_THREADS];
static uint32_t g_gen_counter;
static char g_reason[720] = "syscall: not started";
static _Atomic bool g_fds_guarded; /* d9_thread_cpu_clock_set_fds_guarded */
static _Atomic bool g_ring_wanted; /* this recording gives threads a switch ring (thread_cpu_switch_ring.h) */
static int g_ring_threads;        /* slots with one (under g_lock) */
/* PR_GET_SECCOMP of the thread that probed; atomic: a thread of the last recording may open its
 * event while d9_start probes again (test_mt_recorder_restart's TSan report, 1 run in ~10 under
 * load); either probe's value is the process's mode at a start */
static _Atomic int g_seccomp_at_start;
static pthread_key_t g_key;
static pthread_once_t g_key_once = PTHREAD_ONCE_INIT;

bool d9_thread_cpu_source_parse(const char *s, d9_thread_cpu_source *out) {
    if (strcasecmp(s, "auto") == 0) *out = D9_THREAD_CPU_AUTO;
    else if (strcasecmp(s, "perf") == 0) *out = D9_THREAD_CPU_PERF;
    else if (strcasecmp(s, "syscall") == 0) *out = D9_THREAD_CPU_SYSCALL;
    else if (strcasecmp(s, "page") == 0) *out = D9_THREAD_CPU_PAGE;
    else if (strcasecmp(s, "ring") == 0) *out = D9_THREAD_CPU_RING;
    else return false;
    return true;
}

static uint64_t thread_cputime_ns(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static size_t page_bytes(void) { return (size_t)sysconf(_SC_PAGESIZE); }

/* exclude_kernel and exclude_hv let an unprivileged thread open it at perf_event_paranoid 2; a
 * task clock counts the thread's time on CPU whatever they say (it is the context's time, not a
 * sampled count). With `switches`, the kernel also writes the thread's switch records, stamped
 * on CLOCK_MONOTONIC (the recorder's clock, or the one its ticks convert to), into the ring
 * mapped after the page (thread_cpu_switch_ring.h); no samples (sample_period 0). */
void d9_task_clock_attr(struct perf_event_attr *a, bool switches) {
    memset(a, 0, sizeof *a);
    a->size = sizeof *a;
    a->type = PERF_TYPE_SOFTWARE;
    a->config = PERF_COUNT_SW_TASK_CLOCK;
    a->exclude_kernel = 1;
    a->exclude_hv = 1;
    if (switches) {
        a->context_switch = 1;
        a->sample_id_all = 1;
        a->sample_type = PERF_SAMPLE_TIME;
        a->use_clockid = 1;
        a->clockid = CLOCK_MONOTONIC;
    }
}

int d9_task_clock_open(bool switches) {
    struct perf_event_attr a;
    d9_task_clock_attr(&a, switches);
    long fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    return fd < 0 ? -errno : (int)fd;
}


/* The event's page, and with `switches` its one-page ring after it, mapped read-only (the
 * kernel then overwrites the ring: nothing to consume); MAP_FAILED with errno. */
static void *map_event(int fd, bool switches) {
    return mmap(NULL, (switches ? 2 : 1) * page_bytes(), PROT_READ, MAP_SHARED, fd, 0);
}

/* The page's lock and the ring's head, consistent: the ring's key (d9_tcc_ring_key). */
static bool ring_key_now(const volatile struct perf_event_mmap_page *p, uint32_t *key) {
    for (int tries = 0; tries < 8; tries++) {
        uint32_t before = p->lock;
        __asm__ __volatile__("" ::: "memory");
        uint64_t head = p->data_head;
        __asm__ __volatile__("" ::: "memory");
        if (p->lock == before && !(before & 1)) {
            *key = d9_tcc_ring_key(before, head);
            return true;
        }
    }
    return false;
}

/* Through syscall(): under the shim, read() is the program's interposer (preload_fd_wakes.c),
 * which looks at every fd it is given. */
static uint64_t read_count(int fd) {
    uint64_t v;
    return syscall(SYS_read, fd, &v, sizeof v) == (long)sizeof v ? v : D9_TCC_NONE;
}

/* Forget the thread's event: closed here unless d9_stop closed it. */
static void release(d9_tcc_state *s) {
    /* first: a poll's end (even in a signal handler) reads no page being unmapped */
    s->poll_page = &d9_tcc_no_page;
    s->lock = d9_tcc_no_page.lock; /* its begin and end then see nothing move */
    s->poll_lock = d9_tcc_no_page.lock;
    __asm__ __volatile__("" ::: "memory");
    if (s->slot >= 0) {
        slot *e = &g_slots[s->slot];
        pthread_mutex_lock(&g_lock);
        if (atomic_load(&e->state) != SLOT_CLOSED) d9_fd_close_if_ours(e->fd, e->id);
        munmap(e->page, e->map_bytes);
        if (e->map_bytes > page_bytes()) g_ring_threads--;
        e->fd = -1;
        e->page = NULL;
        atomic_store(&e->state, SLOT_FREE);
        pthread_mutex_unlock(&g_lock);
    }
    s->page = NULL;
    s->ring = NULL;
    s->slot = -1;
}

static void on_thread_exit(void *arg) {
    d9_tcc_state *s = arg;
    release(s);
    s->gen = 0;
}

static void make_key(void) { pthread_key_create(&g_key, on_thread_exit); }

/* The calling thread's event, mapped and in the table; false (reason in `why`) if refused. */
static bool open_for_thread(d9_tcc_state *s, char *why, size_t why_size) {
    /* A seccomp filter installed since the probe may kill the thread that calls what it does
     * not allow: this thread then reads by system call. */
    if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) != atomic_load_explicit(&g_seccomp_at_start, memory_order_relaxed)) {
        snprintf(why, why_size, "a seccomp filter installed after the start");
        return false;
    }
    /* a switch ring while this recording wants them and fewer than the most have one (counted
     * here, given back below if refused); a thread refused one (the perf mlock budget spent, a
     * kernel without context_switch) has the page alone */
    pthread_mutex_lock(&g_lock);
    bool switches = atomic_load_explicit(&g_ring_wanted, memory_order_relaxed) && g_ring_threads < D9_TCC_MAX_RING_THREADS;
    g_ring_threads += switches;
    pthread_mutex_unlock(&g_lock);
    int fd = -1;
    void *page = MAP_FAILED;
    if (switches) {
        fd = d9_task_clock_open(true);
        page = fd < 0 ? MAP_FAILED : map_event(fd, true);
        if (page == MAP_FAILED) {
            if (fd >= 0) close(fd);
            pthread_mutex_lock(&g_lock);
            g_ring_threads--;
            pthread_mutex_unlock(&g_lock);
            switches = false;
        }
    }
    if (!switches) {
        fd = d9_task_clock_open(false);
        if (fd < 0) {
            snprintf(why, why_size, "perf_event_open(PERF_COUNT_SW_TASK_CLOCK) refused: %s", strerror(-fd));
            return false;
        }
        page = map_event(fd, false);
        if (page == MAP_FAILED) {
            snprintf(why, why_size, "mmap of the task-clock event refused: %s", strerror(errno));
            close(fd);
            return false;
        }
    }
    size_t map_bytes = (switches ? 2 : 1) * page_bytes();
    const volatile struct perf_event_mmap_page *meta = page;
    uint32_t key = 0;
    if (switches && (meta->data_size != page_bytes() || meta->data_offset != page_bytes() || !ring_key_now(meta, &key)))
        switches = false; /* a layout not the one asked for: the page alone (the mapping stays) */
    int found = -1;
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < D9_TCC_MAX_THREADS && found < 0; i++) {
        if (atomic_load(&g_slots[i].state) == SLOT_FREE) {
            found = i;
            g_slots[i].fd = fd;
            g_slots[i].id = d9_fd_identify(fd);
            g_slots[i].page = page;
            g_slots[i].map_bytes = map_bytes;
            atomic_store(&g_slots[i].state, SLOT_OPEN);
        }
    }
    if (found < 0 && map_bytes > page_bytes()) g_ring_threads--;
    pthread_mutex_unlock(&g_lock);
    if (found < 0) {
        snprintf(why, why_size, "more than %d threads have a task-clock event", D9_TCC_MAX_THREADS);
        munmap(page, map_bytes);
        close(fd);
        return false;
    }
    pthread_once(&g_key_once, make_key);
    pthread_setspecific(g_key, s);
    s->slot = found;
    s->page = page;
    s->poll_page = page;
    s->ring = switches ? (const volatile char *)page + page_bytes() : NULL;
    s->ring_size = page_bytes();
    s->ring_key = key;
    return true;
}

uint64_t d9_thread_cpu_clock_exact(d9_tcc_state *s) {
    slot *e = &g_slots[s->slot];
    int open = SLOT_OPEN;
    uint64_t v = D9_TCC_NONE;
    s->exact_reads++;
    if (atomic_compare_exchange_strong(&e->state, &open, SLOT_READING)) {
        /* A read() of a number the program closed and reused would take its data: the fd is
         * checked first (fstat, a second system call, at parks after a switch only), unless
         * the shim guards it. The mapping keeps the event alive, but only the fd reads it. */
        if (atomic_load_explicit(&g_fds_guarded, memory_order_relaxed) || d9_fd_still_ours(e->fd, e->id))
            v = read_count(e->fd);
        int reading = SLOT_READING;
        atomic_compare_exchange_strong(&e->state, &reading, SLOT_OPEN);
    }
    /* Closed by d9_stop, or the fd no longer reads (a program's dup2 onto it): this thread
     * reads by system call until the next recording. */
    if (v == D9_TCC_NONE) {
        release(s);
        s->gen |= D9_TCC_NO_PAGE;
    }
    return v;
}

/* After a value stamped at now_ticks (the caller's time, read before) that the thread's clock
 * gave later: when more than the park slack of wall time passed between that time and now, the
 * thread may have been switched out in between, and the value, stamped at now_ticks, would carry
 * that off-CPU time into every estimate after it (the next anchor below them then pushed the
 * base: the next poll short by as much). The value is then stamped now, as no line (a lower
 * bound here: it is the CPU time at the read, or at the last sched-in): the next park estimates
 * from it, the next unpark or exact use reads. Within the slack, the error is the slack's, as for
 * a park's lower bound. Two such values (from_page):
 *   - a poll's begin or end's exact read (D9_TCC_EXACT, D9_TCC_READ): their hooks write records between their
 *     clock read and this one (a poll's end hook preempted there made a 2.1 ms poll 0:
 *     test_mt_poll_cpu under TSan);
 *   - an unpark's page value after the lock moved: the CPU time at the last sched-in, which came
 *     after the hook's time when the thread was switched out between the two (an unpark reaches
 *     the page here, in the slow path, when schedstat is due and when it is the thread's first
 *     after its first value: a window long enough under TSan that the thread's first accounted
 *     poll began 2 ms ahead, 2.06 ms of CPU recorded as 0.042).
 * Not a park's exact read: it follows its clock read at once (and a slow read there leaving no
 * line would cost the next unpark a second read: test_mt_thread_cpu_clock_kernel counts at most
 * one read per page update). */
static void restamp_late(d9_tcc_state *s, uint64_t now_ticks, double ns_per_tick, uint64_t slack_ns) {
    uint64_t after = d9_clock_ticks();
    if ((int64_t)(after - now_ticks) <= 0 || (double)(int64_t)(after - now_ticks) * ns_per_tick <= (double)slack_ns)
        return;
    if (!(s->lock & 1)) s->lock = D9_TCC_UNSEEN(s->lock); /* a line: made none (an odd one is none already) */
    s->ticks = after;
}

/* `ticks` (the recorder's clock, read before) on CLOCK_MONOTONIC, which the switch records use:
 * the same number when ticks are ns, else now's CLOCK_MONOTONIC less the ticks since. */
static uint64_t mono_ns_at(uint64_t ticks, double ns_per_tick) {
    if (!__atomic_load_n(&d9_clock_use_tsc, __ATOMIC_RELAXED)) return ticks;
    uint64_t ticks_now = d9_clock_ticks();
    uint64_t mono_now = d9_mono_ns();
    return mono_now - (uint64_t)(int64_t)((double)(int64_t)(ticks_now - ticks) * ns_per_tick);
}

/* After a switch, with a switch ring: a new line, exact, with no system call
 * (thread_cpu_switch_ring.h), for any use (no lower bound, no late read): at the hook's time,
 * or at the switch in when that came after it (the value then stamped there, as a late read is,
 * but a line: nothing ran between). The estimate when the page did not move; D9_TCC_NONE when
 * the ring cannot say. */
static uint64_t from_ring(d9_tcc_state *s, uint64_t now_ticks, double ns_per_tick) {
    d9_tcc_switch_in sw;
    if (!d9_tcc_ring_snapshot(s->page, s->ring, s->ring_size, s->ring_key, &sw)) return D9_TCC_NONE;
    if (sw.lock == s->lock) return d9_tcc_estimate(s, now_ticks, ns_per_tick);
    s->ring_values++;
    uint64_t at_ns = mono_ns_at(now_ticks, ns_per_tick), clock, line_ns;
    d9_tcc_ring_line(&sw, at_ns, &clock, &line_ns);
    uint64_t line_ticks = now_ticks + (uint64_t)(int64_t)((double)(int64_t)(line_ns - at_ns) / ns_per_tick);
    return d9_tcc_anchor(s, sw.lock, s->base_ns + clock, line_ticks);
}

/* The thread has its page under this recording: a snapshot and the rules (thread_cpu_clock.h). */
static uint64_t from_page(d9_tcc_state *s, d9_tcc_use use, uint64_t now_ticks) {
    uint32_t lock;
    uint64_t clock;
    double ns_per_tick;
    __atomic_load(&d9_thread_cpu_ns_per_tick, &ns_per_tick, __ATOMIC_RELAXED);
    uint64_t slack_ns = __atomic_load_n(&d9_tcc_park_slack_ns, __ATOMIC_RELAXED);
    /* a time before the last value's stamp (a late read restamped it; a hook that shares its
     * time with the one that read): no wall time since it */
    if ((int64_t)(now_ticks - s->ticks) < 0) now_ticks = s->ticks;
    if (s->ring && ns_per_tick > 0) {
        uint64_t v = from_ring(s, now_ticks, ns_per_tick);
        if (v != D9_TCC_NONE) return v;
    }
    uint32_t reads = s->exact_reads, line = s->lock;
    if (d9_tcc_snapshot(s->page, &lock, &clock, 0, 0)) {
        uint64_t v = d9_tcc_step(s, use, lock, clock, now_ticks, ns_per_tick, slack_ns, d9_thread_cpu_clock_exact);
        bool read = s->exact_reads != reads;
        /* an exact read for a poll, or an unpark's new anchor from the page (not an estimate:
         * that keeps the line) */
        if (v != D9_TCC_NONE && ns_per_tick > 0 &&
            (use >= D9_TCC_EXACT ? read : use == D9_TCC_UNPARK && !read && s->lock != line))
            restamp_late(s, now_ticks, ns_per_tick, slack_ns);
        return v;
    }
    /* eight torn snapshots in a row: the exact value, and the next value exact again */
    uint64_t e = d9_thread_cpu_clock_exact(s);
    if (e == D9_TCC_NONE) return D9_TCC_NONE;
    uint64_t v = s->base_ns + e;
    d9_tcc_keep_poll_line(s);
    if ((int64_t)(v - s->cpu_ns) < 0) { /* as in d9_tcc_step */
        s->base_ns += s->cpu_ns - v;
        v = s->cpu_ns;
    }
    s->lock = D9_TCC_UNSEEN(s->page->lock); /* far from the page's next values, even mid-update */
    s->cpu_ns = v;
    s->ticks = now_ticks;
    if (use >= D9_TCC_EXACT && ns_per_tick > 0) restamp_late(s, now_ticks, ns_per_tick, slack_ns);
    return v;
}

uint64_t d9_thread_cpu_clock_slow(d9_tcc_state *s, d9_tcc_use use, uint64_t now_ticks) {
    uint32_t gen = __atomic_load_n(&d9_thread_cpu_clock_gen, __ATOMIC_RELAXED);
    if (s->gen == gen && s->page) return from_page(s, use, now_ticks);
    if (s->gen == (gen | D9_TCC_NO_PAGE)) return D9_TCC_NONE; /* refused for this recording */
    release(s); /* a past recording's, or none */
    s->gen = gen | D9_TCC_NO_PAGE;
    if (!gen) return D9_TCC_NONE;
    char why[160];
    if (!open_for_thread(s, why, sizeof why)) return D9_TCC_NONE;
    /* base: CLOCK_THREAD_CPUTIME_ID now minus the task clock now (a few us since the open) */
    uint64_t count = read_count(g_slots[s->slot].fd);
    uint64_t cpu = thread_cputime_ns();
    uint32_t lock;
    uint64_t page_clock;
    if (count == D9_TCC_NONE || !d9_tcc_snapshot(s->page, &lock, &page_clock, 0, 0)) {
        release(s);
        return D9_TCC_NONE;
    }
    s->gen = gen;
    s->base_ns = cpu - count;
    s->lock = D9_TCC_UNSEEN(lock); /* no line: the page may predate the reads above */
    s->cpu_ns = cpu;
    /* stamped after the open, not at the hook's time before it: the CPU time is the one after
     * it, and the next park's estimate (the wall time since) would count the open's wall time,
     * and any switch inside it, again */
    uint64_t after = d9_clock_ticks();
    s->ticks = (int64_t)(after - now_ticks) > 0 ? after : now_ticks;
    return cpu;
}

/* Whether this thread can open the event (with its switch ring) and map it; why not in `why`. */
static bool probe_event(bool switches, char *why, size_t why_size) {
    int fd = d9_task_clock_open(switches);
    void *page = fd < 0 ? MAP_FAILED : map_event(fd, switches);
    const char *what = switches ? " with switch records" : "";
    if (fd < 0) snprintf(why, why_size, "perf_event_open(PERF_COUNT_SW_TASK_CLOCK%s) refused: %s", what, strerror(-fd));
    else if (page == MAP_FAILED) snprintf(why, why_size, "mmap of the task-clock event%s refused: %s", what, strerror(errno));
    if (page != MAP_FAILED) munmap(page, (switches ? 2 : 1) * page_bytes());
    if (fd >= 0) close(fd);
    return page != MAP_FAILED;
}

static int start_clock(d9_thread_cpu_source requested, bool ticks_are_ns, bool unread, uint64_t park_slack_ns) {
    d9_fork_guard_install(); /* the child forgets the parent's events */
    double per_tick = ticks_are_ns ? 1.0 : 0.0;
    __atomic_store(&d9_thread_cpu_ns_per_tick, &per_tick, __ATOMIC_RELAXED);
    if (unread) {
        snprintf(g_reason, sizeof g_reason, "none: DIAL9_THREAD_CPU_TIME=off");
        __atomic_store_n(&d9_thread_cpu_clock_gen, 0, __ATOMIC_RELAXED);
        return 0;
    }
    if (requested == D9_THREAD_CPU_SYSCALL) {
        snprintf(g_reason, sizeof g_reason, "syscall: DIAL9_THREAD_CPU=syscall");
        __atomic_store_n(&d9_thread_cpu_clock_gen, 0, __ATOMIC_RELAXED);
        return 0;
    }
    /* the probes: can this thread have the event with its switch ring, or its page alone? */
    atomic_store_explicit(&g_seccomp_at_start, prctl(PR_GET_SECCOMP, 0, 0, 0, 0), memory_order_relaxed);
    /* the ring only when asked for: on the hosts measured, its records cost every switch of the
     * thread more than the reads after a switch it saves (bench/README.md, "What a recorded
     * thread's context switch costs") */
    char ring_why[160], why[160] = "";
    snprintf(ring_why, sizeof ring_why, "%s",
             requested == D9_THREAD_CPU_PAGE ? "DIAL9_THREAD_CPU=page"
             : requested == D9_THREAD_CPU_RING
                 ? ""
                 : "not asked for: it costs each switch more than the reads it saves; DIAL9_THREAD_CPU=ring takes it");
    bool ring = requested == D9_THREAD_CPU_RING && probe_event(true, ring_why, sizeof ring_why);
    if (!ring) probe_event(false, why, sizeof why);
    atomic_store_explicit(&g_ring_wanted, ring, memory_order_relaxed);
    if (why[0]) {
        __atomic_store_n(&d9_thread_cpu_clock_gen, 0, __ATOMIC_RELAXED);
        if (requested == D9_THREAD_CPU_PERF) {
            d9_set_error("DIAL9_THREAD_CPU=perf: %s", why);
            snprintf(g_reason, sizeof g_reason, "syscall: %s", why);
            return -1;
        }
        snprintf(g_reason, sizeof g_reason, "syscall: %s", why);
        return 0;
    }
    /* which way a thread takes its value after a switch, and why not the ring */
    char after_switch[560];
    char read_rules[260];
    snprintf(read_rules, sizeof read_rules,
             "a park after a switch: the CPU time at the last switch-in, a lower bound, when short by less than "
             "%llu us, else by system call; an unpark whose poller did not sleep since such a park, a long poll's "
             "begin or end after a switch: by system call",
             (unsigned long long)(park_slack_ns / 1000));
    if (ring)
        snprintf(after_switch, sizeof after_switch,
                 "after a switch: the CPU time at the last switch-in plus the wall time since it, from the "
                 "kernel's switch records in a one-page ring per thread (up to %d threads), no system call; a "
                 "thread without its ring (refused, past them, or its last records not its switch out and in): %s",
                 D9_TCC_MAX_RING_THREADS, read_rules);
    else
        snprintf(after_switch, sizeof after_switch, "no switch ring (%s): %s", ring_why, read_rules);
    snprintf(g_reason, sizeof g_reason, "perf: a task-clock page per thread (up to %d threads; %s)%s",
             D9_TCC_MAX_THREADS, after_switch, requested == D9_THREAD_CPU_PERF   ? " (DIAL9_THREAD_CPU=perf)"
             : requested == D9_THREAD_CPU_RING ? " (DIAL9_THREAD_CPU=ring)"
                                               : "");
    pthread_mutex_lock(&g_lock);
    g_gen_counter = (g_gen_counter + 1) & ~D9_TCC_NO_PAGE;
    if (g_gen_counter == 0) g_gen_counter = 1;
    __atomic_store_n(&d9_thread_cpu_clock_gen, g_gen_counter, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&g_lock);
    return 0;
}

int d9_thread_cpu_clock_start(d9_thread_cpu_source requested, bool ticks_are_ns, bool unread) {
    /* a park's value after a switch is short by less than a twentieth of the threshold of long
     * polls (0 turns those off, not this: the default's then) */
    uint64_t min_us;
    if (d9_poll_cpu_min_us(&min_us) != 0) return -1;
    uint64_t park_slack_ns = (min_us ? min_us : D9_POLL_CPU_DEFAULT_MIN_US) * 1000 / D9_TCC_PARK_SLACK_PER_POLL_CPU_MIN;
    __atomic_store_n(&d9_tcc_park_slack_ns, park_slack_ns, __ATOMIC_RELAXED);
    if (start_clock(requested, ticks_are_ns, unread, park_slack_ns) != 0) return -1;
    /* long polls' CPU time reads the same page (poll_cpu.h) */
    return d9_poll_cpu_start(__atomic_load_n(&d9_thread_cpu_clock_gen, __ATOMIC_RELAXED) != 0);
}

void d9_thread_cpu_clock_stop(void) {
    __atomic_store_n(&d9_thread_cpu_clock_gen, 0, __ATOMIC_RELAXED);
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < D9_TCC_MAX_THREADS; i++) {
        int open = SLOT_OPEN;
        /* a thread reading its fd right now closes it itself, at its next use or exit */
        if (atomic_compare_exchange_strong(&g_slots[i].state, &open, SLOT_CLOSED))
            d9_fd_close_if_ours(g_slots[i].fd, g_slots[i].id);
    }
    pthread_mutex_unlock(&g_lock);
}

void d9_thread_cpu_clock_set_ns_per_tick(double ns_per_tick) {
    __atomic_store(&d9_thread_cpu_ns_per_tick, &ns_per_tick, __ATOMIC_RELAXED);
}

const char *d9_thread_cpu_clock_reason(void) { return g_reason; }

void d9_thread_cpu_clock_set_fds_guarded(bool guarded) { atomic_store(&g_fds_guarded, guarded); }

void d9_thread_cpu_clock_forget_after_fork(void) {
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    g_lock = fresh; /* a parent's thread may have held it */
    for (int i = 0; i < D9_TCC_MAX_THREADS; i++) {
        slot *e = &g_slots[i];
        int state = atomic_load(&e->state);
        if (state == SLOT_FREE) continue;
        if (state != SLOT_CLOSED) d9_fd_close_if_ours(e->fd, e->id);
        munmap(e->page, e->map_bytes);
        e->fd = -1;
        e->page = NULL;
        atomic_store(&e->state, SLOT_FREE);
    }
    d9_tcc_state *s = &d9__tls_cpu_clock;
    s->page = NULL;
    s->poll_page = &d9_tcc_no_page;
    s->lock = d9_tcc_no_page.lock;
    s->poll_lock = d9_tcc_no_page.lock;
    s->ring = NULL;
    s->slot = -1;
    s->gen = 0;
    g_ring_threads = 0;
    __atomic_store_n(&d9_thread_cpu_clock_gen, 0, __ATOMIC_RELAXED);
}

int d9_thread_cpu_clock_open_count(void) {
    int n = 0;
    for (int i = 0; i < D9_TCC_MAX_THREADS; i++) {
        int state = atomic_load(&g_slots[i].state);
        n += state == SLOT_OPEN || state == SLOT_READING;
    }
    return n;
}

int d9_thread_cpu_clock_fd(void) {
    const d9_tcc_state *s = &d9__tls_cpu_clock;
    return s->slot >= 0 && atomic_load(&g_slots[s->slot].state) != SLOT_CLOSED ? g_slots[s->slot].fd : -1;
}

bool d9_thread_cpu_clock_has_ring(void) { return d9__tls_cpu_clock.ring != NULL; }
