/* Stacks that name the application function that made the call, through Debian's libc as
 * shipped (no frame pointers), with this program built as users build theirs (frame pointers
 * in its own code):
 *  - a poll whose take_the_lock() waits for a mutex another thread holds until it waits: its
 *    context-switch stacks contain pthread_mutex_lock and, above it, take_the_lock;
 *  - a poll whose wait_on_pipe() calls poll() on an idle pipe for 8 ms: wait_on_pipe is in
 *    its context-switch stacks;
 *  - polls whose copy_buffers() memcpy()s large buffers: >= 80 % of the CPU samples inside
 *    them name copy_buffers (perf, and the SIGPROF timer fallback);
 *  - polls whose sort_things() qsort()s with cmp_things(): samples in cmp_things show
 *    cmp_things <- libc frames <- sort_things (perf and timer);
 *  - `dial9 analyze --json` names take_the_lock as the app frame of the top in-poll blocking
 *    entry and in lock_contention (with the red flag), wait_on_pipe for the pipe polls;
 *  - no user frame of any sample is an address outside the executable mappings;
 *  - StackOriginEvent says how the stacks were obtained.
 * Shares and presence only, never counts that depend on timing. Context-switch stacks need
 * perf_event_paranoid <= 1 or root: without them those checks are skipped and said so. */
#include <dlfcn.h>
#include <poll.h>
#include <semaphore.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"
#include "dial9/dial9.h"
#include "test_source_util.h"


#define LOCK_POLLS 20
#define HOLD_NS (3u * 1000u * 1000u)
#define PIPE_POLLS 10
#define CPU_POLLS 5
#define CPU_NS (150u * 1000u * 1000u)
#define SLACK_NS (100u * 1000u)
#define BUF_BYTES (4u << 20)
#define SORT_N 4096

static pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;
static sem_t g_held, g_done;
static int g_pipe[2];
static pid_t g_tid[4];
static char *g_src, *g_dst;
static int g_sort[SORT_N];
static volatile uint64_t g_sink;

/* ---------------------------------------------------------------- the application */

TT_NOINLINE static void take_the_lock(void) {
    pthread_mutex_lock(&g_mutex);
    pthread_mutex_unlock(&g_mutex);
}

TT_NOINLINE static void wait_on_pipe(void) {
    struct pollfd p = {g_pipe[0], POLLIN, 0};
    g_sink += (uint64_t)poll(&p, 1, 8);
}

TT_NOINLINE static void copy_buffers(uint64_t ns) {
    uint64_t end = tt_thread_cpu_ns() + ns;
    do {
        memcpy(g_dst, g_src, BUF_BYTES);
        g_sink += (uint8_t)g_dst[g_sink % BUF_BYTES];
    } while (tt_thread_cpu_ns() < end);
}

TT_NOINLINE static int cmp_things(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    TT_BURN_REGISTERS(40); /* most of the sort's time in here */
    return (x > y) - (x < y);
}

TT_NOINLINE static void sort_things(uint64_t ns) {
    uint64_t end = tt_thread_cpu_ns() + ns, seed = 1;
    do {
        for (int i = 0; i < SORT_N; i++) g_sort[i] = (int)((seed = seed * 6364136223846793005ull + 1) >> 33);
        qsort(g_sort, SORT_N, sizeof g_sort[0], cmp_things);
    } while (tt_thread_cpu_ns() < end);
}

static void *mutex_holder(void *arg) {
    (void)arg;
    for (int i = 0; i < LOCK_POLLS; i++) {
        pthread_mutex_lock(&g_mutex);
        sem_post(&g_held);
        /* released once the worker sleeps on it, however late the machine runs it (a fixed
           hold let a worker scheduled after it take a free lock: no switch, no stack) */
        pid_t worker;
        while (!(worker = __atomic_load_n(&g_tid[0], __ATOMIC_ACQUIRE))) tt_sleep_ns(1000000);
        tt_wait_blocked_in(worker, SYS_futex, (uint64_t)(uintptr_t)&g_mutex);
        tt_sleep_ns(HOLD_NS);
        pthread_mutex_unlock(&g_mutex);
        sem_wait(&g_done);
    }
    return NULL;
}

static void *lock_worker(void *arg) {
    (void)arg;
    __atomic_store_n(&g_tid[0], gettid(), __ATOMIC_RELEASE);
    d9_worker_begin("unwind", 0);
    for (int i = 0; i < LOCK_POLLS; i++) {
        sem_wait(&g_held); /* held until this thread waits for it: the poll blocks */
        d9_poll_begin(100 + (uint64_t)i, D9_HERE);
        take_the_lock();
        d9_poll_end();
        sem_post(&g_done);
    }
    d9_worker_end();
    return NULL;
}

static void *pipe_worker(void *arg) {
    (void)arg;
    g_tid[1] = gettid();
    d9_worker_begin("unwind", 1);
    for (int i = 0; i < PIPE_POLLS; i++) {
        d9_poll_begin(200 + (uint64_t)i, D9_HERE);
        wait_on_pipe();
        d9_poll_end();
    }
    d9_worker_end();
    return NULL;
}

static void *cpu_worker(void *arg) {
    bool sort = arg != NULL;
    g_tid[sort ? 3 : 2] = gettid();
    d9_worker_begin("unwind", sort ? 3 : 2);
    for (int i = 0; i < CPU_POLLS; i++) {
        d9_poll_begin((sort ? 400 : 300) + (uint64_t)i, D9_HERE);
        if (sort) sort_things(CPU_NS);
        else copy_buffers(CPU_NS);
        d9_poll_end();
        d9_park();
        tt_sleep_ns(5u * 1000u * 1000u);
        d9_unpark();
    }
    d9_worker_end();
    return NULL;
}

/* ---------------------------------------------------------------- reading the trace */

typedef struct origin {
    uint64_t counts[4];
} origin;

static void count_origins(const d9_event *ev, void *ctx) {
    origin *o = ctx;
    if (strcmp(ev->schema->name, "StackOriginEvent") != 0) return;
    uint64_t m = d9t_field_u(ev, "method");
    if (m < 4) o->counts[m]++;
}

/* A libc function's run-time range: its address from the loader, its size from .dynsym. */
static tt_range libc_range(const char *name) {
    tt_range r = {0, 0};
    void *fn = dlsym(RTLD_DEFAULT, name);
    Dl_info info;
    if (!fn || !dladdr(fn, &info) || !info.dli_fname) return r;
    uint64_t addr = 0, size = 0;
    if (!d9_elf_funcs_find(info.dli_fname, name, &addr, &size)) return r;
    r.lo = (uint64_t)(uintptr_t)fn;
    r.hi = r.lo + size;
    return r;
}

static bool is_kernel(uint64_t a) { return a >= 0xffff800000000000ull; }

/* Index of the first user frame (kernel frames come first). */
static uint32_t first_user(const tt_sample *s) {
    uint32_t i = 0;
    while (i < s->n && is_kernel(s->frames[i])) i++;
    return i;
}

/* `inner` somewhere, and `outer` in a frame above it. */
static bool has_in_order(const tt_sample *s, tt_range inner, tt_range outer) {
    for (uint32_t i = first_user(s); i < s->n; i++)
        if (tt_in(inner, s->frames[i])) return tt_stack_has(s->frames + i + 1, s->n - i - 1, outer);
    return false;
}

typedef struct share {
    size_t all, good;
} share;

static void print_stack(const char *what, const tt_sample *s) {
    if (!getenv("D9_TEST_VERBOSE")) return;
    fprintf(stderr, "%s:", what);
    for (uint32_t k = first_user(s); k < s->n && k < first_user(s) + 12; k++) {
        Dl_info info;
        if (dladdr((void *)(uintptr_t)s->frames[k], &info) && info.dli_sname)
            fprintf(stderr, " %s", info.dli_sname);
        else
            fprintf(stderr, " %" PRIx64, s->frames[k]);
    }
    fprintf(stderr, "\n");
}

/* Samples of `source` on thread `which`'s worker inside its polls. */
static share in_polls(const tt_trace *t, int which, uint8_t source, tt_range inner, tt_range outer, bool leaf_only) {
    share sh = {0, 0};
    uint32_t w = tt_worker_of(t, g_tid[which]);
    CHECK(w != 255);
    for (size_t i = 0; i < t->nsamples; i++) {
        const tt_sample *s = &t->samples[i];
        if (s->source != source || s->tid != (uint32_t)g_tid[which] || s->n == 0) continue;
        /* switch stacks: strictly inside (the worker's wake of the holder follows the poll) */
        if (!tt_poll_at(t, w, s->ts, source ? 0 : SLACK_NS)) continue;
        uint32_t u = first_user(s);
        if (u >= s->n) continue;
        if (leaf_only && !tt_in(inner, s->frames[u])) continue;
        sh.all++;
        bool good = leaf_only ? has_in_order(s, inner, outer) : inner.hi ? has_in_order(s, inner, outer)
                                                                            : tt_stack_has(s->frames + u, s->n - u, outer);
        sh.good += good;
        if (!good) print_stack("not named", s);
    }
    return sh;
}

/* No user frame outside the executable mappings (the kernel's chain through frameless code
 * used to end in a random value). */
static size_t frames_outside_code(const tt_trace *t) {
    size_t bad = 0;
    for (size_t i = 0; i < t->nsamples; i++) {
        const tt_sample *s = &t->samples[i];
        for (uint32_t k = first_user(s); k < s->n; k++) {
            Dl_info info;
            if (!dladdr((void *)(uintptr_t)s->frames[k], &info)) {
                bad++;
                fprintf(stderr, "sample frame %u = %" PRIx64 " is in no mapped object\n", k, s->frames[k]);
                break;
            }
        }
    }
    return bad;
}

/* The output of `dial9 ARGS` (the CLI built next to this test), NULL when it cannot run. */
static char *dial9_output(const char *args) {
    const char *bd = getenv("D9_BUILD_DIR");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s/dial9' %s", bd && *bd ? bd : ".", args);
    FILE *p = popen(cmd, "r");
    if (!p) return NULL;
    size_t len = 0, cap = 1 << 16;
    char *out = malloc(cap);
    for (size_t got; out && (got = fread(out + len, 1, cap - len - 1, p)) > 0;) {
        len += got;
        if (cap - len < 4096) out = realloc(out, cap *= 2);
    }
    pclose(p);
    if (out) out[len] = 0;
    return out;
}

/* `dial9 symbolize` of the run: names what the recorder left unnamed. Its symbols at stop
 * have a bounded time (the pipeline's 5 s, at idle priority until then); on a loaded machine
 * a segment can be left without them (the recorder says so on stderr), and a user then names
 * them offline, as here. Addresses the files already name are skipped. */
static bool symbolize_run(void) {
    char args[600];
    snprintf(args, sizeof args, "symbolize -q '%s' >/dev/null 2>&1 && echo symbolized", d9_run_dir());
    char *o = dial9_output(args);
    bool ok = o && strstr(o, "symbolized");
    free(o);
    return ok;
}

/* `dial9 analyze --json` of the run, read with python3: the app frame of the top in-poll
 * blocking entry, of the first lock_contention entry, and whether the flag is raised. */
typedef struct analyzed {
    char top_app[128], lock_app[128];
    bool lock_flag;
} analyzed;

static bool analyze_run(analyzed *out) {
    char args[1200];
    snprintf(args, sizeof args,
             "analyze --json '%s' | python3 -c '"
             "import json,sys\n"
             "d=json.load(sys.stdin)\n"
             "top=[g for g in d[\"blocking\"][\"by_function\"] if g[\"in_poll\"] and not g[\"preempted\"]]\n"
             "lc=d.get(\"lock_contention\", [])\n"
             "print(\"top_app=%%s\" %% (top[0][\"app_frame\"] if top else None))\n"
             "print(\"lock_app=%%s\" %% (lc[0][\"app_frame\"] if lc else None))\n"
             "print(\"lock_flag=%%d\" %% any(f[\"code\"] == \"lock_contention\" for f in d[\"red_flags\"]))'",
             d9_run_dir());
    char *o = dial9_output(args);
    memset(out, 0, sizeof *out);
    const char *a = o ? strstr(o, "top_app=") : NULL, *b = o ? strstr(o, "lock_app=") : NULL;
    const char *c = o ? strstr(o, "lock_flag=") : NULL;
    if (a) snprintf(out->top_app, sizeof out->top_app, "%.*s", (int)strcspn(a + 8, "\n"), a + 8);
    if (b) snprintf(out->lock_app, sizeof out->lock_app, "%.*s", (int)strcspn(b + 9, "\n"), b + 9);
    out->lock_flag = c && c[10] == '1';
    free(o);
    return a && b && c;
}

enum scenario { LOCK, PIPE, CPU_PERF, CPU_TIMER };

static void run(enum scenario sc) {
    static const char *const labels[] = {"lock", "pipe", "perf", "timer"};
    const char *label = labels[sc];
    char *dir = d9t_mkdtemp("unwind");
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    cfg.overhead_budget_pct = 0; /* every record: the cost governor is test_mt_source_governor's */
    cfg.cpu_profile = sc >= CPU_PERF;
    cfg.cpu_sample_hz = 99;
    cfg.sampler = sc == CPU_TIMER ? D9_SAMPLER_TIMER : D9_SAMPLER_PERF;
    cfg.symbolize = sc < CPU_PERF; /* `dial9 analyze` names the frames */
    memset(g_tid, 0, sizeof g_tid);
    CHECK(d9_start(&cfg) == 0);
    pthread_t th[2];
    if (sc == LOCK) {
        pthread_create(&th[0], NULL, mutex_holder, NULL);
        pthread_create(&th[1], NULL, lock_worker, NULL);
        pthread_join(th[0], NULL);
        pthread_join(th[1], NULL);
    } else if (sc == PIPE) {
        pthread_create(&th[0], NULL, pipe_worker, NULL);
        pthread_join(th[0], NULL);
    } else {
        pthread_create(&th[0], NULL, cpu_worker, NULL);
        pthread_join(th[0], NULL);
        pthread_create(&th[0], NULL, cpu_worker, (void *)1);
        pthread_join(th[0], NULL);
    }
    d9_stop();

    tt_trace t;
    CHECK(tt_load(d9_run_dir(), &t) == 0);
    origin o;
    memset(&o, 0, sizeof o);
    d9t_decode_run(d9_run_dir(), count_origins, &o);
    const char *cpu_note = tt_meta(&t, "source.cpu_profile");
    const char *stacks_note = tt_meta(&t, "source.switch_stacks");
    printf("%s: source.cpu_profile = %s\n%s: source.switch_stacks = %s\n", label, cpu_note, label, stacks_note);
    printf("%s: stack origins: frame pointers %" PRIu64 ", with CFI %" PRIu64 ", truncated %" PRIu64 "\n", label,
           o.counts[1], o.counts[2], o.counts[3]);

    tt_range lock_fn = tt_function_range("take_the_lock", (const void *)take_the_lock);
    tt_range pipe_fn = tt_function_range("wait_on_pipe", (const void *)wait_on_pipe);
    tt_range copy_fn = tt_function_range("copy_buffers", (const void *)copy_buffers);
    tt_range cmp_fn = tt_function_range("cmp_things", (const void *)cmp_things);
    tt_range sort_fn = tt_function_range("sort_things", (const void *)sort_things);
    tt_range mutex_lock = libc_range("pthread_mutex_lock");
    tt_range libc_qsort = libc_range("qsort");
    CHECK(mutex_lock.hi > mutex_lock.lo && libc_qsort.hi > libc_qsort.lo);
    tt_range none = {0, 0};

    bool checked = true;
    if (sc < CPU_PERF && !tt_starts_with(stacks_note, "active")) {
        printf("SKIP context-switch checks: %s\n", stacks_note);
        checked = false;
    } else if (sc < CPU_PERF) {
        share sh = sc == LOCK ? in_polls(&t, 0, 1, mutex_lock, lock_fn, false) : in_polls(&t, 1, 1, none, pipe_fn, false);
        printf("%s: context-switch stacks in the polls: %zu, %zu with %s\n", label, sh.all, sh.good,
               sc == LOCK ? "pthread_mutex_lock <- take_the_lock" : "wait_on_pipe");
        if (TT_INTERCEPTED && sc == LOCK) printf("SKIP the libc pthread_mutex_lock check: intercepted by the sanitizer\n");
        else CHECK(sh.all >= (sc == LOCK ? 5u : 3u) && sh.good * 2 >= sh.all);
        analyzed an;
        CHECK(symbolize_run());
        CHECK(analyze_run(&an));
        printf("%s: analyze: top in-poll blocking app_frame %s, lock_contention app_frame %s, flag %d\n", label,
               an.top_app, an.lock_app, an.lock_flag);
        CHECK_STR(an.top_app, sc == LOCK ? "take_the_lock" : "wait_on_pipe");
        if (sc == LOCK) {
            CHECK_STR(an.lock_app, "take_the_lock");
            CHECK(an.lock_flag);
        } else {
            CHECK(!an.lock_flag); /* a wait in poll() is no lock contention */
        }
    } else if (sc == CPU_PERF && !tt_starts_with(cpu_note, "active: perf")) {
        printf("SKIP perf CPU checks: %s\n", cpu_note);
        checked = false;
    } else {
        share copy = in_polls(&t, 2, 0, none, copy_fn, false);
        share cmp = in_polls(&t, 3, 0, cmp_fn, sort_fn, true);
        /* cmp_things' caller is libc's sort, not the application */
        size_t cmp_libc = 0;
        uint32_t w = tt_worker_of(&t, g_tid[3]);
        for (size_t i = 0; i < t.nsamples; i++) {
            const tt_sample *s = &t.samples[i];
            uint32_t u = first_user(s);
            if (s->source != 0 || s->tid != (uint32_t)g_tid[3] || u + 1 >= s->n || !tt_in(cmp_fn, s->frames[u]))
                continue;
            if (!tt_poll_at(&t, w, s->ts, SLACK_NS)) continue;
            Dl_info info;
            if (dladdr((void *)(uintptr_t)s->frames[u + 1], &info) && strstr(info.dli_fname, "libc.so")) cmp_libc++;
        }
        printf("%s: CPU samples in memcpy polls: %zu, %zu name copy_buffers\n", label, copy.all, copy.good);
        printf("%s: CPU samples in cmp_things: %zu, %zu reach sort_things, %zu called from libc\n", label, cmp.all,
               cmp.good, cmp_libc);
        if (TT_INTERCEPTED) {
            printf("SKIP the memcpy/qsort shares: the sanitizer's interceptors replace libc's\n");
            CHECK(copy.all >= 20 && cmp.all >= 10);
        } else {
            CHECK(copy.all >= 20 && copy.good * 10 >= copy.all * 8);
            CHECK(cmp.all >= 10 && cmp.good * 10 >= cmp.all * 8);
            CHECK(cmp_libc * 10 >= cmp.all * 8);
        }
    }
    CHECK_EQ_U64(frames_outside_code(&t), 0);
    if (checked) {
        CHECK(o.counts[2] > 0); /* some stacks needed CFI */
        char args[600];
        snprintf(args, sizeof args, "stats '%s'", d9_run_dir());
        char *stats = dial9_output(args);
        const char *line = stats ? strstr(stats, "\nstacks ") : NULL;
        printf("%s: dial9 stats: %.*s\n", label, line ? (int)strcspn(line + 1, "\n") : 4, line ? line + 1 : "none");
        CHECK(line && strstr(line, "% with CFI unwinding"));
        free(stats);
    }
    tt_free(&t);
    d9t_rm_rf(dir);
    free(dir);
}

int main(void) {
    sem_init(&g_held, 0, 0);
    sem_init(&g_done, 0, 0);
    if (pipe(g_pipe) != 0) return 1;
    g_src = malloc(BUF_BYTES);
    g_dst = malloc(BUF_BYTES);
    memset(g_src, 1, BUF_BYTES);
    memset(g_dst, 2, BUF_BYTES);
    run(LOCK);
    run(PIPE);
    run(CPU_PERF);
    run(CPU_TIMER);
    return d9t_summary("source_unwind");
}
