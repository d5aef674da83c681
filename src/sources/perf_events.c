#include "sources/perf_events.h"

#include "core/owned_fd.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "core/schedstat.h"
#include "core/thread_buffer.h"
#include "core/thread_cpu_clock.h"
#include "core/thread_cpu_switch_ring.h"
#include "sources/cost_governor.h"
#include "sources/perf_ring.h"
#include "sources/stack_unwind.h"
#include "sources/unwind_tables.h"

/* The sampling events (CPU clock, context-switch stacks) share one sample layout so records
 * from either parse the same way, and PERF_SAMPLE_IDENTIFIER says which event wrote a sample
 * (first word of a sample, last word of the sample_id trailer of other records). */
#define SAMPLE_TYPE_FP                                                                       \
    (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |          \
     PERF_SAMPLE_CPU | PERF_SAMPLE_CALLCHAIN)
/* On x86-64 the samples also carry what CFI unwinding needs (stack_unwind.h): the user
 * registers ip, sp, bp and a copy of the top of the user stack. Other architectures keep the
 * frame-pointer chain alone. */
#if defined(__x86_64__)
#include <asm/perf_regs.h>
#define UNWIND_SAMPLES 1
#define SAMPLE_TYPE (SAMPLE_TYPE_FP | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER)
#define SAMPLE_REGS (1ull << PERF_REG_X86_BP | 1ull << PERF_REG_X86_SP | 1ull << PERF_REG_X86_IP)
#else
#define UNWIND_SAMPLES 0
#define SAMPLE_TYPE SAMPLE_TYPE_FP
#endif

/* Switch records are written at every context switch, twice, so they carry only what a reader
 * needs: the sample_id trailer is tid and time; the CPU is the ring's. Each trailer word costs
 * the kernel ~40 ns per record on the reference VM (docs/kernel-sources.md), so these records
 * go to rings of their own, where no identifier is needed to parse them. */
#define SWITCH_SAMPLE_TYPE (PERF_SAMPLE_TID | PERF_SAMPLE_TIME)

/* Data pages per CPU ring. The collector drains every 20 ms at most: a ring must hold that
 * long. On x86-64 each sample carries D9_UNWIND_STACK_BYTES (2 KiB) of user stack, so a
 * sample is ~2.4 KiB: sample rings of 128 KiB hold ~50 per drain (2.6 k samples/s per CPU,
 * 99 Hz on 26 busy threads); with context-switch stacks (every switch while not paused)
 * 2 MiB, ~850 per drain, more than the pacing lets through (500/s, bursts of 500). Switch
 * rings: 2 x 24 bytes per switch, 256 KiB holds ~270 k switches/s. Samples + switches
 * unprivileged is 32 + 64 + 2 pages, inside the default per-CPU budget
 * (perf_event_mlock_kb = 516 KiB; context-switch stacks need privileges, which lift it);
 * refused sizes are halved. Without stack copies (other architectures) samples are ~1 KiB. */
#define RING_PAGES_SAMPLES (UNWIND_SAMPLES ? 32 : 16)
#define RING_PAGES_SWITCHES 64
#define RING_PAGES_STACKS (UNWIND_SAMPLES ? 512 : 128)
#define MAX_EVENT_FDS 4096    /* threads existing at start x CPUs x kinds */

/* A deferred context-switch sample's payload (d9_perf_unwind_deferred): has_regs, ip, sp, bp,
 * the user chain's length n, the stack copy's length L; the chain; the copy. */
#define DEFERRED_FIXED 6
#define DEFERRED_MAX_WORDS (DEFERRED_FIXED + D9_PERF_MAX_FRAMES + D9_UNWIND_STACK_BYTES / 8)

/* K_HOST: a ring's host once its events were closed (host_ring), no kind of record */
enum { K_CPU, K_SWITCH, K_STACKS, K_COUNT, K_HOST = K_COUNT };

typedef struct id_kind {
    uint64_t id;
    int kind;
} id_kind;

typedef struct tid_info {
    uint32_t tid;
    bool worker;
    uint32_t window; /* the switch window in which this thread's last record was read */
} tid_info;

typedef struct perf_src {
    d9_source base;
    struct perf_event_attr attr[K_COUNT];
    bool want[K_COUNT];
    int ncpu;
    d9_perf_ring *rings;       /* per CPU: CPU samples and context-switch stacks */
    d9_perf_ring *swrings;     /* per CPU: switch records */
    int *fds;
    int *fd_kinds;             /* kind of fds[i] */
    size_t nfds, cap_fds;
    d9_fd_id *fd_ids; /* what each fd was opened on: a program may close ours and reuse them */
    id_kind *ids;
    size_t nids;
    tid_info *tids;            /* threads that record, sorted by tid; rebuilt every drain */
    size_t ntids;
    int *leader;               /* per CPU: the fd whose ring [2c] samples, [2c+1] switches use; -1 none */
    d9_src_batch *out;         /* during a drain */
    d9_collector *collector;   /* to say in the metadata when stacks are paused */
    /* pacing of context-switch stacks (pace_stacks) */
    bool stacks_on;
    bool stacks_enabled;       /* the stacks events' state in the kernel (set_stacks makes no change twice) */
    bool stacks_kept;          /* they could not be opened again (stacks_reopenable): kept open, disabled
                                * while the switch events are closed, instead of closed with them */
    bool stacks_missing;       /* the last reopen opened none (refused: they were closed before a drop) */
    uint64_t stacks_seen;      /* samples read since the last pacing decision, kept or not */
    uint64_t stacks_total;     /* ... and since start (the governor's benchmark reads it) */
    bool stacks_window_off;    /* paused by the governor's window, not by the pacing */
    double tokens;             /* stacks that may still be taken (a token bucket) ... */
    uint32_t stacks_per_sec;   /* ... refilled at this rate, holding at most this many */
    uint64_t last_pace, changed_at, paused_ns, started, last_note;
    uint64_t frames[D9_PERF_MAX_FRAMES + DEFERRED_MAX_WORDS]; /* + a deferred sample's payload */
    uint64_t user[D9_PERF_MAX_FRAMES];
    int stack_unwind;          /* d9_perf_set_stack_unwind's mode when the source opened */
    uint64_t gov_stacks, gov_unwound; /* stacks taken and unwound at the governor's last evaluation */
    d9_unwind_tables *tables;  /* during a drain: the process's unwind tables, locked ... */
    bool tables_tried;         /* ... once the drain met a sample to unwind (a drain without
                                * one, such as the last of a short program, reads no ELF file) */
    /* the cost governor (cost_governor.h) */
    bool governed;
    double budget_ns_per_s;
    d9_gov_state gov;
    d9_gov_input gov_in;       /* what the last evaluation saw */
    uint64_t gov_last, gov_since, gov_switches, gov_cpu_samples, gov_schedstat;
    bool switches_on;          /* the switch records' events are enabled */
    bool ring_switches;        /* the switch records come from the recorded threads' own task-clock
                                * events (thread_cpu_switch_ring.h): no switch event of ours */
    size_t uncovered;          /* recorded threads without their ring at the last drain */
    uint32_t *ring_tids;       /* the registry's tids, for d9_tcc_rings_cover */
    bool switch_events_closed; /* the switch and stacks events are closed (close_switch_events): paused,
                                * or between a sampled level's windows */
    bool close_when_paused;    /* d9_perf_keep_events_open_when_paused (benchmarks) clears it */
    bool close_between;        /* the level's windows: events closed between them (d9_gov_closes_between) */
    int window_closing;        /* d9_perf_set_window_closing's policy when the source opened */
    double reopen_ns;          /* a close and a reopen, CPU ns, smoothed: the governor's reopen_ns */
    uint64_t close_cpu_ns;     /* the CPU of the last close (counted with the next reopen) */
    uint64_t map_cpu_ns;       /* CPU spent mapping rings (attach_event), to leave out of reopen_ns's first figure */
    uint64_t reopen_backoff_ns, reopen_hold_until; /* after a failed reopen: paused until then */
    bool reopen_fail_noted, stacks_fail_noted;     /* their one-time messages were given */
    pid_t collector_tid;       /* the thread of the first drain: the collector's (host_ring) */
    uint32_t window;           /* incremented each time they are enabled again after a gap */
    uint64_t gaps_at, gaps_note, gaps_ns[D9_GOV_LEVELS][2]; /* note_gaps: per level, [closed, open] */
    uint64_t void_from, void_to; /* a failed reopen's span: its events, opened enabled and closed
                                  * again, wrote switch records the level (paused) disowns */
    d9_perf_counters n;
} perf_src;

/* The governor's level of the perf source opened last, for d9_perf_governor_now. */
static _Atomic int g_gov_level;
static _Atomic uint64_t g_gov_changes;
static _Atomic uint64_t g_stacks_taken, g_cpu_samples_read;
static _Atomic uint64_t g_switch_records, g_closes, g_reopens, g_reopen_cpu_ns, g_switch_enables;
static _Atomic bool g_keep_open_when_paused;
static _Atomic int g_window_closing = D9_PERF_CLOSE_AUTO;
static _Atomic int g_held_level = -1;
static _Atomic uint64_t g_reopens_failed, g_reopen_cost_ns;
static _Atomic int g_ring_hosts;
static _Atomic int g_stack_unwind = D9_PERF_UNWIND_IN_POLLS;
static _Atomic bool g_thin_stacks = true;
/* context-switch stacks unwound by d9_perf_unwind_deferred (on the collector's thread), ever */
static _Atomic uint64_t g_deferred_unwound;
static _Atomic uint64_t g_unwound_at_open;
/* The switch events' state for tests (d9_perf_switch_state): a sequence made odd before each
 * change and even after it, the state stored before it becomes even again. */
static _Atomic uint64_t g_switch_seq;
static _Atomic int g_switch_state;

/* A failed reopen is tried again after this, doubled at each failure up to the max. */
#define REOPEN_RETRY_NS 2000000000ull
#define REOPEN_RETRY_MAX_NS 64000000000ull

static uint64_t mono_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void switch_change_begin(void) { atomic_fetch_add(&g_switch_seq, 1); }

static void switch_change_end(int state) {
    atomic_store(&g_switch_state, state);
    atomic_fetch_add(&g_switch_seq, 1);
}

/* ---------------------------------------------------------------- opening */

static int cmp_pid(const void *a, const void *b) {
    pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
    return (x > y) - (x < y);
}

/* Threads of this process, the caller first (its events decide what the kernel allows); the
 * caller alone when /proc/self/task cannot be read, *err then says why (0 otherwise). */
static pid_t *list_threads(size_t *count, int *err) {
    *err = 0;
    size_t n = 0, cap = 16;
    pid_t *tids = malloc(cap * sizeof *tids);
    if (!tids) return NULL;
    pid_t self = gettid();
    tids[n++] = self;
    DIR *d = opendir("/proc/self/task");
    if (!d) *err = -errno;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        pid_t tid = (pid_t)atoi(e->d_name);
        if (tid <= 0 || tid == self) continue;
        if (n == cap) {
            pid_t *t = realloc(tids, cap * 2 * sizeof *t);
            if (!t) break;
            tids = t;
            cap *= 2;
        }
        tids[n++] = tid;
    }
    if (d) closedir(d);
    qsort(tids + 1, n - 1, sizeof *tids, cmp_pid);
    *count = n;
    return tids;
}

#if UNWIND_SAMPLES
static void set_unwind_attrs(struct perf_event_attr *a) {
    a->sample_regs_user = SAMPLE_REGS;
    a->sample_stack_user = D9_UNWIND_STACK_BYTES;
}
#endif

static void init_attrs(perf_src *s, const d9_perf_request *req) {
    struct perf_event_attr *a = &s->attr[K_CPU];
    d9_perf_attr_init(a, PERF_COUNT_SW_CPU_CLOCK, SAMPLE_TYPE);
    a->freq = 1;
    a->sample_freq = req->hz;
    a->exclude_kernel = req->kernel_frames ? 0 : 1;
    a->exclude_hv = 1;

    a = &s->attr[K_SWITCH];
    d9_perf_attr_init(a, PERF_COUNT_SW_DUMMY, SWITCH_SAMPLE_TYPE);
    a->context_switch = 1;
    a->exclude_kernel = 1; /* switch records are side-band: allowed at paranoid 2 this way */
    a->exclude_hv = 1;

    a = &s->attr[K_STACKS];
    d9_perf_attr_init(a, PERF_COUNT_SW_CONTEXT_SWITCHES, SAMPLE_TYPE);
    a->sample_period = 1; /* every switch; the cost is bounded by pausing (see pace_stacks) */
    a->exclude_kernel = 0; /* with 1 the event opens and never fires: switches happen in the kernel */
    a->exclude_hv = 1;

#if UNWIND_SAMPLES
    for (int k = K_CPU; k <= K_STACKS; k += K_STACKS - K_CPU) set_unwind_attrs(&s->attr[k]);
#endif
    for (int k = 0; k < K_COUNT; k++) {
        s->attr[k].inherit = 1;
        s->attr[k].inherit_thread = 1; /* follow threads, not forked processes */
    }
}

static bool remember_fd(perf_src *s, int fd, int kind) {
    if (s->nfds == s->cap_fds) {
        size_t cap = s->cap_fds ? s->cap_fds * 2 : 64;
        int *f = realloc(s->fds, cap * sizeof *f);
        if (f) s->fds = f;
        int *k = realloc(s->fd_kinds, cap * sizeof *k);
        if (k) s->fd_kinds = k;
        id_kind *ids = realloc(s->ids, cap * sizeof *ids);
        if (ids) s->ids = ids;
        d9_fd_id *fid = realloc(s->fd_ids, cap * sizeof *fid);
        if (fid) s->fd_ids = fid;
        if (!f || !k || !ids || !fid) return false;
        s->cap_fds = cap;
    }
    /* Only samples are told apart by their event's id (kind_of: a CPU sample or a stack, in one
     * ring); a switch record says what it is by its type, and a ring's host writes nothing. So
     * a window's reopen asks no id of its switch events: one ioctl less per thread and CPU. */
    bool sampled = kind == K_CPU || kind == K_STACKS;
    uint64_t id = 0;
    if (sampled && ioctl(fd, PERF_EVENT_IOC_ID, &id) != 0) return false;
    s->fd_kinds[s->nfds] = kind;
    s->fd_ids[s->nfds] = d9_fd_identify(fd);
    s->fds[s->nfds++] = fd;
    if (sampled) s->ids[s->nids++] = (id_kind){id, kind};
    return true;
}

/* An opened event into its CPU's ring: the first of the ring maps it (its `lead`), the others
 * write into the lead's (PERF_EVENT_IOC_SET_OUTPUT); then it is remembered for closing. 0, or
 * nonzero with the event closed (and the ring unmapped again if it was the lead). */
static int attach_event(perf_src *s, int fd, int k, int *lead, d9_perf_ring *ring, unsigned pages) {
    int rc = 0;
    if (*lead < 0) {
        uint64_t cpu0 = thread_cpu_ns();
        rc = d9_perf_ring_map(ring, fd, pages);
        s->map_cpu_ns += thread_cpu_ns() - cpu0;
        if (rc == 0) *lead = fd;
    } else if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, *lead) != 0) {
        rc = -errno;
    }
    if (rc == 0 && remember_fd(s, fd, k)) return 0;
    if (*lead == fd) {
        d9_perf_ring_unmap(ring);
        *lead = -1;
    }
    close(fd);
    return rc ? rc : -ENOMEM;
}

/* Open event `kind` for thread `tid` on `cpu`, disabled unless `enabled`, retrying without
 * inherit_thread on kernels older than 5.13, and without kernel frames where they are refused. */
static int open_event(perf_src *s, int kind, pid_t tid, int cpu, bool enabled, d9_perf_report *rep) {
    for (;;) {
        struct perf_event_attr a = s->attr[kind];
        a.disabled = !enabled;
        int fd = d9_perf_open(&a, tid, cpu);
        if (fd >= 0) return fd;
        if ((fd == -EINVAL || fd == -E2BIG) && s->attr[kind].inherit_thread) {
            for (int k = 0; k < K_COUNT; k++) s->attr[k].inherit_thread = 0;
            rep->inherit_thread = false;
            continue;
        }
        if ((fd == -EACCES || fd == -EPERM) && kind == K_CPU && !s->attr[K_CPU].exclude_kernel) {
            s->attr[K_CPU].exclude_kernel = 1;
            continue;
        }
        return fd;
    }
}

static void source_collect(d9_source *src, d9_src_batch *out);
static void source_segment_start(d9_source *src, d9_src_batch *out);
static void source_close(d9_source *src);
static uint64_t process_switches(void);

static int cmp_id(const void *a, const void *b) {
    uint64_t x = ((const id_kind *)a)->id, y = ((const id_kind *)b)->id;
    return (x > y) - (x < y);
}

d9_source *d9_perf_source_open(const d9_perf_request *req, d9_perf_report *rep) {
    uint64_t cpu0 = thread_cpu_ns();
    memset(rep, 0, sizeof *rep);
    rep->inherit_thread = true;
    perf_src *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->base.ctx = s;
    init_attrs(s, req);
    s->want[K_CPU] = req->cpu_profile;
    /* one event per recorded thread (DIAL9_THREAD_CPU=ring): the collector reads the threads'
     * switch rings instead of opening inherited per-CPU switch events, cheaper per switch at full
     * coverage but not governed, hence opt-in (bench/README.md, "One event per recorded thread") */
    s->ring_switches = req->switches && req->thread_rings &&
                       d9_tcc_rings_consume(rep->switch_rings_why, sizeof rep->switch_rings_why);
    rep->switch_rings = s->ring_switches;
    if (s->ring_switches && req->collector) /* its reason now says the rings are the source's too */
        d9_run_metadata_set(d9_collector_metadata(req->collector), "thread_cpu_clock", "%s",
                            d9_thread_cpu_clock_reason());
    s->want[K_SWITCH] = req->switches && !s->ring_switches;
    s->want[K_STACKS] = req->switch_stacks;
    long ncpu = sysconf(_SC_NPROCESSORS_CONF);
    s->ncpu = ncpu > 0 ? (int)ncpu : 1;
    s->rings = calloc((size_t)s->ncpu, sizeof *s->rings);
    s->swrings = calloc((size_t)s->ncpu, sizeof *s->swrings);
    /* the fd whose ring the events of a CPU share: [0] samples, [1] switches */
    int *leader = malloc(2 * (size_t)s->ncpu * sizeof *leader);
    size_t ntids = 0;
    int list_err;
    pid_t *tids = list_threads(&ntids, &list_err); /* unreadable: the caller's thread alone, as ever */
    if (!s->rings || !s->swrings || !leader || !tids) {
        free(leader);
        free(tids);
        free(s->rings);
        free(s->swrings);
        free(s);
        return NULL;
    }
    for (int c = 0; c < 2 * s->ncpu; c++) leader[c] = -1;
    int *err[K_COUNT] = {&rep->cpu_err, &rep->switch_err, &rep->stacks_err};
    unsigned sample_pages = s->want[K_STACKS] ? RING_PAGES_STACKS : RING_PAGES_SAMPLES;
    bool opened_any[K_COUNT] = {false, false, false};
    int kinds = 0;
    for (int k = 0; k < K_COUNT; k++) kinds += s->want[k];
    size_t max_threads = kinds ? MAX_EVENT_FDS / ((size_t)s->ncpu * (size_t)kinds) : 0;
    if (max_threads == 0) max_threads = 1;
    bool *attached = calloc(ntids, sizeof *attached);
    bool *missed = calloc(ntids, sizeof *missed);

    for (int c = 0; c < s->ncpu && attached && missed; c++) {
        for (int k = 0; k < K_COUNT; k++) {
            if (!s->want[k]) continue;
            for (size_t t = 0; t < ntids; t++) {
                if (t >= max_threads) {
                    missed[t] = true;
                    continue;
                }
                int fd = open_event(s, k, tids[t], c, false, rep);
                if (fd == -ESRCH) continue; /* the thread exited meanwhile */
                if (fd == -ENODEV && t == 0) break; /* CPU offline */
                if (fd < 0) {
                    if (!opened_any[k]) { /* the kernel refuses this kind of event */
                        *err[k] = fd;
                        s->want[k] = false;
                        break;
                    }
                    missed[t] = true;
                    continue;
                }
                bool sw = k == K_SWITCH;
                int rc = attach_event(s, fd, k, &leader[2 * c + sw], sw ? &s->swrings[c] : &s->rings[c],
                                      sw ? RING_PAGES_SWITCHES : sample_pages);
                if (rc != 0) {
                    if (!opened_any[k]) {
                        *err[k] = rc;
                        s->want[k] = false;
                        break;
                    }
                    missed[t] = true;
                    continue;
                }
                opened_any[k] = true;
                attached[t] = true;
            }
        }
    }
    for (size_t t = 0; attached && missed && t < ntids; t++) {
        if (missed[t]) rep->threads_missed++;
        else if (attached[t]) rep->threads++;
    }
    rep->kernel_frames = opened_any[K_CPU] && !s->attr[K_CPU].exclude_kernel;
    for (int c = 0; c < s->ncpu; c++) {
        if (!s->rings[c].base && !s->swrings[c].base) continue;
        rep->cpus++;
        if (s->rings[c].base) rep->ring_kb = (unsigned)(s->rings[c].data_size / 1024);
        if (s->swrings[c].base) rep->switch_ring_kb = (unsigned)(s->swrings[c].data_size / 1024);
    }
    free(attached);
    free(missed);
    free(tids);
    s->leader = leader;
    for (int k = 0; k < K_COUNT; k++) s->want[k] = opened_any[k];
    if (s->nfds == 0 && !s->ring_switches) {
        source_close(&s->base);
        return NULL;
    }
    qsort(s->ids, s->nids, sizeof *s->ids, cmp_id);
    for (size_t i = 0; i < s->nfds; i++) ioctl(s->fds[i], PERF_EVENT_IOC_ENABLE, 0);
    s->collector = req->collector;
    s->stacks_on = s->stacks_enabled = s->want[K_STACKS];
    s->stacks_per_sec = req->stacks_per_sec;
    s->tokens = s->stacks_per_sec;
    s->started = s->last_pace = s->changed_at = mono_now();
    s->switches_on = s->want[K_SWITCH];
    s->stack_unwind = atomic_load_explicit(&g_stack_unwind, memory_order_relaxed);
    atomic_store_explicit(&g_unwound_at_open, atomic_load_explicit(&g_deferred_unwound, memory_order_relaxed),
                          memory_order_relaxed);
    s->governed = s->want[K_SWITCH] && req->budget_pct > 0;
    s->budget_ns_per_s = req->budget_pct * 1e7;
    s->gov_last = s->gov_since = s->started;
    s->gov_in.stacks_unwound_share = 1; /* until measured: as if every stack were unwound */
    s->close_when_paused = !atomic_load_explicit(&g_keep_open_when_paused, memory_order_relaxed);
    s->window_closing = atomic_load_explicit(&g_window_closing, memory_order_relaxed);
    /* the first figure for a close and a reopen: this open without mapping the rings (which a
     * reopen leaves to their hosts), the same work as a reopen on this host, twice (closing
     * costs about what opening does); each close and reopen then measures its own */
    uint64_t opened_ns = thread_cpu_ns() - cpu0;
    s->reopen_ns = 2.0 * (double)(opened_ns > s->map_cpu_ns ? opened_ns - s->map_cpu_ns : 0);
    s->gov_switches = process_switches();
    s->gov_schedstat = __atomic_load_n(&d9_schedstat_reads, __ATOMIC_RELAXED);
    atomic_store_explicit(&g_gov_level, D9_GOV_LEVEL_FULL, memory_order_relaxed);
    atomic_store_explicit(&g_gov_changes, 0, memory_order_relaxed);
    atomic_store_explicit(&g_stacks_taken, 0, memory_order_relaxed);
    atomic_store_explicit(&g_cpu_samples_read, 0, memory_order_relaxed);
    atomic_store_explicit(&g_switch_records, 0, memory_order_relaxed);
    atomic_store_explicit(&g_closes, 0, memory_order_relaxed);
    atomic_store_explicit(&g_switch_enables, 0, memory_order_relaxed);
    atomic_store_explicit(&g_reopens, 0, memory_order_relaxed);
    atomic_store_explicit(&g_reopen_cpu_ns, 0, memory_order_relaxed);
    atomic_store_explicit(&g_reopens_failed, 0, memory_order_relaxed);
    atomic_store_explicit(&g_ring_hosts, 0, memory_order_relaxed);
    atomic_store_explicit(&g_reopen_cost_ns, (uint64_t)s->reopen_ns, memory_order_relaxed);
    switch_change_begin();
    switch_change_end(s->switches_on ? D9_PERF_SWITCH_ENABLED : D9_PERF_SWITCH_CLOSED);
    s->base.name = "perf";
    s->base.collect = source_collect;
    s->base.segment_start = source_segment_start;
    s->base.close = source_close;
    return &s->base;
}

/* ---------------------------------------------------------------- reading */

static int kind_of(const perf_src *s, uint64_t id) {
    size_t lo = 0, hi = s->nids;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (s->ids[mid].id == id) return s->ids[mid].kind;
        if (s->ids[mid].id < id) lo = mid + 1;
        else hi = mid;
    }
    return -1;
}

static const tid_info *find_tid(const perf_src *s, uint32_t tid) {
    size_t lo = 0, hi = s->ntids;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (s->tids[mid].tid == tid) return &s->tids[mid];
        if (s->tids[mid].tid < tid) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

static int cmp_tid(const void *a, const void *b) {
    uint32_t x = ((const tid_info *)a)->tid, y = ((const tid_info *)b)->tid;
    return (x > y) - (x < y);
}

/* Which threads record (switch records are kept for them) and which are or were workers
 * (context-switch samples are kept for them): the registry at this drain, taken after the
 * rings were marked (source_collect). A thread that was a worker at any time counts, so a
 * worker that began and ended between two drains (a short one, or a collector starved on a
 * busy machine) keeps its samples: the registry's current worker id alone lost them all. */
static void refresh_tids(perf_src *s) {
    size_t n = 0;
    d9_thread **threads = d9_threads_snapshot(&n);
    if (!threads) return;
    tid_info *t = malloc((n ? n : 1) * sizeof *t);
    if (t) {
        for (size_t i = 0; i < n; i++) {
            t[i].tid = (uint32_t)threads[i]->tid;
            t[i].worker = atomic_load_explicit(&threads[i]->ever_worker, memory_order_acquire);
            const tid_info *old = find_tid(s, t[i].tid);
            t[i].window = old ? old->window : s->window; /* a new thread had nothing in a gap */
        }
        qsort(t, n, sizeof *t, cmp_tid);
        free(s->tids);
        s->tids = t;
        s->ntids = n;
    }
    free(threads);
}

typedef struct sample_view {
    uint64_t id, ip, time;
    uint32_t tid, cpu;
    uint64_t nr;
    const uint64_t *ips;
    bool has_regs;           /* user registers (the thread was in user space at some point) */
    uint64_t bp, sp, uip;    /* PERF_SAMPLE_REGS_USER, in PERF_REG_X86_* order */
    const uint8_t *stack;    /* PERF_SAMPLE_STACK_USER: dyn_size bytes from sp */
    uint64_t stack_len;
} sample_view;

static bool parse_sample(const struct perf_event_header *h, sample_view *v) {
    const uint64_t *p = (const uint64_t *)(h + 1);
    size_t words = (h->size - sizeof *h) / 8;
    if (words < 6) return false;
    v->id = p[0];
    v->ip = p[1];
    v->tid = (uint32_t)(p[2] >> 32);
    v->time = p[3];
    v->cpu = (uint32_t)p[4];
    v->nr = p[5];
    if (v->nr > words - 6) return false;
    v->ips = p + 6;
    v->has_regs = false;
    v->stack = NULL;
    v->stack_len = 0;
#if UNWIND_SAMPLES
    /* then: abi, regs (when abi != NONE); size, data[size], dyn_size (when size != 0) */
    size_t at = 6 + (size_t)v->nr;
    if (at >= words) return true; /* a sample of the probe, or a kernel without them */
    uint64_t abi = p[at++];
    if (abi != PERF_SAMPLE_REGS_ABI_NONE) {
        if (words - at < 3) return false;
        v->bp = p[at];
        v->sp = p[at + 1];
        v->uip = p[at + 2];
        v->has_regs = abi == PERF_SAMPLE_REGS_ABI_64;
        at += 3;
    }
    if (at >= words) return true;
    uint64_t size = p[at++];
    if (size == 0) return true;
    if (size % 8 || size / 8 >= words - at) return false;
    uint64_t dyn = p[at + size / 8];
    v->stack = (const uint8_t *)(p + at);
    v->stack_len = dyn < size ? dyn : size;
#endif
    return true;
}

/* The sample's chain split at the kernel's context markers (PERF_CONTEXT_KERNEL/USER...):
 * the kernel frames into s->frames (their count returned), the user frames into s->user. */
static uint32_t split_chain(perf_src *s, const sample_view *v, uint32_t *nuser) {
    uint32_t n = 0;
    bool user = false;
    *nuser = 0;
    for (uint64_t i = 0; i < v->nr; i++) {
        uint64_t a = v->ips[i];
        if (a >= (uint64_t)PERF_CONTEXT_MAX) {
            user = a == (uint64_t)PERF_CONTEXT_USER;
            continue;
        }
        if (user) {
            if (*nuser < D9_PERF_MAX_FRAMES) s->user[(*nuser)++] = a;
        } else if (n < D9_PERF_MAX_FRAMES) {
            s->frames[n++] = a;
        }
    }
    return n;
}

/* The user frames into out[0..max), unwound with CFI over `tables` where the sample carries
 * registers and stack (stack_unwind.h), else the kernel's frame-pointer chain as given (no
 * tables: out of memory). */
static uint32_t unwind_user(d9_unwind_tables *tables, const d9_unwind_input *in, uint64_t *out, uint32_t max,
                            uint8_t *method) {
    d9_stack_method m = D9_STACK_TRUNCATED;
    uint32_t n = 0;
    if (tables) {
        n = d9_unwind_user_stack(tables, in, out, max, &m);
    } else {
        for (uint32_t i = 0; i < in->nchain && n < max; i++) out[n++] = in->chain[i];
        m = D9_STACK_FP;
    }
    *method = (uint8_t)m;
    return n;
}

static d9_unwind_input unwind_input(const sample_view *v, const uint64_t *user, uint32_t nuser) {
    return (d9_unwind_input){
        .ip = v->has_regs ? v->uip : user[0],
        .sp = v->has_regs ? v->sp : 0,
        .bp = v->has_regs ? v->bp : 0,
        .stack = v->has_regs ? v->stack : NULL,
        .stack_len = v->has_regs ? v->stack_len : 0,
        .chain = user,
        .nchain = nuser,
    };
}

/* Leaf-first addresses without the kernel's context markers: the kernel frames as the kernel
 * gave them, then the user frames, unwound with CFI where the sample carries registers and
 * stack, else the kernel's frame-pointer chain cut at the first address outside every
 * executable segment. */
static uint32_t clean_chain(perf_src *s, const sample_view *v, uint8_t *method) {
    uint32_t nuser;
    uint32_t n = split_chain(s, v, &nuser);
    *method = D9_STACK_UNRECORDED;
    if (nuser == 0 && !v->has_regs) {
        if (n == 0 && v->ip) s->frames[n++] = v->ip;
        return n;
    }
    d9_unwind_input in = unwind_input(v, s->user, nuser);
    if (!s->tables_tried) {
        s->tables_tried = true;
        s->tables = d9_unwind_tables_acquire();
    }
    return n + unwind_user(s->tables, &in, s->frames + n, D9_PERF_MAX_FRAMES - n, method);
}

/* A context-switch sample's kernel frames, then (deferred_words) what d9_perf_unwind_deferred
 * needs to unwind its user stack later: only the collector knows, in time order with the
 * thread's records, whether it fell inside a poll (core/collector_switch_stack.h). */
static uint32_t defer_chain(perf_src *s, const sample_view *v, uint32_t *deferred_words) {
    uint32_t nuser;
    uint32_t n = split_chain(s, v, &nuser);
    *deferred_words = 0;
    if (nuser == 0 && !v->has_regs) { /* nothing to unwind: as clean_chain gives it */
        if (n == 0 && v->ip) s->frames[n++] = v->ip;
        return n;
    }
    uint64_t *p = s->frames + n;
    uint64_t len = v->has_regs && v->stack ? v->stack_len : 0;
    if (len > D9_UNWIND_STACK_BYTES) len = D9_UNWIND_STACK_BYTES;
    p[0] = v->has_regs;
    p[1] = v->uip;
    p[2] = v->sp;
    p[3] = v->bp;
    p[4] = nuser;
    p[5] = len;
    memcpy(p + DEFERRED_FIXED, s->user, nuser * sizeof *p);
    memcpy(p + DEFERRED_FIXED + nuser, v->stack, len);
    *deferred_words = DEFERRED_FIXED + nuser + (uint32_t)((len + 7) / 8);
    return n + *deferred_words;
}

uint32_t d9_perf_unwind_deferred(const uint64_t *p, uint64_t words, uint64_t *out, uint32_t max, uint8_t *method) {
    *method = D9_STACK_UNRECORDED;
    if (words < DEFERRED_FIXED || p[4] > D9_PERF_MAX_FRAMES || p[5] > D9_UNWIND_STACK_BYTES ||
        DEFERRED_FIXED + p[4] + (p[5] + 7) / 8 > words)
        return 0;
    uint32_t nuser = (uint32_t)p[4];
    sample_view v = {.has_regs = p[0] != 0, .uip = p[1], .sp = p[2], .bp = p[3], .stack_len = p[5],
                     .stack = (const uint8_t *)(p + DEFERRED_FIXED + nuser)};
    if (nuser == 0 && !v.has_regs) return 0;
    d9_unwind_input in = unwind_input(&v, p + DEFERRED_FIXED, nuser);
    d9_unwind_tables *t = d9_unwind_tables_acquire();
    uint32_t n = unwind_user(t, &in, out, max, method);
    if (t) d9_unwind_tables_release();
    atomic_fetch_add_explicit(&g_deferred_unwound, 1, memory_order_relaxed);
    return n;
}

static void on_sample(perf_src *s, const struct perf_event_header *h) {
    sample_view v;
    if (!parse_sample(h, &v)) return;
    int kind = kind_of(s, v.id);
    if (kind != K_CPU && kind != K_STACKS) return;
    if (kind == K_STACKS) {
        s->stacks_seen++;
        s->stacks_total++;
        const tid_info *ti = find_tid(s, v.tid);
        if (!ti || !ti->worker) {
            s->n.filtered++;
            return;
        }
    }
    if (kind == K_STACKS && s->stack_unwind == D9_PERF_UNWIND_NONE) { /* the kernel's part alone (benchmarks) */
        s->n.filtered++;
        return;
    }
    d9_src_event e = {.ts_ns = v.time, .kind = D9_SRC_CPU_SAMPLE, .tid = v.tid, .cpu = (int32_t)v.cpu};
    e.sample.source = kind == K_CPU ? 0 : 1;
    if (kind == K_STACKS && s->stack_unwind == D9_PERF_UNWIND_IN_POLLS)
        e.sample.nframes = defer_chain(s, &v, &e.sample.deferred_words);
    else
        e.sample.nframes = clean_chain(s, &v, &e.sample.method);
    e.sample.frames = s->frames;
    if (e.sample.method == D9_STACK_CFI) s->n.unwound++;
    else if (e.sample.method == D9_STACK_TRUNCATED) s->n.truncated++;
    if (d9_src_batch_add(s->out, &e)) {
        if (kind == K_CPU) s->n.cpu_samples++;
        else s->n.stack_samples++;
    }
}

/* The sample_id trailer of a non-sample record: pid/tid, time, cpu/res, identifier. */
static bool parse_trailer(const struct perf_event_header *h, uint32_t *tid, uint64_t *time, uint32_t *cpu) {
    if (h->size < sizeof *h + 32) return false;
    const uint64_t *end = (const uint64_t *)((const uint8_t *)h + h->size);
    *tid = (uint32_t)(end[-4] >> 32);
    *time = end[-3];
    *cpu = (uint32_t)end[-2];
    return true;
}

static void on_lost(perf_src *s, const struct perf_event_header *h, uint64_t time, int32_t cpu) {
    if (h->size < sizeof *h + 16) return;
    const uint64_t *p = (const uint64_t *)(h + 1);
    d9_src_event e = {.ts_ns = time, .kind = D9_SRC_LOST, .tid = 0, .cpu = cpu};
    e.lost.count = p[1];
    e.lost.reason = "perf_ring_full";
    if (d9_src_batch_add(s->out, &e)) s->n.lost += p[1];
}

static void on_record(const struct perf_event_header *h, void *ctx) {
    perf_src *s = ctx;
    switch (h->type) {
    case PERF_RECORD_SAMPLE: on_sample(s, h); break;
    case PERF_RECORD_LOST: {
        uint32_t tid = 0, cpu = UINT32_MAX;
        uint64_t time;
        if (!parse_trailer(h, &tid, &time, &cpu)) time = mono_now();
        on_lost(s, h, time, cpu == UINT32_MAX ? -1 : (int32_t)cpu);
        break;
    }
    default: break; /* throttle / unthrottle: the kernel keeps the rate itself */
    }
}

/* A switch ring: PERF_RECORD_SWITCH (header + {pid, tid} + time) and PERF_RECORD_LOST, from
 * the switch events of one CPU only (SWITCH_SAMPLE_TYPE). */
typedef struct switch_ctx {
    perf_src *s;
    int32_t cpu;
} switch_ctx;

static void add_switch(perf_src *s, tid_info *ti, uint32_t tid, uint64_t time, uint16_t misc, int32_t cpu);

static void on_switch_record(const struct perf_event_header *h, void *ctx) {
    const switch_ctx *x = ctx;
    perf_src *s = x->s;
    if (h->size < sizeof *h + 16) return;
    const uint64_t *end = (const uint64_t *)((const uint8_t *)h + h->size);
    uint32_t tid = (uint32_t)(end[-2] >> 32);
    uint64_t time = end[-1];
    if (h->type == PERF_RECORD_LOST) {
        on_lost(s, h, time, x->cpu);
        return;
    }
    if (h->type != PERF_RECORD_SWITCH) return;
    if (__builtin_expect(time >= s->void_from && time < s->void_to, 0)) { /* a failed reopen's */
        s->n.filtered++;
        return;
    }
    tid_info *ti = (tid_info *)find_tid(s, tid);
    if (!ti) {
        s->n.filtered++;
        return;
    }
    add_switch(s, ti, tid, time, h->misc, x->cpu);
}

/* A thread's ring (thread_cpu_switch_ring.h): every thread with one records (it parked, or the
 * collector opened it for a registered thread); one that registered after this drain's list
 * is merged as a new thread's records are. */
static void on_ring_switch(void *ctx, uint32_t tid, uint64_t time, uint16_t misc) {
    perf_src *s = ctx;
    add_switch(s, (tid_info *)find_tid(s, tid), tid, time, misc, -1);
}

/* Records of a thread's ring the kernel wrote over before the collector read them: counted as
 * lost (stats' drops), and the thread's next switch-in, whose switch-out may be among them, is
 * not paired across the gap. */
static void on_ring_lost(void *ctx, uint32_t tid, uint64_t count, uint64_t until_ns) {
    perf_src *s = ctx;
    tid_info *ti = (tid_info *)find_tid(s, tid);
    if (ti) ti->window = s->window - 1;
    d9_src_event e = {.ts_ns = until_ns ? until_ns : mono_now(), .kind = D9_SRC_LOST, .tid = tid, .cpu = -1};
    e.lost.count = count;
    e.lost.reason = "thread_switch_ring";
    if (d9_src_batch_add(s->out, &e)) s->n.lost += count;
}

/* One switch record of thread `tid` (`ti` its registry entry, NULL for a thread newer than the
 * list) as a SchedSwitchEvent; cpu -1: not known (a thread's ring carries none). */
static void add_switch(perf_src *s, tid_info *ti, uint32_t tid, uint64_t time, uint16_t misc, int32_t cpu) {
    bool out = (misc & PERF_RECORD_MISC_SWITCH_OUT) != 0;
    if (ti && ti->window != s->window) {
        /* the thread's first record since the records were paused: a switch-in's switch-out
         * fell in the gap, and readers would pair it with the switch-out before the gap */
        ti->window = s->window;
        if (!out) {
            s->n.orphans++;
            return;
        }
    }
    d9_src_event e = {.ts_ns = time, .kind = D9_SRC_SWITCH, .tid = tid, .cpu = cpu};
    e.sw.out = out;
    e.sw.preempted = out && (misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) != 0;
    if (d9_src_batch_add(s->out, &e)) s->n.switch_records++;
}

static int kind_of_fd(const perf_src *s, size_t i) { return s->fd_kinds[i]; }

static void set_stacks(perf_src *s, bool on) {
    /* on the events opened at start; the kernel applies it to their inherited copies too. Not
     * again when closing the switch events disabled them already (kept open: stacks_kept). */
    for (size_t i = 0; i < s->nfds && on != s->stacks_enabled; i++)
        if (kind_of_fd(s, i) == K_STACKS) ioctl(s->fds[i], on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0);
    s->stacks_on = s->stacks_enabled = on;
}

/* Context-switch stacks cost microseconds of kernel time per switch (a kernel unwind and a
 * copy of the user stack), so they are paced with a token bucket: stacks_per_sec tokens a
 * second (one N-th of it at the governor's sampled levels), one second's worth kept, one spent
 * per stack read (of any thread: the kernel took it either way). The event runs while tokens
 * are left and pauses (on every thread, between drains) until the debt is repaid. A process
 * that blocks less often than the budget, or in bursts shorter than a second's worth, gets
 * every stack; a busy one gets every stack during part of the time rather than none, at the
 * budget on average. A state lasts at least D9_STACKS_WINDOW_NS: each change is an ioctl on
 * every event opened at start. The debt is bounded by D9_STACKS_MAX_PAUSE_NS of the full
 * level's rate, so a sampled level's burst in a window (hundreds of switches at tens of
 * thousands a second) is repaid in full, whatever the number of windows it takes. */
static void refill_stacks(perf_src *s, uint64_t now) {
    double rate = s->stacks_per_sec;
    if (s->governed && s->gov.level == D9_GOV_LEVEL_FULL && s->gov_in.budget_ns_per_s > 0)
        rate = d9_gov_full_stacks_rate(&s->gov_in); /* what the budget leaves after the records */
    else if (s->governed)
        rate = d9_gov_stacks_rate(s->stacks_per_sec, s->gov.level);
    double floor = -(double)s->stacks_per_sec * (D9_STACKS_MAX_PAUSE_NS / 1e9);
    s->tokens += (double)(now - s->last_pace) * rate / 1e9;
    if (s->tokens > rate) s->tokens = rate;
    s->tokens -= (double)s->stacks_seen;
    if (s->tokens < floor) s->tokens = floor;
    s->stacks_seen = 0;
    s->last_pace = now;
}

static void pace_stacks(perf_src *s, uint64_t now) {
    if (!s->want[K_STACKS]) return;
    refill_stacks(s, now);
    if (s->stacks_window_off) { /* the governor's window opens: stacks with the records */
        s->stacks_window_off = false;
        if (s->tokens > 0 && !s->stacks_on) set_stacks(s, true); /* on already: reopened enabled */
        s->changed_at = now;
        return;
    }
    if (now - s->changed_at < D9_STACKS_WINDOW_NS) return;
    if (s->stacks_on && s->tokens <= 0) {
        set_stacks(s, false);
        s->changed_at = now;
    } else if (!s->stacks_on && s->tokens > 0) {
        set_stacks(s, true);
        s->paused_ns += now - s->changed_at;
        s->changed_at = now;
    }
}

/* Stacks are taken while the switch records are (a stack is read against the switch records
 * around it), paced within that time: the bucket keeps filling, at the level's rate, while a
 * sampled level's window is closed, so the stacks fall in the windows. */
static void apply_stacks(perf_src *s, uint64_t now) {
    if (!s->want[K_STACKS]) return;
    if (s->switches_on || !s->want[K_SWITCH]) {
        pace_stacks(s, now);
        return;
    }
    bool was_on = s->stacks_on;
    if (s->stacks_on) set_stacks(s, false);
    if (!s->stacks_window_off) {
        if (!was_on) s->paused_ns += now - s->changed_at; /* a pacing pause ends here */
        s->stacks_window_off = true;
    }
    s->changed_at = now;
    refill_stacks(s, now); /* the bucket still refills while the window is closed */
}

static void note_pacing(perf_src *s, uint64_t now) {
    uint64_t paused = s->paused_ns + (s->stacks_on || s->stacks_window_off ? 0 : now - s->changed_at);
    if (!s->collector || !paused || now - s->last_note < 1000000000u) return;
    s->last_note = now;
    char detail[256];
    snprintf(detail, sizeof detail,
             "perf context-switch samples with kernel and user frames, workers only; every switch up to %u "
             "stacks/s on average (bursts of %u; one N-th of it while the cost governor samples 1 in N), "
             "paused above: %.0f%% of the time since start",
             s->stacks_per_sec, s->stacks_per_sec, 100.0 * (double)paused / (double)(now - s->started));
    /* the key alone: d9_collector_note_source would add the source to `sources` again at each note */
    d9_run_metadata_set(d9_collector_metadata(s->collector), "source.switch_stacks", "active: %s", detail);
}

/* ---------------------------------------------------------------- cost governor */

/* Context switches of every thread of the process (the kernel writes switch records for all
 * of them: the events are inherited), whatever the governor's level. */
static uint64_t process_switches(void) {
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
    return (uint64_t)ru.ru_nvcsw + (uint64_t)ru.ru_nivcsw;
}

static void set_switches(perf_src *s, bool on) {
    switch_change_begin();
    for (size_t i = 0; i < s->nfds; i++)
        if (kind_of_fd(s, i) == K_SWITCH) ioctl(s->fds[i], on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0);
    if (on) {
        s->window++;
        atomic_fetch_add_explicit(&g_switch_enables, 1, memory_order_relaxed);
    }
    s->switches_on = on;
    switch_change_end(on ? D9_PERF_SWITCH_ENABLED : D9_PERF_SWITCH_OPEN);
}

static uint64_t ppm(double ns_per_s) { return ns_per_s > 0 ? (uint64_t)(ns_per_s / 1e3 + 0.5) : 0; }

static void add_coverage(perf_src *s, d9_src_batch *out, uint64_t now, const char *previous) {
    d9_src_event e = {.ts_ns = now, .kind = D9_SRC_COVERAGE, .tid = 0, .cpu = -1};
    e.coverage.source = "off_cpu";
    e.coverage.mode = d9_gov_mode_name(s->gov.level);
    e.coverage.previous = previous;
    e.coverage.previous_since_ns = s->gov_since;
    e.coverage.one_in = d9_gov_one_in(s->gov.level);
    e.coverage.rate_per_s = (uint64_t)(s->gov_in.switches_per_s + 0.5);
    e.coverage.cost_ppm = ppm(d9_gov_estimate(&s->gov_in, s->gov.level));
    e.coverage.budget_ppm = ppm(s->budget_ns_per_s);
    d9_src_batch_add(out, &e);
}

/* ---------------------------------------------------------------- closing the switch events */

static void drain_rings(perf_src *s, d9_src_batch *out);

/* The events the paused level closes: the switch records' and the context-switch stacks'. */
static bool closable(int kind) { return kind == K_SWITCH || kind == K_STACKS; }

static int kind_of_fd_number(const perf_src *s, int fd) {
    for (size_t i = 0; i < s->nfds; i++)
        if (s->fds[i] == fd) return s->fd_kinds[i];
    return -1;
}

/* Closes (and forgets) the events of the kinds `which` picks, unmapping the rings one of them
 * leads. Returns how many it closed. */
static size_t close_events(perf_src *s, bool (*which)(int kind)) {
    for (int c = 0; c < s->ncpu; c++)
        for (int r = 0; r < 2; r++) {
            int *lead = &s->leader[2 * c + r];
            if (*lead < 0 || !which(kind_of_fd_number(s, *lead))) continue;
            d9_perf_ring_unmap(r ? &s->swrings[c] : &s->rings[c]);
            *lead = -1;
        }
    size_t kept = 0, closed = 0;
    for (size_t i = 0; i < s->nfds; i++) {
        if (which(s->fd_kinds[i])) {
            d9_fd_close_if_ours(s->fds[i], s->fd_ids[i]);
            closed++;
            continue;
        }
        s->fds[kept] = s->fds[i];
        s->fd_kinds[kept] = s->fd_kinds[i];
        s->fd_ids[kept] = s->fd_ids[i];
        kept++;
    }
    s->nfds = kept;
    kept = 0;
    for (size_t i = 0; i < s->nids; i++)
        if (!which(s->ids[i].kind)) s->ids[kept++] = s->ids[i];
    s->nids = kept;
    return closed;
}

static bool is_switch(int kind) { return kind == K_SWITCH; }

/* The stacks events stay when they could not be opened again (stacks_kept). */
static void close_closable(perf_src *s) { close_events(s, s->stacks_kept ? is_switch : closable); }

static bool is_ring_host(int kind) { return kind == K_HOST; }

/* Paused, the rings' hosts go too: a per-thread event, even never enabled, keeps the kernel's
 * switch hooks on for every thread, and they run over the empty perf contexts the closed
 * events left on the threads (costs.closed_context; ~0.2 us a switch here). The next reopen
 * maps the rings again. Their records were read when the events closed. */
static void close_ring_hosts(perf_src *s) {
    size_t closed = close_events(s, is_ring_host);
    if (closed) atomic_fetch_sub_explicit(&g_ring_hosts, (int)closed, memory_order_relaxed);
}

static void say_once(perf_src *s, bool *said, const char *key, const char *msg);

/* Could the stacks events be opened again now? A process started as root that drops its
 * privileges (memcached -u, nginx's workers) keeps the events it opened, but at
 * perf_event_paranoid >= 2 a new one with kernel frames needs CAP_PERFMON (EACCES). So before
 * each close, one event of the same kind is opened on this thread (the collector's), disabled,
 * and closed at once: two system calls per close, while the answer is yes. It asks the kernel
 * the same question the reopen would (the capability, the sysctl, the fd limit, an LSM's
 * policy), where comparing credentials with those at start would miss all but the first. 0, or
 * why not (-errno). */
static int stacks_reopenable(const perf_src *s) {
    struct perf_event_attr a = s->attr[K_STACKS];
    a.disabled = 1;
    a.inherit = 0;
    a.inherit_thread = 0;
    int fd = d9_perf_open(&a, 0, -1);
    if (fd < 0) return fd;
    close(fd);
    return 0;
}

/* The stacks could not be opened again: from now on they stay open (disabled while the switch
 * events are closed, enabled by the windows and the pacing as before), said once. Their perf
 * context then stays on the threads, which the governor prices (paused_keeps_context). */
static void keep_stacks(perf_src *s, int err) {
    s->stacks_kept = true;
    char msg[256];
    snprintf(msg, sizeof msg,
             "context-switch stacks kept open (disabled between windows and while paused): reopening them "
             "would be refused (%s)%s",
             strerror(-err), err == -EACCES || err == -EPERM ? ", as after a privilege drop" : "");
    say_once(s, &s->stacks_fail_noted, "governor.reopen_stacks", msg);
}

/* The switch and stacks events are closed at the paused level, and between a sampled level's
 * windows where that is cheaper than keeping them open: even disabled, an open event keeps a
 * perf context on every thread, which the kernel schedules out and in at each of their
 * switches (~0.3 us on a quiet host, ~1.2 us on a loaded one: a floor that alone was over the
 * budget at 20 k switches/s). What they wrote until they were disabled is read first, so
 * nothing recorded is lost; the CPU profile's events and rings stay, and the stacks' events
 * when they could not be opened again (stacks_reopenable, asked first). Returns the instant from
 * which nothing is recorded (the CoverageEvent's time when the level changes). */
static uint64_t close_switch_events(perf_src *s, d9_src_batch *out) {
    uint64_t cpu0 = thread_cpu_ns();
    switch_change_begin();
    if (s->want[K_STACKS] && !s->stacks_kept && !s->stacks_missing) {
        int err = stacks_reopenable(s);
        if (err != 0) keep_stacks(s, err);
    }
    for (size_t i = 0; i < s->nfds; i++)
        if (closable(s->fd_kinds[i])) ioctl(s->fds[i], PERF_EVENT_IOC_DISABLE, 0);
    s->stacks_enabled = false; /* disabled, and closed unless kept */
    uint64_t at = mono_now(), cpu1 = thread_cpu_ns();
    drain_rings(s, out); /* the records' cost, counted as theirs: not in close_cpu_ns */
    uint64_t cpu2 = thread_cpu_ns();
    close_closable(s);
    s->switches_on = false; /* the stacks' state is left to apply_stacks, which sees the records off */
    s->switch_events_closed = true;
    s->n.closes++;
    switch_change_end(D9_PERF_SWITCH_CLOSED);
    s->close_cpu_ns = (cpu1 - cpu0) + (thread_cpu_ns() - cpu2);
    return at;
}

/* A ring closed with its events is mapped again on a host of its own: a dummy event of the
 * collector's thread on that CPU, never enabled, which later closes keep, so a reopen does not
 * allocate, zero and map the rings again and a close does not free them (about half of a close
 * and reopen's CPU on the reference VM). The reopened events write into it through
 * PERF_EVENT_IOC_SET_OUTPUT. While it is open, the kernel's switch hooks run at every
 * thread's switches, over the empty contexts the closed events left (costs.closed_context),
 * so the paused level closes the hosts too (close_ring_hosts). Elsewhere (the last drain, in
 * d9_stop's thread) or if it cannot be opened, the first event opened leads the ring, as at
 * start. */
static void host_ring(perf_src *s, int c, bool sw) {
    int *lead = &s->leader[2 * c + sw];
    if (*lead >= 0 || !s->want[sw ? K_SWITCH : K_STACKS] || gettid() != s->collector_tid) return;
    struct perf_event_attr a;
    d9_perf_attr_init(&a, PERF_COUNT_SW_DUMMY, SWITCH_SAMPLE_TYPE);
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    int fd = d9_perf_open(&a, 0, c);
    if (fd >= 0 &&
        attach_event(s, fd, K_HOST, lead, sw ? &s->swrings[c] : &s->rings[c], sw ? RING_PAGES_SWITCHES : RING_PAGES_STACKS) == 0)
        atomic_fetch_add_explicit(&g_ring_hosts, 1, memory_order_relaxed);
}

/* A degradation the governor did not choose, said once: on stderr and in the metadata (`key`,
 * in the segments written from now on). */
static void say_once(perf_src *s, bool *said, const char *key, const char *msg) {
    if (*said) return;
    *said = true;
    fprintf(stderr, "dial9: %s\n", msg);
    if (s->collector) d9_run_metadata_set(d9_collector_metadata(s->collector), key, "%s", msg);
}

/* Opens the switch and stacks events again on every thread that exists now (`inherit` gave
 * events only to threads created while they were open), writing into the rings' hosts
 * (host_ring). `on` (a window opens now): the switch events are opened enabled, and the stacks'
 * too when the pacing has tokens, so a window's start costs no ioctl per event (an enable on
 * each of threads x CPUs events, after the open that could have said so); else disabled, for
 * the windows and the pacing to enable. A thread created between the listing and the opening
 * on its creator has none (as at start). 0, or the first error of a switch event that could
 * not be opened on a live thread (EMFILE, EACCES after a privilege drop...): then nothing stays
 * open, since a window missing threads would not be complete. Kept stacks (stacks_kept) are not
 * reopened: they are open. Stacks that cannot be opened (closed before a drop, the probe then
 * said yes) leave the records without them (said once). */
static int reopen_switch_events(perf_src *s, bool on, uint64_t now) {
    uint64_t cpu0 = thread_cpu_ns();
    switch_change_begin();
    bool stacks_on = false;
    uint64_t attempt = mono_now();
    if (on) {
        s->window++; /* before the first record an enabled event writes (set_switches' order) */
        if (s->want[K_STACKS]) {
            refill_stacks(s, now);
            stacks_on = s->tokens > 0;
        }
    }
    for (int c = 0; c < s->ncpu; c++) {
        host_ring(s, c, true);
        host_ring(s, c, false);
    }
    size_t ntids = 0;
    int err = 0, stacks_err = 0;
    pid_t *tids = list_threads(&ntids, &err); /* unreadable (EMFILE...): a window would miss threads */
    if (!tids && err == 0) err = -ENOMEM;
    d9_perf_report rep; /* open_event's fallbacks were all taken at start */
    memset(&rep, 0, sizeof rep);
    int kinds = 0;
    for (int k = 0; k < K_COUNT; k++) kinds += s->want[k];
    size_t max_threads = MAX_EVENT_FDS / ((size_t)s->ncpu * (size_t)(kinds ? kinds : 1));
    if (max_threads == 0) max_threads = 1;
    bool opened = false, stacks_opened = false;
    for (int c = 0; c < s->ncpu && err == 0; c++) {
        for (int k = K_SWITCH; k <= K_STACKS && err == 0; k++) {
            if (!s->want[k] || (k == K_STACKS && s->stacks_kept)) continue;
            bool sw = k == K_SWITCH;
            int *lead = &s->leader[2 * c + sw];
            d9_perf_ring *ring = sw ? &s->swrings[c] : &s->rings[c];
            for (size_t t = 0; t < ntids && t < max_threads; t++) {
                /* the collector (this thread, listed first) is never recorded and creates no
                 * thread that would inherit its events: one open in a few per CPU and kind saved */
                if (t == 0 && tids[0] == s->collector_tid) continue;
                int fd = open_event(s, k, tids[t], c, sw ? on : stacks_on, &rep);
                if (fd == -ENODEV) break; /* CPU offline */
                if (fd == -ESRCH) continue; /* the thread exited meanwhile */
                int rc = fd < 0 ? fd : attach_event(s, fd, k, lead, ring, sw ? RING_PAGES_SWITCHES : RING_PAGES_STACKS);
                if (rc != 0) {
                    if (sw) err = rc;
                    else if (!stacks_err) stacks_err = rc;
                    break;
                }
                opened |= sw;
                stacks_opened |= !sw;
            }
        }
    }
    free(tids);
    qsort(s->ids, s->nids, sizeof *s->ids, cmp_id);
    if (err == 0 && !opened) err = -ENOENT; /* no thread at all: cannot happen (this one is listed) */
    if (err != 0) {
        close_closable(s);
        if (on) { /* what the events opened enabled wrote falls in the paused span reopen_failed begins */
            s->void_from = attempt;
            s->void_to = mono_now();
        }
        switch_change_end(D9_PERF_SWITCH_CLOSED);
        return err;
    }
    s->stacks_missing = s->want[K_STACKS] && !s->stacks_kept && !stacks_opened;
    if (s->stacks_missing) {
        char msg[160];
        snprintf(msg, sizeof msg, "context-switch stacks not reopened (%s): off-CPU records go on without them",
                 strerror(stacks_err ? -stacks_err : ENOENT));
        say_once(s, &s->stacks_fail_noted, "governor.reopen_stacks", msg);
    }
    s->switches_on = on;
    s->stacks_on = s->stacks_enabled = stacks_on && stacks_opened; /* kept: the pacing enables them */
    s->switch_events_closed = false;
    s->n.reopens++;
    s->n.reopen_cpu_ns = thread_cpu_ns() - cpu0;
    /* the governor's figure: close + reopen, smoothed over the last few (a quarter each) */
    s->reopen_ns += ((double)(s->close_cpu_ns + s->n.reopen_cpu_ns) - s->reopen_ns) / 4;
    s->reopen_backoff_ns = 0;
    atomic_store_explicit(&g_reopen_cpu_ns, s->n.reopen_cpu_ns, memory_order_relaxed);
    atomic_store_explicit(&g_reopen_cost_ns, (uint64_t)s->reopen_ns, memory_order_relaxed);
    switch_change_end(on ? D9_PERF_SWITCH_ENABLED : D9_PERF_SWITCH_OPEN);
    return 0;
}

/* A level change in the trace: its CoverageEvent, stamped `at`. */
static void note_level(perf_src *s, d9_src_batch *out, int before, uint64_t at) {
    add_coverage(s, out, at, d9_gov_mode_name(before));
    s->gov_since = at;
    s->n.coverage_changes++;
}

/* A reopen failed: paused (a CoverageEvent says so), said once (governor.reopen), tried again
 * after REOPEN_RETRY_NS, twice as long after each failure up to REOPEN_RETRY_MAX_NS. */
static void reopen_failed(perf_src *s, d9_src_batch *out, uint64_t now, int err) {
    s->n.reopen_failures++;
    s->reopen_backoff_ns = s->reopen_backoff_ns ? s->reopen_backoff_ns * 2 : REOPEN_RETRY_NS;
    if (s->reopen_backoff_ns > REOPEN_RETRY_MAX_NS) s->reopen_backoff_ns = REOPEN_RETRY_MAX_NS;
    s->reopen_hold_until = now + s->reopen_backoff_ns;
    char msg[256];
    snprintf(msg, sizeof msg,
             "off-CPU records paused: reopening their perf events failed (%s); retried after %llu s, "
             "then less often (every %llu s at most)",
             strerror(-err), REOPEN_RETRY_NS / 1000000000ull, REOPEN_RETRY_MAX_NS / 1000000000ull);
    say_once(s, &s->reopen_fail_noted, "governor.reopen", msg);
    int before = s->gov.level;
    s->gov.level = D9_GOV_LEVEL_PAUSED;
    s->gov.calm_ticks = 0;
    s->close_between = false;
    if (before != D9_GOV_LEVEL_PAUSED) note_level(s, out, before, now);
    atomic_store_explicit(&g_gov_level, s->gov.level, memory_order_relaxed); /* before the count says so */
    atomic_store_explicit(&g_reopens_failed, s->n.reopen_failures, memory_order_release);
}

/* Every drain: the events open or closed, enabled or not, as the level and its window want. */
static void apply_level(perf_src *s, d9_src_batch *out, uint64_t now) {
    uint32_t n = d9_gov_one_in(s->gov.level);
    bool on = n == 1 || d9_gov_window_on(s->gov.level, now);
    bool open = on || (n == 0 ? !s->close_when_paused : !s->close_between);
    if (!open && !s->switch_events_closed) close_switch_events(s, out);
    if (open && s->switch_events_closed) {
        int err = reopen_switch_events(s, on, now);
        if (err != 0) {
            reopen_failed(s, out, now, err);
            return;
        }
    }
    if (!s->switch_events_closed && on != s->switches_on) set_switches(s, on);
    /* kept stacks write into a host's ring, and keep the switch hooks on anyway */
    if (n == 0 && s->switch_events_closed && !s->stacks_kept) close_ring_hosts(s);
}

/* The time each sampled level's gaps between windows had the events closed, or open and
 * disabled, in the metadata (governor.between_windows; written at a segment's start and, changed,
 * within it at most every 10 s and at the run's end): what the
 * kernel paid for the switches in them (bench/e2e/counted_cost.py prices them by it). Counted
 * for the level and state since the last drain, before the level is applied again. */
static void note_gaps(perf_src *s, uint64_t now) {
    if (s->gaps_at && d9_gov_one_in(s->gov.level) > 1 && !s->switches_on)
        s->gaps_ns[s->gov.level][s->switch_events_closed ? 0 : 1] += now - s->gaps_at;
    s->gaps_at = now;
    if (!s->collector || now - s->gaps_note < 1000000000u) return;
    char text[384]; /* five levels, ~70 bytes each */
    size_t len = 0;
    for (int l = D9_GOV_LEVEL_SAMPLED_FIRST; l <= D9_GOV_LEVEL_SAMPLED_LAST && len < sizeof text; l++)
        if (s->gaps_ns[l][0] + s->gaps_ns[l][1])
            len += (size_t)snprintf(text + len, sizeof text - len, "%s1 in %u: events closed %.3f s, open (disabled) %.3f s",
                                    len ? "; " : "", d9_gov_one_in(l), (double)s->gaps_ns[l][0] / 1e9,
                                    (double)s->gaps_ns[l][1] / 1e9);
    if (!len) return;
    s->gaps_note = now;
    d9_run_metadata_set(d9_collector_metadata(s->collector), "governor.between_windows", "%s", text);
}

/* Every D9_GOV_PERIOD_NS: measure, decide, write the change; every drain: apply the level. */
static void govern(perf_src *s, d9_src_batch *out, uint64_t now) {
    note_gaps(s, now);
    if (now - s->gov_last >= D9_GOV_PERIOD_NS) {
        double secs = (double)(now - s->gov_last) / 1e9;
        uint64_t sw = process_switches();
        s->gov_in.budget_ns_per_s = s->budget_ns_per_s;
        s->gov_in.switches_per_s = sw >= s->gov_switches ? (double)(sw - s->gov_switches) / secs : 0;
        s->gov_in.stacks_cap_per_s = s->want[K_STACKS] ? s->stacks_per_sec : 0;
        /* the share of the stacks taken that were unwound (inside polls, or all of them as before);
         * none taken in the period: the last share stays */
        uint64_t unwound = s->stack_unwind == D9_PERF_UNWIND_IN_POLLS ? d9_perf_stacks_unwound() : s->n.stack_samples;
        if (s->stack_unwind == D9_PERF_UNWIND_NONE) unwound = s->gov_unwound;
        if (s->stacks_total > s->gov_stacks)
            s->gov_in.stacks_unwound_share = (double)(unwound - s->gov_unwound) / (double)(s->stacks_total - s->gov_stacks);
        s->gov_stacks = s->stacks_total;
        s->gov_unwound = unwound;
        s->gov_in.cpu_samples_per_s = (double)(s->n.cpu_samples - s->gov_cpu_samples) / secs;
        uint64_t reads = __atomic_load_n(&d9_schedstat_reads, __ATOMIC_RELAXED);
        s->gov_in.schedstat_per_s = reads >= s->gov_schedstat ? (double)(reads - s->gov_schedstat) / secs : 0;
        /* closed, the switch events leave no perf context unless the CPU profile's events or the
         * kept stacks' do */
        s->gov_in.paused_keeps_context = !s->close_when_paused || s->want[K_CPU] || s->stacks_kept;
        s->gov_in.closing_allowed = s->close_when_paused && s->window_closing != D9_PERF_CLOSE_NEVER;
        s->gov_in.thin_stacks_at_full = atomic_load_explicit(&g_thin_stacks, memory_order_relaxed);
        s->gov_in.reopen_ns = s->reopen_ns;
        s->gov_in.costs = d9_gov_costs_measured;
        s->gov_switches = sw;
        s->gov_cpu_samples = s->n.cpu_samples;
        s->gov_schedstat = reads;
        s->gov_last = now;
        int before = s->gov.level;
        d9_gov_step(&s->gov, &s->gov_in);
        int held = atomic_load_explicit(&g_held_level, memory_order_relaxed);
        if (held >= 0) s->gov.level = held;
        if (before == D9_GOV_LEVEL_PAUSED && s->gov.level != before && now < s->reopen_hold_until) {
            s->gov.level = D9_GOV_LEVEL_PAUSED; /* a failed reopen's wait */
            s->gov.calm_ticks = 0;
        }
        s->close_between = s->window_closing == D9_PERF_CLOSE_ALWAYS
                               ? s->close_when_paused && d9_gov_one_in(s->gov.level) > 1
                               : d9_gov_closes_between(&s->gov_in, s->gov.level);
        if (s->gov.level != before) {
            uint64_t at = now; /* from paused: the events open at the level's first window, later */
            if (s->gov.level == D9_GOV_LEVEL_PAUSED && s->close_when_paused && !s->switch_events_closed)
                at = close_switch_events(s, out);
            note_level(s, out, before, at);
        }
    }
    apply_level(s, out, now);
    s->n.level = s->gov.level;
    atomic_store_explicit(&g_gov_level, s->gov.level, memory_order_relaxed);
    atomic_store_explicit(&g_gov_changes, s->n.coverage_changes, memory_order_relaxed);
    atomic_store_explicit(&g_closes, s->n.closes, memory_order_relaxed);
    atomic_store_explicit(&g_reopens, s->n.reopens, memory_order_relaxed);
}

void d9_perf_governor_now(int *level, uint64_t *changes) {
    *level = atomic_load_explicit(&g_gov_level, memory_order_relaxed);
    *changes = atomic_load_explicit(&g_gov_changes, memory_order_relaxed);
}

uint64_t d9_perf_last_reopen_cpu_ns(void) { return atomic_load_explicit(&g_reopen_cpu_ns, memory_order_relaxed); }

uint64_t d9_perf_reopen_cost_ns(void) { return atomic_load_explicit(&g_reopen_cost_ns, memory_order_relaxed); }

int d9_perf_ring_hosts(void) { return atomic_load_explicit(&g_ring_hosts, memory_order_relaxed); }

uint64_t d9_perf_reopen_failures(void) { return atomic_load_explicit(&g_reopens_failed, memory_order_relaxed); }

void d9_perf_set_window_closing(d9_perf_window_closing policy) {
    atomic_store_explicit(&g_window_closing, (int)policy, memory_order_relaxed);
}

void d9_perf_hold_governor_level(int level) { atomic_store_explicit(&g_held_level, level, memory_order_relaxed); }

int d9_perf_switch_state(uint64_t *seq) {
    *seq = atomic_load(&g_switch_seq);
    return atomic_load(&g_switch_state);
}

void d9_perf_switch_events_now(uint64_t *closes, uint64_t *reopens, uint64_t *switch_records) {
    *closes = atomic_load_explicit(&g_closes, memory_order_relaxed);
    *reopens = atomic_load_explicit(&g_reopens, memory_order_relaxed);
    *switch_records = atomic_load_explicit(&g_switch_records, memory_order_relaxed);
}

uint64_t d9_perf_switch_enables(void) { return atomic_load_explicit(&g_switch_enables, memory_order_relaxed); }

void d9_perf_keep_events_open_when_paused(bool keep) {
    atomic_store_explicit(&g_keep_open_when_paused, keep, memory_order_relaxed);
}

void d9_perf_thin_stacks_at_full(bool thin) { atomic_store_explicit(&g_thin_stacks, thin, memory_order_relaxed); }

void d9_perf_set_stack_unwind(d9_perf_stack_unwind mode) {
    atomic_store_explicit(&g_stack_unwind, (int)mode, memory_order_relaxed);
}

uint64_t d9_perf_stacks_unwound(void) {
    return atomic_load_explicit(&g_deferred_unwound, memory_order_relaxed) -
           atomic_load_explicit(&g_unwound_at_open, memory_order_relaxed);
}

void d9_perf_samples_read(uint64_t *stacks, uint64_t *cpu_samples) {
    *stacks = atomic_load_explicit(&g_stacks_taken, memory_order_relaxed);
    *cpu_samples = atomic_load_explicit(&g_cpu_samples_read, memory_order_relaxed);
}

static void source_segment_start(d9_source *src, d9_src_batch *out) {
    perf_src *s = src->ctx;
    if (!s->governed) return;
    const char *mode = d9_gov_mode_name(s->gov.level);
    add_coverage(s, out, mono_now(), mode); /* the mode in force, for a reader of this segment alone */
}

/* The recorded threads' rings: an event opened for each that has none yet (its records from
 * then on), then every ring read. The metadata says how many recorded threads have none (past
 * D9_TCC_MAX_RING_THREADS, or refused) when that changes. */
static void drain_thread_rings(perf_src *s) {
    uint32_t *tids = realloc(s->ring_tids, (s->ntids ? s->ntids : 1) * sizeof *tids);
    if (tids) {
        s->ring_tids = tids;
        for (size_t i = 0; i < s->ntids; i++) tids[i] = s->tids[i].tid;
        size_t uncovered = d9_tcc_rings_cover(tids, s->ntids);
        if (uncovered != s->uncovered && s->collector)
            d9_run_metadata_set(d9_collector_metadata(s->collector), "off_cpu_uncovered_threads",
                                "%zu recorded threads have no switch records (past %d threads with a ring, or "
                                "refused)",
                                uncovered, D9_TCC_MAX_RING_THREADS);
        s->uncovered = uncovered;
    }
    d9_tcc_rings_drain(on_ring_switch, on_ring_lost, s);
}

/* The records read now are those written before the registry is read: a thread that
 * registered or became a worker before its record was written is in it as such. Later
 * records wait for the next drain. */
static void drain_rings(perf_src *s, d9_src_batch *out) {
    for (int c = 0; c < s->ncpu; c++) {
        d9_perf_ring_mark(&s->swrings[c]);
        d9_perf_ring_mark(&s->rings[c]);
    }
    refresh_tids(s);
    s->out = out;
    if (s->ring_switches) drain_thread_rings(s);
    s->tables = NULL;
    s->tables_tried = !UNWIND_SAMPLES; /* acquired by the first sample that needs them */
    for (int c = 0; c < s->ncpu; c++) {
        switch_ctx x = {s, c};
        d9_perf_ring_drain_marked(&s->swrings[c], on_switch_record, &x);
        d9_perf_ring_drain_marked(&s->rings[c], on_record, s);
    }
    if (s->tables) d9_unwind_tables_release();
    s->tables = NULL;
    s->out = NULL;
}

static void source_collect(d9_source *src, d9_src_batch *out) {
    perf_src *s = src->ctx;
    if (!s->collector_tid) s->collector_tid = gettid();
    drain_rings(s, out);
    uint64_t now = mono_now();
    if (s->governed) govern(s, out, now);
    apply_stacks(s, now);
    atomic_store_explicit(&g_stacks_taken, s->stacks_total, memory_order_relaxed);
    atomic_store_explicit(&g_cpu_samples_read, s->n.cpu_samples, memory_order_relaxed);
    atomic_store_explicit(&g_switch_records, s->n.switch_records, memory_order_relaxed);
    note_pacing(s, now);
}

static void source_close(d9_source *src) {
    perf_src *s = src->ctx;
    for (size_t i = 0; i < s->nfds; i++)
        if (d9_fd_still_ours(s->fds[i], s->fd_ids[i])) ioctl(s->fds[i], PERF_EVENT_IOC_DISABLE, 0);
    for (int c = 0; c < s->ncpu; c++) {
        if (s->rings) d9_perf_ring_unmap(&s->rings[c]);
        if (s->swrings) d9_perf_ring_unmap(&s->swrings[c]);
    }
    for (size_t i = 0; i < s->nfds; i++) d9_fd_close_if_ours(s->fds[i], s->fd_ids[i]);
    free(s->fds);
    free(s->fd_ids);
    free(s->fd_kinds);
    free(s->ids);
    free(s->leader);
    free(s->tids);
    free(s->ring_tids);
    if (s->ring_switches) d9_tcc_rings_unconsume();
    free(s->rings);
    free(s->swrings);
    free(s);
}

void d9_perf_source_counters(d9_source *src, d9_perf_counters *out) {
    const perf_src *s = src->ctx;
    *out = s->n;
}

/* ---------------------------------------------------------------- probe */

typedef struct probe_seen {
    int samples, with_kernel;
} probe_seen;

static void probe_record(const struct perf_event_header *h, void *ctx) {
    probe_seen *p = ctx;
    sample_view v;
    if (h->type != PERF_RECORD_SAMPLE || !parse_sample(h, &v)) return;
    p->samples++;
    for (uint64_t i = 0; i < v.nr; i++)
        if (v.ips[i] >= 0xffff800000000000ull && v.ips[i] < (uint64_t)PERF_CONTEXT_MAX) {
            p->with_kernel++;
            break;
        }
}

int d9_perf_probe_switch_stacks(bool (*cancelled)(void)) {
    if (cancelled && cancelled()) return -ECANCELED;
    struct perf_event_attr a;
    d9_perf_attr_init(&a, PERF_COUNT_SW_CONTEXT_SWITCHES, SAMPLE_TYPE_FP);
    a.sample_period = 1;
    a.exclude_hv = 1;
    int fd = d9_perf_open(&a, 0, -1);
    if (fd < 0) return fd;
    d9_perf_ring ring;
    int rc = d9_perf_ring_map(&ring, fd, 1);
    if (rc != 0) {
        close(fd);
        return rc;
    }
    ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
    bool given_up = false;
    for (int i = 0; i < 3 && !given_up; i++) { /* each sleep is a voluntary switch */
        given_up = cancelled && cancelled();
        struct timespec nap = {0, 50 * 1000};
        if (!given_up) nanosleep(&nap, NULL);
    }
    ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
    probe_seen seen = {0, 0};
    if (!given_up) d9_perf_ring_drain(&ring, probe_record, &seen);
    d9_perf_ring_unmap(&ring);
    close(fd);
    return given_up ? -ECANCELED : seen.with_kernel > 0 ? 0 : 1;
}
