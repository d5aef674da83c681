/* d9_bench_unwind: what unwinding through frameless libraries costs (docs/kernel-sources.md,
 * "Unwinding"):
 *  1. the kernel's part: CPU per context switch of a switch-sampling event with call chains,
 *     without and with PERF_SAMPLE_REGS_USER + PERF_SAMPLE_STACK_USER of 512..4096 bytes
 *     (a byte ping-pongs between two threads pinned to CPU 0);
 *  2. the recorder's part: ns of the background thread per unwound sample, on real samples
 *     (perf CPU-clock samples of memcpy, qsort and mutex/poll waits of this process), and
 *     what that is at the defaults (500 switch stacks/s + 99 Hz on 4 threads);
 *  3. bytes per sample on disk: CPU samples (the same work recorded with and without the
 *     profile) and context-switch stacks (their stack pools, from the trace);
 *  4. the total at the defaults: rate x (kernel copy + background unwinding), against 0.5 %.
 * Section 2 also unwinds the same samples over 512..4096 bytes of their copy: frames
 * recovered by copy size, what the default (D9_UNWIND_STACK_BYTES) is chosen by.
 * Prints numbers; never a pass/fail test. `--short` for a quick run. */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "dial9/dial9.h"
#if defined(D9_BENCH_LIBDW)
#include <elfutils/libdwfl.h>
#endif
#include "format/decoder.h"
#include "trace_files_util.h"
#include "sources/perf_ring.h"
#include "sources/stack_unwind.h"
#include "sources/unwind_tables.h"

#if defined(__x86_64__)
#include <asm/perf_regs.h>
#define REGS_MASK (1ull << PERF_REG_X86_BP | 1ull << PERF_REG_X86_SP | 1ull << PERF_REG_X86_IP)
#endif

#define BASE_TYPE                                                                                            \
    (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |        \
     PERF_SAMPLE_CALLCHAIN)

static bool g_short;

/* For the total at the defaults: section 1's kernel ns per stack copy, by size index, and
 * section 2's background ns per unwound sample at the default copy size. */
static const int g_sizes[] = {0, 512, 1024, 2048, 4096};
static double g_copy_ns[5] = {-1, -1, -1, -1, -1};
static double g_unwind_ns = -1;

static uint64_t ns_of(clockid_t c) {
    struct timespec ts;
    clock_gettime(c, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void pin_cpu0(void) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(0, &s);
    sched_setaffinity(0, sizeof s, &s);
}

/* ---------------------------------------------------------------- 1. kernel cost */

static int g_ping[2], g_pong[2];
static int g_trips;

static void *pong(void *arg) {
    (void)arg;
    pin_cpu0();
    char c;
    for (int i = 0; i < g_trips; i++)
        if (read(g_ping[0], &c, 1) != 1 || write(g_pong[1], &c, 1) != 1) break;
    return NULL;
}

static void drop(const struct perf_event_header *h, void *ctx) {
    (void)h;
    (void)ctx;
}

/* CPU ns per round trip (two switches each side) with the event set up per `stack_bytes`
 * (-1: no event at all). */
static double round_trip_ns(int stack_bytes) {
    int fd = -1;
    d9_perf_ring ring;
    memset(&ring, 0, sizeof ring);
    if (stack_bytes >= 0) {
        struct perf_event_attr a;
        d9_perf_attr_init(&a, PERF_COUNT_SW_CONTEXT_SWITCHES, BASE_TYPE);
        a.sample_period = 1;
        a.exclude_hv = 1;
        a.inherit = 1;
        a.disabled = 0;
#if defined(__x86_64__)
        if (stack_bytes > 0) {
            a.sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
            a.sample_regs_user = REGS_MASK;
            a.sample_stack_user = (uint32_t)stack_bytes;
        }
#endif
        fd = d9_perf_open(&a, 0, 0); /* inherited events are mapped per CPU: both threads run on CPU 0 */
        if (fd < 0 || d9_perf_ring_map(&ring, fd, 512) != 0) {
            if (fd >= 0) close(fd);
            return -1;
        }
    }
    if (pipe(g_ping) || pipe(g_pong)) return -1;
    pthread_t th;
    pthread_create(&th, NULL, pong, NULL);
    uint64_t c0 = ns_of(CLOCK_PROCESS_CPUTIME_ID);
    char c = 'x';
    for (int i = 0; i < g_trips; i++) {
        if (write(g_ping[1], &c, 1) != 1 || read(g_pong[0], &c, 1) != 1) break;
        if (fd >= 0 && (i & 255) == 0) d9_perf_ring_drain(&ring, drop, NULL);
    }
    pthread_join(th, NULL);
    double ns = (double)(ns_of(CLOCK_PROCESS_CPUTIME_ID) - c0) / g_trips;
    if (fd >= 0) {
        d9_perf_ring_unmap(&ring);
        close(fd);
    }
    close(g_ping[0]), close(g_ping[1]), close(g_pong[0]), close(g_pong[1]);
    return ns;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void kernel_cost(void) {
    pin_cpu0();
    g_trips = g_short ? 5000 : 20000;
    int reps = g_short ? 3 : 7;
    const int *sizes = g_sizes;
    double base[9], with[5][9];
    for (int r = 0; r < reps; r++) {
        base[r] = round_trip_ns(-1);
        for (int k = 0; k < 5; k++) with[k][r] = round_trip_ns(sizes[k]);
    }
    qsort(base, (size_t)reps, sizeof base[0], cmp_double);
    double b = base[reps / 2];
    if (b < 0 || with[0][0] < 0) {
        printf("  context-switch samples refused here (perf_event_paranoid, no CAP_PERFMON)\n");
        return;
    }
    double chain = 0;
    for (int k = 0; k < 5; k++) {
        qsort(with[k], (size_t)reps, sizeof with[k][0], cmp_double);
        double per_stack = (with[k][reps / 2] - b) / 2; /* two switch-outs sampled per round trip */
        if (k == 0) chain = per_stack;
        g_copy_ns[k] = per_stack - chain;
        if (k == 0) printf("  call chain only            : %6.0f ns per stack\n", per_stack);
        else
            printf("  + regs and %4d stack bytes: %6.0f ns per stack (%+5.0f ns for the copy)\n", sizes[k], per_stack,
                   per_stack - chain);
    }
    printf("  (median of %d runs of %d round trips; each round trip samples two switch-outs)\n", reps, g_trips);
}

/* ---------------------------------------------------------------- 2. unwinding CPU */

#define MAX_SAMPLES 12000 /* 2 s at 4999 Hz; 4 KiB copies each: 50 MB */
#define MAX_COPY 4096u /* the largest size compared; the samples are unwound over their first N bytes */

typedef struct raw_sample {
    uint64_t ip, sp, bp;
    uint32_t nchain, stack_len;
    uint64_t chain[64];
    uint8_t stack[MAX_COPY];
} raw_sample;

static raw_sample *g_samples;
static size_t g_nsamples;
static char *g_src, *g_dst;
static volatile uint64_t g_sink;

static void keep_sample(const struct perf_event_header *h, void *ctx) {
    (void)ctx;
    if (h->type != PERF_RECORD_SAMPLE || g_nsamples == MAX_SAMPLES) return;
    const uint64_t *p = (const uint64_t *)(h + 1);
    size_t words = (h->size - sizeof *h) / 8, at = 6;
    if (words < 7 || p[5] > words - 7) return;
    raw_sample *s = &g_samples[g_nsamples];
    s->nchain = 0;
    bool user = false;
    for (uint64_t i = 0; i < p[5]; i++) {
        uint64_t a = p[6 + i];
        if (a >= (uint64_t)PERF_CONTEXT_MAX) user = a == (uint64_t)PERF_CONTEXT_USER;
        else if (user && s->nchain < 64) s->chain[s->nchain++] = a;
    }
    at += p[5];
    if (at + 4 > words || p[at] != PERF_SAMPLE_REGS_ABI_64) return;
    s->bp = p[at + 1], s->sp = p[at + 2], s->ip = p[at + 3];
    at += 4;
    uint64_t size = p[at++];
    if (size == 0 || size > MAX_COPY || at + size / 8 >= words) return;
    uint64_t dyn = p[at + size / 8];
    s->stack_len = (uint32_t)(dyn < size ? dyn : size);
    memcpy(s->stack, p + at, s->stack_len);
    g_nsamples++;
}

static int cmp_int(const void *a, const void *b) { return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b); }

static void work(uint64_t ns) {
    static int arr[4096];
    uint64_t end = ns_of(CLOCK_THREAD_CPUTIME_ID) + ns, seed = 1;
    for (int round = 0; ns_of(CLOCK_THREAD_CPUTIME_ID) < end; round++) {
        if (round % 2) {
            memcpy(g_dst, g_src, 1 << 20);
        } else {
            for (int i = 0; i < 4096; i++) arr[i] = (int)((seed = seed * 6364136223846793005ull + 1) >> 33);
            qsort(arr, 4096, sizeof arr[0], cmp_int);
        }
        g_sink += (uint8_t)g_dst[round & 1023];
    }
}

#if defined(D9_BENCH_LIBDW)
static void libdw_cost(void);
#endif

/* The samples are taken in this function's callees: it keeps its own frame small (like a
 * worker's loop), so the 2 KiB copy covers the frames from the leaf to it. */
static void unwind_cost(void) {
    g_samples = calloc(MAX_SAMPLES, sizeof *g_samples);
    g_src = malloc(1 << 20);
    g_dst = malloc(1 << 20);
    memset(g_src, 3, 1 << 20);
    struct perf_event_attr a;
    d9_perf_attr_init(&a, PERF_COUNT_SW_CPU_CLOCK, BASE_TYPE);
    a.freq = 1;
    a.sample_freq = 4999;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
#if defined(__x86_64__)
    a.sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
    a.sample_regs_user = REGS_MASK;
    a.sample_stack_user = MAX_COPY;
#endif
    a.disabled = 0;
    int fd = d9_perf_open(&a, 0, -1);
    d9_perf_ring ring;
    if (fd < 0 || d9_perf_ring_map(&ring, fd, 512) != 0) {
        printf("  perf refused here: no samples to unwind\n");
        return;
    }
    uint64_t until = ns_of(CLOCK_MONOTONIC) + (g_short ? 500 : 2000) * 1000000ull;
    while (ns_of(CLOCK_MONOTONIC) < until) {
        work(10 * 1000000ull);
        d9_perf_ring_drain(&ring, keep_sample, NULL);
    }
    d9_perf_ring_unmap(&ring);
    close(fd);
    d9_unwind_tables *t = d9_unwind_tables_acquire();
    static uint64_t out[128];
    /* What each copy size recovers: the same samples unwound over the first N bytes of their
     * 4 KiB copy (the kernel copies from sp up, so a smaller copy is exactly this prefix). */
    printf("  frames recovered by copy size (%zu samples, each copied with %u bytes):\n", g_nsamples, MAX_COPY);
    for (int k = 1; k < 5 && t; k++) {
        uint64_t fr = 0, cfi = 0, trunc = 0;
        for (size_t i = 0; i < g_nsamples; i++) {
            raw_sample *s = &g_samples[i];
            uint64_t len = s->stack_len < (uint32_t)g_sizes[k] ? s->stack_len : (uint32_t)g_sizes[k];
            d9_unwind_input in = {.ip = s->ip, .sp = s->sp, .bp = s->bp, .stack = s->stack, .stack_len = len,
                                  .chain = s->chain, .nchain = s->nchain};
            d9_stack_method m;
            fr += d9_unwind_user_stack(t, &in, out, 128, &m);
            cfi += m == D9_STACK_CFI;
            trunc += m == D9_STACK_TRUNCATED;
        }
        double n = g_nsamples ? (double)g_nsamples : 1;
        printf("    %4d bytes: %5.2f frames a sample, complete with CFI %5.1f %%, truncated %5.1f %%%s\n", g_sizes[k],
               (double)fr / n, 100.0 * (double)cfi / n, 100.0 * (double)trunc / n,
               (unsigned)g_sizes[k] == D9_UNWIND_STACK_BYTES ? "  <- the default" : "");
    }
    uint64_t frames = 0, by[4] = {0, 0, 0, 0};
    int reps = g_short ? 3 : 10;
    uint64_t c0 = ns_of(CLOCK_THREAD_CPUTIME_ID);
    for (int r = 0; r < reps; r++)
        for (size_t i = 0; i < g_nsamples; i++) {
            raw_sample *s = &g_samples[i];
            uint64_t len = s->stack_len < D9_UNWIND_STACK_BYTES ? s->stack_len : D9_UNWIND_STACK_BYTES;
            d9_unwind_input in = {.ip = s->ip, .sp = s->sp, .bp = s->bp, .stack = s->stack, .stack_len = len,
                                  .chain = s->chain, .nchain = s->nchain};
            d9_stack_method m;
            uint32_t n = d9_unwind_user_stack(t, &in, out, 128, &m);
            if (r == 0) frames += n, by[m & 3]++;
            if (r == 0 && m == D9_STACK_TRUNCATED && getenv("D9_BENCH_VERBOSE")) {
                Dl_info di;
                const char *last = dladdr((void *)(uintptr_t)out[n - 1], &di) && di.dli_sname ? di.dli_sname : "?";
                printf("    truncated after %u frames at %s (copy %u bytes, bp %s the copy)\n", n, last, s->stack_len,
                       s->bp >= s->sp && s->bp < s->sp + s->stack_len ? "in" : "outside");
            }
        }
    double per = g_nsamples ? (double)(ns_of(CLOCK_THREAD_CPUTIME_ID) - c0) / reps / (double)g_nsamples : 0;
    if (g_nsamples) g_unwind_ns = per;
    uint64_t c1 = ns_of(CLOCK_THREAD_CPUTIME_ID);
    for (int r = 0; r < reps; r++) { /* the old path: the chain copied and checked for loops */
        for (size_t i = 0; i < g_nsamples; i++) {
            uint32_t n = 0;
            for (uint32_t k = 0; k < g_samples[i].nchain; k++) out[n++] = g_samples[i].chain[k];
            g_sink += n;
        }
    }
    double old = g_nsamples ? (double)(ns_of(CLOCK_THREAD_CPUTIME_ID) - c1) / reps / (double)g_nsamples : 0;
    printf("  %zu samples (memcpy, qsort with a comparison function), %.1f frames each: %.0f ns per unwound sample"
           " (copying the kernel's chain: %.0f ns)\n",
           g_nsamples, g_nsamples ? (double)frames / (double)g_nsamples : 0, per, old);
    printf("  methods: frame pointers %" PRIu64 ", CFI %" PRIu64 ", truncated %" PRIu64 "\n", by[1], by[2], by[3]);
    double rate = 500 + 99 * 4;
    printf("  at the defaults (500 switch stacks/s + 99 Hz x 4 threads = %.0f samples/s): %.3f %% of one CPU\n", rate,
           rate * per / 1e9 * 100);
    printf("  unwind tables held: %" PRIu64 " KiB for %zu objects\n", t ? t->bytes / 1024 : 0, t ? t->nobjs : 0);
    if (t) d9_unwind_tables_release();
#if defined(D9_BENCH_LIBDW)
    libdw_cost();
#else
    printf("  (built without libdw: no comparison with elfutils' unwinder)\n");
#endif
    free(g_samples);
}

/* ---------------------------------------------------------------- 2b. elfutils' unwinder */

#if defined(D9_BENCH_LIBDW)
/* The same samples through libdwfl's unwinder with memory callbacks over the copied stack
 * (the alternative the issue names): modules reported from /proc/self/maps, registers ip, sp,
 * bp set per sample. Only the frames from the copy: no frame-pointer splice. */
static const raw_sample *g_dw_sample;

static pid_t dw_next_thread(Dwfl *dwfl, void *arg, void **thread_arg) {
    (void)dwfl;
    if (*thread_arg) return 0;
    *thread_arg = arg;
    return getpid();
}

static bool dw_memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg) {
    (void)dwfl;
    (void)arg;
    const raw_sample *s = g_dw_sample;
    uint64_t len = s->stack_len < D9_UNWIND_STACK_BYTES ? s->stack_len : D9_UNWIND_STACK_BYTES;
    if (addr < s->sp || len < 8 || addr - s->sp > len - 8) return false;
    memcpy(result, s->stack + (addr - s->sp), 8);
    return true;
}

static bool dw_set_registers(Dwfl_Thread *thread, void *arg) {
    (void)arg;
    Dwarf_Word bp_sp[2] = {g_dw_sample->bp, g_dw_sample->sp};
    dwfl_thread_state_register_pc(thread, g_dw_sample->ip);
    return dwfl_thread_state_registers(thread, 6, 2, bp_sp);
}

static uint64_t g_dw_pcs[128];

static int dw_frame(Dwfl_Frame *state, void *arg) {
    uint64_t *n = arg;
    Dwarf_Addr pc;
    bool activation;
    if (!dwfl_frame_pc(state, &pc, &activation)) return DWARF_CB_ABORT;
    g_dw_pcs[*n] = pc;
    return ++*n >= 128 ? DWARF_CB_ABORT : DWARF_CB_OK;
}

static void libdw_cost(void) {
    static const Dwfl_Callbacks cb = {.find_elf = dwfl_linux_proc_find_elf,
                                      .find_debuginfo = dwfl_standard_find_debuginfo};
    static const Dwfl_Thread_Callbacks tcb = {.next_thread = dw_next_thread, .memory_read = dw_memory_read,
                                              .set_initial_registers = dw_set_registers};
    Dwfl *dwfl = dwfl_begin(&cb);
    if (!dwfl || dwfl_linux_proc_report(dwfl, getpid()) != 0 || dwfl_report_end(dwfl, NULL, NULL) != 0 ||
        !dwfl_attach_state(dwfl, NULL, getpid(), &tcb, (void *)1)) {
        printf("  libdwfl: could not attach (%s)\n", dwfl_errmsg(-1));
        if (dwfl) dwfl_end(dwfl);
        return;
    }
    int reps = g_short ? 2 : 4;
    uint64_t frames = 0, c0 = 0, agree = 0;
    d9_unwind_tables *t = d9_unwind_tables_acquire();
    static uint64_t ours[128];
    for (int r = 0; r <= reps; r++) { /* pass 0 warms libdwfl's caches (modules, CFI) */
        if (r == 1) c0 = ns_of(CLOCK_THREAD_CPUTIME_ID);
        for (size_t i = 0; i < g_nsamples; i++) {
            g_dw_sample = &g_samples[i];
            uint64_t n = 0;
            dwfl_getthread_frames(dwfl, getpid(), dw_frame, &n);
            if (r == 0 && t) { /* do both name the same frames, as far as both go? */
                const raw_sample *sm = g_dw_sample;
                uint64_t len = sm->stack_len < D9_UNWIND_STACK_BYTES ? sm->stack_len : D9_UNWIND_STACK_BYTES;
                d9_unwind_input in = {.ip = sm->ip, .sp = sm->sp, .bp = sm->bp, .stack = sm->stack,
                                      .stack_len = len, .chain = sm->chain, .nchain = sm->nchain};
                d9_stack_method m;
                uint32_t k = d9_unwind_user_stack(t, &in, ours, 128, &m), same = 0;
                while (same < k && same < n && ours[same] == g_dw_pcs[same]) same++;
                agree += same == (k < n ? k : n);
            }
            if (r == 1) frames += n;
        }
    }
    double per = g_nsamples ? (double)(ns_of(CLOCK_THREAD_CPUTIME_ID) - c0) / reps / (double)g_nsamples : 0;
    if (t) d9_unwind_tables_release();
    printf("  libdwfl (elfutils) on the same samples: %.0f ns per sample, %.1f frames each (CFI only, no splice);"
           " the same frames as ours as far as both go in %" PRIu64 " of %zu\n",
           per, g_nsamples ? (double)frames / (double)g_nsamples : 0, agree, g_nsamples);
    dwfl_end(dwfl);
}
#endif

/* ---------------------------------------------------------------- 3. bytes on disk */

typedef struct disk {
    uint64_t samples, bytes;
    uint64_t distinct, pool_bytes; /* distinct pooled stacks of the samples, their pool entries */
    uint8_t *seen;                 /* by pool id (one stream per run here: one segment) */
    size_t seen_cap;
} disk;

static void count_samples(const d9_event *ev, void *ctx) {
    disk *d = ctx;
    if (strcmp(ev->schema->name, "CpuSampleEvent")) return;
    d->samples++;
    const d9_value *v = d9_event_field(ev, "callchain");
    if (!v || v->pool_id >= 1u << 22) return;
    if (v->pool_id >= d->seen_cap) {
        size_t cap = (size_t)v->pool_id * 2 + 64;
        d->seen = realloc(d->seen, cap);
        memset(d->seen + d->seen_cap, 0, cap - d->seen_cap);
        d->seen_cap = cap;
    }
    if (d->seen[v->pool_id]) return;
    d->seen[v->pool_id] = 1;
    d->distinct++;
    d->pool_bytes += 8 + 8 * (uint64_t)v->stack.count + 8; /* id, count, frames; its StackOriginEvent */
}

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int g_holding;

static void *holder(void *arg) {
    (void)arg;
    while (atomic_load(&g_holding) >= 0) {
        pthread_mutex_lock(&g_lock);
        atomic_store(&g_holding, 1);
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
        pthread_mutex_unlock(&g_lock);
        sched_yield();
    }
    return NULL;
}

/* kind 0: no profile, 1: CPU profile of memcpy/qsort polls, 2: context-switch stacks of polls
 * that wait for a mutex and in poll() */
static disk record(int kind, const char *dir) {
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    cfg.cpu_profile = kind == 1;
    cfg.cpu_sample_hz = 99;
    cfg.schedule_profile = kind == 2;
    cfg.symbolize = false;
    disk d;
    memset(&d, 0, sizeof d);
    if (d9_start(&cfg) != 0) return d;
    pthread_t th;
    if (kind == 2) {
        atomic_store(&g_holding, 0);
        pthread_create(&th, NULL, holder, NULL);
    }
    d9_worker_begin("bench", 0);
    int polls = kind == 2 ? (g_short ? 500 : 4000) : (g_short ? 20 : 400); /* 10 s: stacks repeat in a segment */
    for (int i = 0; i < polls; i++) {
        d9_poll_begin((uint64_t)i + 1, D9_HERE);
        if (kind == 2) {
            pthread_mutex_lock(&g_lock);
            pthread_mutex_unlock(&g_lock);
            struct pollfd none = {-1, 0, 0};
            poll(&none, 1, 1);
        } else {
            work(25 * 1000000ull);
        }
        d9_poll_end();
    }
    d9_worker_end();
    if (kind == 2) {
        atomic_store(&g_holding, -1);
        pthread_join(th, NULL);
    }
    d9_stop();
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cat %s/trace.*.bin 2>/dev/null | wc -c", d9_run_dir());
    FILE *p = popen(cmd, "r");
    unsigned long long b = 0;
    if (p && fscanf(p, "%llu", &b) != 1) b = 0;
    if (p) pclose(p);
    d.bytes = b;
    snprintf(cmd, sizeof cmd, "%s", d9_run_dir());
    d9t_decode_run(cmd, count_samples, &d);
    free(d.seen);
    d.seen = NULL;
    return d;
}

static void disk_cost(void) {
    char dir[] = "/tmp/d9-bench-unwind-XXXXXX";
    if (!mkdtemp(dir)) return;
    disk with = record(1, dir), without = record(0, dir), blocking = record(2, dir);
    double event_bytes = 0;
    if (with.samples) {
        double per = (double)(with.bytes - (without.bytes < with.bytes ? without.bytes : with.bytes)) / (double)with.samples;
        event_bytes = per - (double)with.pool_bytes / (double)with.samples;
        printf("  CPU samples of memcpy/qsort polls: %" PRIu64 " samples, %" PRIu64 " bytes with the profile, %" PRIu64
               " without: %.1f bytes per sample (%" PRIu64 " distinct stacks: %.1f bytes of stack pools per sample,"
               " %.1f for the event)\n",
               with.samples, with.bytes, without.bytes, per, with.distinct, (double)with.pool_bytes / (double)with.samples,
               event_bytes);
    }
    if (blocking.samples)
        printf("  context-switch stacks of polls waiting on a mutex and in poll(): %" PRIu64 " samples, %" PRIu64
               " distinct stacks: %.1f bytes of stack pools per sample, ~%.0f with the event\n",
               blocking.samples, blocking.distinct, (double)blocking.pool_bytes / (double)blocking.samples,
               (double)blocking.pool_bytes / (double)blocking.samples + event_bytes);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

int main(int argc, char **argv) {
    g_short = argc > 1 && !strcmp(argv[1], "--short");
    printf("dial9 unwinding benchmark%s (stack copy %u bytes)\n\n", g_short ? " (short)" : "", D9_UNWIND_STACK_BYTES);
    printf("1. kernel cost of a context-switch stack, by user stack copy size\n");
    kernel_cost();
    printf("\n2. background CPU per unwound sample\n");
    unwind_cost();
    printf("\n3. bytes per sample on disk (defaults, one worker, %s)\n", g_short ? "short runs" : "10 s runs");
    disk_cost();
    printf("\n4. total CPU of stacks with unwinding at the defaults (500 switch stacks/s + 99 Hz x 4 threads)\n");
    int def = 0;
    for (int k = 1; k < 5; k++)
        if ((unsigned)g_sizes[k] == D9_UNWIND_STACK_BYTES) def = k;
    if (g_unwind_ns < 0) {
        printf("  not measured here (perf refused)\n");
    } else {
        double rate = 500 + 99 * 4, copy = def && g_copy_ns[def] > 0 ? g_copy_ns[def] : 0;
        double pct = rate * (copy + g_unwind_ns) / 1e9 * 100;
        printf("  %.0f samples/s x (%.0f ns kernel stack copy of %u bytes + %.0f ns unwinding in the background)"
               " = %.3f %% of one CPU (target <= 0.5 %%)%s\n",
               rate, copy, D9_UNWIND_STACK_BYTES, g_unwind_ns, pct,
               g_copy_ns[def] < 0 ? " (copy cost not measured: switch samples refused)" : "");
    }
    return 0;
}
