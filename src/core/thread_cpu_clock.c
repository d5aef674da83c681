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
#include "core/thread_cpu_clock_lazy.h"
#include "core/thread_cpu_switch_ring.h"

uint32_t d9_thread_cpu_clock_gen;
double d9_thread_cpu_ns_per_tick;
uint64_t d9_tcc_park_slack_ns = D9_POLL_CPU_DEFAULT_MIN_US * 1000 / D9_TCC_PARK_SLACK_PER_POLL_CPU_MIN;
const struct perf_event_mmap_page d9_tcc_no_page = {.lock = 1};
__thread d9_tcc_state d9__tls_cpu_clock __attribute__((tls_model("initial-exec"))) = {.slot = -1, .lock = 1,
                                                                                     .poll_page = &d9_tcc_no_page,
                                                                                     .poll_lock = 1};

/* PREOPENED: opened by the collector for a recorded thread that has none yet (its switch records
 * from then on), taken over by that thread at its first park or unpark; RETIRED: its thread is
 * gone (or the recording stopped), the event closed, the ring kept mapped until the collector
 * read its last records (d9_tcc_rings_drain). Both only while the rings are consumed. */
enum { SLOT_FREE, SLOT_OPEN, SLOT_READING, SLOT_CLOSED, SLOT_PREOPENED, SLOT_RETIRED };

typedef struct slot {
    _Atomic int state;
    int fd;
    d9_fd_id id; /* what fd was opened on: a program that closes every fd may reuse the number */
    void *page;
    size_t map_bytes; /* the page, and the switch ring's pages after it when it has one */
    uint32_t tid;     /* the thread it measures */
    uint64_t read_at; /* the collector's position in the ring (consumed rings) */
    bool lost_since;  /* records lost before the next one read (the window breaks there) */
} slot;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static slot g_slots[D9_TCC_MAX_THREADS];
static uint32_t g_gen_counter;
static char g_reason[1024] = "syscall: not started";
static _Atomic bool g_fds_guarded; /* d9_thread_cpu_clock_set_fds_guarded */
static _Atomic bool g_ring_wanted; /* this recording gives threads a switch ring (thread_cpu_switch_ring.h) */
static int g_ring_threads;        /* slots with one (under g_lock) */
/* The off-CPU source takes its switch records from the rings (d9_tcc_rings_consume): rings of
 * D9_TCC_SOURCE_RING_PAGES, threads' events kept until read; under g_lock, read atomically */
static _Atomic bool g_rings_consumed;
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
    else if (strcasecmp(s, "lazy") == 0) *out = D9_THREAD_CPU_LAZY;
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

/* Thread `tid`'s event (0: the caller's; another thread of this process: the collector's
 * opening for a recorded thread, thread_cpu_switch_ring.h). */
static int task_clock_open(pid_t tid, bool switches) {
    struct perf_event_attr a;
    d9_task_clock_attr(&a, switches);
    long fd = syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
    return fd < 0 ? -errno : (int)fd;
}

int d9_task_clock_open(bool switches) { return task_clock_open(0, switches); }


/* The switch ring's pages: one for the hooks alone, more when the collector consumes it too
 * (thread_cpu_switch_ring.h: it must hold a drain's records). */
static size_t ring_pages(void) {
    return atomic_load_explicit(&g_rings_consumed, memory_order_relaxed) ? D9_TCC_SOURCE_RING_PAGES : 1;
}

/* The event's page, and with `switches` its ring after it, mapped read-only (the kernel then
 * overwrites the ring: the hooks read its last records, the collector checks what it lost);
 * MAP_FAILED with errno. */
static void *map_event(int fd, bool switches, size_t *bytes) {
    *bytes = (switches ? 1 + ring_pages() : 1) * page_bytes();
    return mmap(NULL, *bytes, PROT_READ, MAP_SHARED, fd, 0);
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

/* A slot's mapping given back and the slot free (under g_lock; its fd closed already). */
static void free_slot(slot *e) {
    munmap(e->page, e->map_bytes);
    if (e->map_bytes > page_bytes()) g_ring_threads--;
    e->fd = -1;
    e->page = NULL;
    atomic_store(&e->state, SLOT_FREE);
}

/* Forget the thread's event: closed here unless d9_stop closed it; with consumed rings, its
 * ring stays mapped until the collector read it. */
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
        e->fd = -1;
        if (e->map_bytes > page_bytes() && atomic_load_explicit(&g_rings_consumed, memory_order_relaxed)) {
            atomic_store(&e->state, SLOT_RETIRED); /* its last records: the collector frees it */
        } else {
            free_slot(e);
        }
        pthread_mutex_unlock(&g_lock);
    }
    s->page = NULL;
    s->ring = NULL;
    s->slot = -1;
    s->lazy_opened = false;
}

static void on_thread_exit(void *arg) {
    d9_tcc_state *s = arg;
    release(s);
    s->gen = 0;
}

static void make_key(void) { pthread_key_create(&g_key, on_thread_exit); }

/* Thread `tid`'s event (0: the caller), mapped: with its switch ring while this recording wants
 * them and fewer than the most have one (counted here; given back by free_slot, or below if
 * refused: the perf mlock budget spent, a kernel without context_switch, a layout not the one
 * asked for), else the page alone. The fd, or -errno with `why` said. */
static int open_mapped(pid_t tid, void **page, size_t *bytes, bool *ring, uint32_t *key, char *why, size_t why_size) {
    pthread_mutex_lock(&g_lock);
    bool switches = atomic_load_explicit(&g_ring_wanted, memory_order_relaxed) && g_ring_threads < D9_TCC_MAX_RING_THREADS;
    g_ring_threads += switches;
    pthread_mutex_unlock(&g_lock);
    int fd = -1;
    *page = MAP_FAILED;
    if (switches) {
        fd = task_clock_open(tid, true);
        *page = fd < 0 ? MAP_FAILED : map_event(fd, true, bytes);
        const volatile struct perf_event_mmap_page *meta = *page;
        if (*page != MAP_FAILED && (meta->data_size != *bytes - page_bytes() || meta->data_offset != page_bytes() ||
                                    !ring_key_now(meta, key))) {
            munmap(*page, *bytes); /* a layout not the one asked for: the page alone */
            *page = MAP_FAILED;
        }
        if (*page == MAP_FAILED) {
            if (fd >= 0) close(fd);
            pthread_mutex_lock(&g_lock);
            g_ring_threads--;
            pthread_mutex_unlock(&g_lock);
            switches = false;
        }
    }
    if (!switches) {
        fd = task_clock_open(tid, false);
        if (fd < 0) {
            snprintf(why, why_size, "perf_event_open(PERF_COUNT_SW_TASK_CLOCK) refused: %s", strerror(-fd));
            return fd;
        }
        *page = map_event(fd, false, bytes);
        if (*page == MAP_FAILED) {
            int err = errno;
            snprintf(why, why_size, "mmap of the task-clock event refused: %s", strerror(err));
            close(fd);
            return -err;
        }
    }
    *ring = switches;
    return fd;
}

/* A free slot for the event (state `state`), or -1 with the event closed and unmapped. */
static int take_slot(int fd, void *page, size_t bytes, pid_t tid, int state) {
    int found = -1;
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < D9_TCC_MAX_THREADS && found < 0; i++) {
        if (atomic_load(&g_slots[i].state) == SLOT_FREE) {
            found = i;
            g_slots[i].fd = fd;
            g_slots[i].id = d9_fd_identify(fd);
            g_slots[i].page = page;
            g_slots[i].map_bytes = bytes;
            g_slots[i].tid = (uint32_t)tid;
            g_slots[i].read_at = 0;
            g_slots[i].lost_since = false;
            atomic_store(&g_slots[i].state, state);
        }
    }
    if (found < 0 && bytes > page_bytes()) g_ring_threads--;
    pthread_mutex_unlock(&g_lock);
    if (found < 0) {
        munmap(page, bytes);
        close(fd);
    }
    return found;
}

/* The slot the collector opened for this thread (SLOT_PREOPENED), now the thread's; -1: none. */
static int adopt_slot(pid_t tid) {
    int found = -1;
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < D9_TCC_MAX_THREADS && found < 0; i++)
        if (atomic_load(&g_slots[i].state) == SLOT_PREOPENED && g_slots[i].tid == (uint32_t)tid) {
            found = i;
            atomic_store(&g_slots[i].state, SLOT_OPEN);
        }
    pthread_mutex_unlock(&g_lock);
    return found;
}

/* The calling thread's event, mapped and in the table (the one the collector opened for it, if
 * any); false (reason in `why`) if refused. */
static bool open_for_thread(d9_tcc_state *s, char *why, size_t why_size) {
    /* A seccomp filter installed since the probe may kill the thread that calls what it does
     * not allow: this thread then reads by system call. */
    if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) != atomic_load_explicit(&g_seccomp_at_start, memory_order_relaxed)) {
        snprintf(why, why_size, "a seccomp filter installed after the start");
        return false;
    }
    pid_t tid = (pid_t)syscall(SYS_gettid);
    int found = atomic_load_explicit(&g_rings_consumed, memory_order_relaxed) ? adopt_slot(tid) : -1;
    uint32_t key = 0;
    bool switches;
    if (found >= 0) {
        const volatile struct perf_event_mmap_page *meta = g_slots[found].page;
        switches = g_slots[found].map_bytes > page_bytes() && ring_key_now(meta, &key);
    } else {
        void *page;
        size_t bytes;
        int fd = open_mapped(0, &page, &bytes, &switches, &key, why, why_size);
        if (fd < 0) return false;
        found = take_slot(fd, page, bytes, tid, SLOT_OPEN);
        if (found < 0) {
            snprintf(why, why_size, "more than %d threads have a task-clock event", D9_TCC_MAX_THREADS);
            return false;
        }
    }
    pthread_once(&g_key_once, make_key);
    pthread_setspecific(g_key, s);
    s->slot = found;
    s->page = g_slots[found].page;
    s->poll_page = s->page;
    s->ring = switches ? (const volatile char *)s->page + page_bytes() : NULL;
    s->ring_size = g_slots[found].map_bytes - page_bytes();
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
    /* a lazily opened page quiet for long (thread_cpu_clock_lazy.h): closed at a park or unpark
     * after a switch, the value then by system call */
    if (use <= D9_TCC_UNPARK && s->lazy_opened && s->page->lock != s->lock &&
        d9_tcc_lazy_quiet(s, now_ticks, ns_per_tick)) {
        release(s);
        d9_tcc_lazy_close(s, __atomic_load_n(&d9_thread_cpu_clock_gen, __ATOMIC_RELAXED));
        return D9_TCC_NONE;
    }
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
    bool lazy = d9_tcc_lazy_is(s, gen);
    /* a lazy thread (no page: nothing to release) reads by system call until its first long poll */
    if (lazy && use != D9_TCC_OPEN) return D9_TCC_NONE;
    release(s); /* a past recording's, or none (a lazy thread's poll_page, d9_tcc_lazy_page) */
    if (!lazy && gen && d9_tcc_lazy_on()) {
        s->gen = gen | D9_TCC_LAZY;
        d9_tcc_lazy_begin(s);
        return D9_TCC_NONE;
    }
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
    if (lazy) d9_tcc_lazy_opened(s, s->ticks);
    return cpu;
}

/* Whether this thread can open the event (with its switch ring) and map it; why not in `why`. */
static bool probe_event(bool switches, char *why, size_t why_size) {
    int fd = d9_task_clock_open(switches);
    size_t bytes = 0;
    void *page = fd < 0 ? MAP_FAILED : map_event(fd, switches, &bytes);
    const char *what = switches ? " with switch records" : "";
    if (fd < 0) snprintf(why, why_size, "perf_event_open(PERF_COUNT_SW_TASK_CLOCK%s) refused: %s", what, strerror(-fd));
    else if (page == MAP_FAILED) snprintf(why, why_size, "mmap of the task-clock event%s refused: %s", what, strerror(errno));
    if (page != MAP_FAILED) munmap(page, bytes);
    if (fd >= 0) close(fd);
    return page != MAP_FAILED;
}

/* The start's choices, for the reason (say_reason) when the off-CPU source takes the rings. */
static d9_thread_cpu_source g_requested;
static uint64_t g_park_slack_ns;
static uint64_t g_poll_cpu_min_us; /* lazy's threshold, as configured */
static char g_ring_why[160];

/* thread_cpu_clock in the metadata: the page, and how a thread takes its value after a switch. */
static void say_reason(bool ring) {
    char after_switch[640];
    char read_rules[260];
    snprintf(read_rules, sizeof read_rules,
             "a park after a switch: the CPU time at the last switch-in, a lower bound, when short by less than "
             "%llu us, else by system call; an unpark whose poller did not sleep since such a park, a long poll's "
             "begin or end after a switch: by system call",
             (unsigned long long)(g_park_slack_ns / 1000));
    bool consumed = atomic_load_explicit(&g_rings_consumed, memory_order_relaxed);
    if (ring)
        snprintf(after_switch, sizeof after_switch,
                 "after a switch: the CPU time at the last switch-in plus the wall time since it, from the "
                 "kernel's switch records in a %u-page ring per thread (up to %d threads%s), no system call; a "
                 "thread without its ring (refused, past them, or its last records not its switch out and in): %s",
                 consumed ? D9_TCC_SOURCE_RING_PAGES : 1u, D9_TCC_MAX_RING_THREADS,
                 consumed ? "; the off-CPU source's switch records" : "", read_rules);
    else
        snprintf(after_switch, sizeof after_switch, "no switch ring (%s): %s", g_ring_why, read_rules);
    if (g_requested == D9_THREAD_CPU_LAZY) {
        snprintf(g_reason, sizeof g_reason,
                 "lazy: clock_gettime(CLOCK_THREAD_CPUTIME_ID) at a park (its unpark carrying it) until the thread's "
                 "first poll of %llu us or more, then a task-clock page (ThreadCpuPageEvent; up to %d threads; %s) "
                 "(DIAL9_THREAD_CPU=lazy)",
                 (unsigned long long)g_poll_cpu_min_us, D9_TCC_MAX_THREADS,
                 after_switch);
        return;
    }
    snprintf(g_reason, sizeof g_reason, "perf: a task-clock page per thread (up to %d threads; %s)%s",
             D9_TCC_MAX_THREADS, after_switch, g_requested == D9_THREAD_CPU_PERF   ? " (DIAL9_THREAD_CPU=perf)"
             : g_requested == D9_THREAD_CPU_RING ? " (DIAL9_THREAD_CPU=ring)"
                                                 : "");
}

static int start_clock(d9_thread_cpu_source requested, bool ticks_are_ns, bool unread, uint64_t park_slack_ns,
                       uint64_t poll_cpu_min_us) {
    g_requested = requested;
    if (d9_tcc_lazy_start(false) != 0) return -1;
    g_park_slack_ns = park_slack_ns;
    g_poll_cpu_min_us = poll_cpu_min_us;
    atomic_store_explicit(&g_rings_consumed, false, memory_order_relaxed);
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
    if (requested == D9_THREAD_CPU_LAZY && !poll_cpu_min_us) { /* no thread would ever want its page */
        snprintf(g_reason, sizeof g_reason, "syscall: DIAL9_THREAD_CPU=lazy with poll_cpu off (DIAL9_POLL_CPU_MIN_US=0)");
        __atomic_store_n(&d9_thread_cpu_clock_gen, 0, __ATOMIC_RELAXED);
        return 0;
    }
    /* the probes: can this thread have the event with its switch ring, or its page alone? */
    atomic_store_explicit(&g_seccomp_at_start, prctl(PR_GET_SECCOMP, 0, 0, 0, 0), memory_order_relaxed);
    /* the ring only when asked for: on the hosts measured, its records cost every switch of the
     * thread more than the reads after a switch it saves (bench/README.md, "What a recorded
     * thread's context switch costs") */
    char why[160] = "";
    snprintf(g_ring_why, sizeof g_ring_why, "%s",
             requested == D9_THREAD_CPU_PAGE   ? "DIAL9_THREAD_CPU=page"
             : requested == D9_THREAD_CPU_LAZY ? "DIAL9_THREAD_CPU=lazy"
             : requested == D9_THREAD_CPU_RING
                 ? ""
                 : "not asked for: it costs each switch more than the reads it saves; DIAL9_THREAD_CPU=ring takes it");
    bool ring = requested == D9_THREAD_CPU_RING && probe_event(true, g_ring_why, sizeof g_ring_why);
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
    say_reason(ring);
    if (requested == D9_THREAD_CPU_LAZY && d9_tcc_lazy_start(true) != 0) return -1;
    pthread_mutex_lock(&g_lock);
    g_gen_counter = (g_gen_counter + 1) & ~(D9_TCC_NO_PAGE | D9_TCC_LAZY);
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
    if (start_clock(requested, ticks_are_ns, unread, park_slack_ns, min_us) != 0) return -1;
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
    d9_poll_cpu_set_ns_per_tick(ns_per_tick); /* a lazy thread's inline test of a poll's length */
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
        if (state != SLOT_CLOSED && e->fd >= 0) d9_fd_close_if_ours(e->fd, e->id);
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
    atomic_store_explicit(&g_rings_consumed, false, memory_order_relaxed);
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

/* ---- The rings as the off-CPU source's switch records (thread_cpu_switch_ring.h) ---- */

bool d9_tcc_rings_consume(char *why, size_t why_size) {
    if (!__atomic_load_n(&d9_thread_cpu_clock_gen, __ATOMIC_RELAXED)) {
        snprintf(why, why_size, "no task-clock page per thread (thread_cpu_clock says why)");
        return false;
    }
    /* opt-in: the rings are not governed (closing a thread's CPU-time event per window is not
     * to be had), so at the switch rates where the governor samples or pauses the inherited
     * events (memcached back to back) they cost more than those; below them, less
     * (bench/README.md, "One event per recorded thread") */
    if (g_requested != D9_THREAD_CPU_RING) {
        snprintf(why, why_size, "not asked for (DIAL9_THREAD_CPU=ring): ungoverned, they cost more than the "
                                "governed inherited events at high switch rates");
        return false;
    }
    atomic_store_explicit(&g_rings_consumed, true, memory_order_relaxed); /* the probe maps their size */
    if (!probe_event(true, why, why_size)) {
        atomic_store_explicit(&g_rings_consumed, false, memory_order_relaxed);
        return false;
    }
    atomic_store_explicit(&g_ring_wanted, true, memory_order_relaxed);
    say_reason(true);
    return true;
}

/* Whether thread `tid` has an event (sorted tids: bsearch). */
static bool has_tid(const uint32_t *tids, size_t n, uint32_t tid) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (tids[mid] == tid) return true;
        if (tids[mid] < tid) lo = mid + 1;
        else hi = mid;
    }
    return false;
}

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

size_t d9_tcc_rings_cover(const uint32_t *tids, size_t n) {
    if (!atomic_load_explicit(&g_rings_consumed, memory_order_relaxed)) return n;
    uint32_t with_ring[D9_TCC_MAX_THREADS];
    size_t nring = 0;
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < D9_TCC_MAX_THREADS; i++) {
        slot *e = &g_slots[i];
        int state = atomic_load(&e->state);
        if (state == SLOT_PREOPENED && !has_tid(tids, n, e->tid)) { /* its thread left the registry */
            d9_fd_close_if_ours(e->fd, e->id);
            e->fd = -1;
            atomic_store(&e->state, SLOT_RETIRED); /* read once more, then freed */
        } else if (state != SLOT_FREE && state != SLOT_RETIRED && state != SLOT_CLOSED && e->map_bytes > page_bytes()) {
            with_ring[nring++] = e->tid;
        }
    }
    pthread_mutex_unlock(&g_lock);
    qsort(with_ring, nring, sizeof *with_ring, cmp_u32);
    size_t uncovered = 0;
    for (size_t t = 0; t < n; t++) {
        if (has_tid(with_ring, nring, tids[t])) continue;
        void *page;
        size_t bytes;
        bool ring = false;
        uint32_t key;
        char why[160];
        int fd = open_mapped((pid_t)tids[t], &page, &bytes, &ring, &key, why, sizeof why);
        if (fd >= 0 && !ring) { /* past the cap or refused: the page alone records no switch */
            munmap(page, bytes);
            close(fd);
            fd = -1;
        }
        if (fd < 0 || take_slot(fd, page, bytes, (pid_t)tids[t], SLOT_PREOPENED) < 0) uncovered++;
    }
    return uncovered;
}

/* Whether thread `tid` has an event with its ring (under g_lock). */
static bool has_ring_locked(uint32_t tid) {
    for (int i = 0; i < D9_TCC_MAX_THREADS; i++) {
        int state = atomic_load(&g_slots[i].state);
        if (state != SLOT_FREE && state != SLOT_RETIRED && state != SLOT_CLOSED && g_slots[i].tid == tid &&
            g_slots[i].map_bytes > page_bytes())
            return true;
    }
    return false;
}

void d9_tcc_rings_open_self(void) {
    if (!atomic_load_explicit(&g_rings_consumed, memory_order_relaxed)) return;
    pid_t tid = (pid_t)syscall(SYS_gettid);
    pthread_mutex_lock(&g_lock);
    bool has = has_ring_locked((uint32_t)tid);
    pthread_mutex_unlock(&g_lock);
    if (has) return;
    void *page;
    size_t bytes;
    bool ring = false;
    uint32_t key;
    char why[160];
    int fd = open_mapped(0, &page, &bytes, &ring, &key, why, sizeof why);
    if (fd < 0) return; /* the collector's cover counts it */
    if (!ring) {
        munmap(page, bytes);
        close(fd);
        return;
    }
    take_slot(fd, page, bytes, tid, SLOT_PREOPENED);
}

typedef struct ring_reader {
    d9_tcc_switch_fn fn;
    void *ctx;
    uint32_t tid;
} ring_reader;

static void on_ring_record(void *ctx, uint64_t time_ns, uint16_t misc) {
    const ring_reader *r = ctx;
    r->fn(r->ctx, r->tid, time_ns, misc);
}

void d9_tcc_rings_drain(d9_tcc_switch_fn fn, d9_tcc_lost_fn lost, void *ctx) {
    if (!atomic_load_explicit(&g_rings_consumed, memory_order_relaxed)) return;
    /* the copy of a ring's records (d9_tcc_ring_consume): the collector's, as large as a ring */
    static uint64_t (*scratch)[2];
    static size_t max_records;
    size_t ring_records = D9_TCC_SOURCE_RING_PAGES * page_bytes() / D9_TCC_SWITCH_RECORD_BYTES;
    if (max_records < ring_records) {
        uint64_t(*grown)[2] = realloc(scratch, ring_records * sizeof *grown);
        if (!grown) return; /* read at the next drain; an overrun meanwhile is counted then */
        scratch = grown;
        max_records = ring_records;
    }
    pthread_mutex_lock(&g_lock); /* a thread's exit waits: its ring stays mapped meanwhile */
    for (int i = 0; i < D9_TCC_MAX_THREADS; i++) {
        slot *e = &g_slots[i];
        int state = atomic_load(&e->state);
        if (state == SLOT_FREE || e->map_bytes <= page_bytes()) continue;
        const volatile struct perf_event_mmap_page *meta = e->page;
        uint64_t size = e->map_bytes - page_bytes();
        if (size / D9_TCC_SWITCH_RECORD_BYTES > max_records) continue; /* not this layout's: not ours to read */
        ring_reader r = {fn, ctx, e->tid};
        d9_tcc_consumed got = d9_tcc_ring_consume(meta, (const volatile char *)e->page + page_bytes(), size,
                                                  &e->read_at, scratch, on_ring_record, &r);
        if (got.lost) lost(ctx, e->tid, got.lost, got.lost_until_ns);
        if (state == SLOT_RETIRED) free_slot(e); /* its thread is gone: nothing more comes */
    }
    pthread_mutex_unlock(&g_lock);
}

void d9_tcc_rings_unconsume(void) {
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < D9_TCC_MAX_THREADS; i++) {
        slot *e = &g_slots[i];
        int state = atomic_load(&e->state);
        if (state == SLOT_RETIRED) {
            free_slot(e);
        } else if (state == SLOT_PREOPENED) { /* never taken over by its thread */
            d9_fd_close_if_ours(e->fd, e->id);
            free_slot(e);
        }
    }
    atomic_store_explicit(&g_rings_consumed, false, memory_order_relaxed);
    pthread_mutex_unlock(&g_lock);
}
