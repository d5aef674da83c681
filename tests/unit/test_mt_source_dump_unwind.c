/* Task dumps are unwound with CFI like the other stacks: a task that suspends from inside a
 * comparison function that Debian's libc qsort() calls (libc has no frame pointers: its merge
 * sort uses rbp as a general register) gets TaskDumpEvents whose stacks name
 *   cmp_and_suspend <- libc frames <- sort_and_suspend <- event_loop,
 * where the frame-pointer walk alone lost everything above libc; the record says it was
 * obtained with CFI (StackOriginEvent method 2), and no frame is an address outside code.
 * Presence and shares only: the task idles 50 ms after each suspension, so nearly every one
 * gets a dump (P = 1 - exp(-50/10) = 99.3 %), and any dump that exists is checked whole. */
#include <dlfcn.h>

#include "check.h"
#include "dial9/dial9.h"
#include "sources/stack_unwind.h"
#include "test_source_util.h"

#define ROUNDS 20
#define TASK 9
#define IDLE_NS (50u * 1000u * 1000u)
#define SORT_N 256

static int g_sort[SORT_N];
static bool g_suspended; /* one thread reads and writes it */
static volatile int g_sink;

TT_NOINLINE static int cmp_and_suspend(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    if (!g_suspended) { /* registers its continuation from inside the sort, once per poll */
        g_suspended = true;
        d9_task_suspend(TASK);
    }
    return (x > y) - (x < y);
}

TT_NOINLINE static void sort_and_suspend(uint64_t seed) {
    for (int i = 0; i < SORT_N; i++) g_sort[i] = (int)((seed = seed * 6364136223846793005ull + 1) >> 33);
    g_suspended = false;
    qsort(g_sort, SORT_N, sizeof g_sort[0], cmp_and_suspend);
    g_sink += g_sort[0]; /* not a tail call: this frame stays on the stack */
}

static void *event_loop(void *arg) {
    (void)arg;
    d9_worker_begin("dump-unwind", 0);
    for (int round = 0; round <= ROUNDS; round++) { /* the last round resolves the one before */
        d9_poll_begin(TASK, D9_HERE);
        sort_and_suspend((uint64_t)round + 1);
        d9_poll_end();
        if (round < ROUNDS) {
            d9_park();
            tt_sleep_ns(IDLE_NS);
            d9_unpark();
        }
    }
    d9_worker_end();
    return NULL;
}

typedef struct origins {
    uint64_t counts[4];
} origins;

static void count_origins(const d9_event *ev, void *ctx) {
    origins *o = ctx;
    if (strcmp(ev->schema->name, "StackOriginEvent") != 0) return;
    uint64_t m = d9t_field_u(ev, "method");
    if (m < 4) o->counts[m]++;
}

static bool in_libc(uint64_t a) {
    Dl_info info;
    return dladdr((void *)(uintptr_t)a, &info) && info.dli_fname && strstr(info.dli_fname, "libc.so");
}

static bool is_code(uint64_t a) {
    Dl_info info;
    return dladdr((void *)(uintptr_t)a, &info) && info.dli_fname;
}

int main(void) {
    char *dir = d9t_mkdtemp("dump-unwind");
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    cfg.task_dumps = true;
    cfg.schedule_profile = false; /* task dumps only: nothing here needs perf */
    CHECK(d9_start(&cfg) == 0);
    pthread_t th;
    pthread_create(&th, NULL, event_loop, NULL);
    pthread_join(th, NULL);
    d9_stop();

    tt_trace t;
    CHECK(tt_load(d9_run_dir(), &t) == 0);
    origins o;
    memset(&o, 0, sizeof o);
    d9t_decode_run(d9_run_dir(), count_origins, &o);
    tt_range cmp = tt_function_range("cmp_and_suspend", (const void *)cmp_and_suspend);
    tt_range sorter = tt_function_range("sort_and_suspend", (const void *)sort_and_suspend);
    tt_range loop = tt_function_range("event_loop", (const void *)event_loop);
    size_t dumps = 0, named = 0, through_libc = 0, outside = 0;
    for (size_t i = 0; i < t.ndumps; i++) {
        const tt_dump *d = &t.dumps[i];
        if (d->task != TASK) continue;
        dumps++;
        /* the leaf, or the next frame when the d9_task_suspend wrapper was not inlined (-O0) */
        uint32_t at = tt_in(cmp, d->frames[0]) ? 0 : 1;
        bool leaf = at < d->n && tt_in(cmp, d->frames[at]);
        bool libc = at + 1 < d->n && in_libc(d->frames[at + 1]);
        bool callers = tt_stack_has(d->frames + at + 1, d->n - at - 1, sorter) &&
                       tt_stack_has(d->frames + at + 1, d->n - at - 1, loop);
        named += leaf && callers;
        through_libc += leaf && libc;
        for (uint32_t k = 0; k < d->n; k++) outside += !is_code(d->frames[k]);
        if (getenv("D9_TEST_VERBOSE")) {
            fprintf(stderr, "dump:");
            for (uint32_t k = 0; k < d->n && k < 16; k++) {
                Dl_info info;
                if (dladdr((void *)(uintptr_t)d->frames[k], &info) && info.dli_sname) fprintf(stderr, " %s", info.dli_sname);
                else fprintf(stderr, " %" PRIx64, d->frames[k]);
            }
            fprintf(stderr, "\n");
        }
    }
    printf("%zu dumps of %d suspensions: %zu name sort_and_suspend and event_loop above cmp_and_suspend, %zu with a "
           "libc frame right above it, %zu frames outside code; origins: fp %" PRIu64 ", cfi %" PRIu64
           ", truncated %" PRIu64 "\n",
           dumps, ROUNDS, named, through_libc, outside, o.counts[D9_STACK_FP], o.counts[D9_STACK_CFI],
           o.counts[D9_STACK_TRUNCATED]);
    CHECK(dumps >= ROUNDS / 2);
    CHECK_EQ_U64(outside, 0);
    if (TT_INTERCEPTED) {
        printf("SKIP the libc qsort frames: the sanitizer's interceptor replaces libc's qsort\n");
    } else {
        CHECK_EQ_U64(through_libc, dumps); /* the caller of cmp is libc's sort */
        CHECK_EQ_U64(named, dumps);        /* and the walk goes on through it to the application */
        CHECK(o.counts[D9_STACK_CFI] > 0);
    }
    tt_free(&t);
    d9t_rm_rf(dir);
    free(dir);
    return d9t_summary("source_dump_unwind");
}
