/* Our traces carry every field dial9 requires (tests/vectors/dial9_required_fields.tsv: its
 * viewer throws on a park or unpark without cpu_time_ns, and loads nothing), with dial9's types,
 * recorded with the defaults, with every source on, and zero-code (`dial9 run`), spans included
 * (dial9's SpanEnterEvent / SpanExitEvent fields, which its viewer reads); the adapters'
 * tests make the same check on their loops' traces (adapter_trace_checks.h). And the CPU time
 * is true: a park after busy work has a cpu_time_ns above its unpark's by at least the CPU that
 * work took (measured by the thread itself between the two calls: a loop of fixed length costs
 * CPU whatever the machine's load), even where schedstat is not read (default resolution).
 * That comparison is made by system call (DIAL9_THREAD_CPU=syscall: the same clock as the
 * test's); from the task-clock page (the default where the kernel gives it) the values are
 * perf's task clock, which leaves out the kernel's switch path that CLOCK_THREAD_CPUTIME_ID
 * counts (a few us per switch: 3-14 % of a 0.3 ms work under load), so there they are checked
 * to never go down, and test_mt_thread_cpu_clock_kernel checks them against their own clock. */
#include <dirent.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "dial9/dial9.h"
#include "dial9_required_fields.h"
#include "trace_files_util.h"

#define ROUNDS 40

static uint64_t thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CPU the loop took, by the thread's own clock. */
static uint64_t busy_work(void) {
    uint64_t t0 = thread_cpu_ns();
    volatile uint64_t x = 0;
    for (int i = 0; i < 200000; i++) x += (uint64_t)i * 7;
    return thread_cpu_ns() - t0;
}

typedef struct worker_parks {
    uint32_t tid;
    int n;
    uint64_t cpu[2 * ROUNDS + 2];
    bool unpark[2 * ROUNDS + 2];
    int span_enters, span_exits;
} worker_parks;

static void collect(const d9_event *ev, void *ctx) {
    worker_parks *w = ctx;
    w->span_enters += d9t_is(ev, "SpanEnterEvent");
    w->span_exits += d9t_is(ev, "SpanExitEvent");
    bool park = d9t_is(ev, "WorkerParkEvent"), unpark = d9t_is(ev, "WorkerUnparkEvent");
    if ((!park && !unpark) || d9t_field_u(ev, "tid") != w->tid || w->n == 2 * ROUNDS + 2) return;
    w->unpark[w->n] = unpark;
    w->cpu[w->n++] = d9t_field_u(ev, "cpu_time_ns");
}

/* ROUNDS of unpark, a poll with busy work, park; each park's CPU time must have grown from its
 * unpark's by the work's CPU. `every_source`: CPU samples, switches, task dumps, schedstat at
 * every call. */
static void record_in_process(bool every_source, bool page) {
    const char *what = page ? (every_source ? "every source on, the page" : "defaults, the page")
                            : (every_source ? "every source on" : "defaults");
    setenv("DIAL9_THREAD_CPU", page ? "auto" : "syscall", 1);
    char *dir = d9t_mkdtemp("d9fields");
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    if (every_source) {
        cfg.cpu_profile = true;
        cfg.schedule_profile = true;
        cfg.task_dumps = true;
        cfg.schedstat_resolution_us = 0;
    }
    CHECK(d9_start(&cfg) == 0);
    d9_worker_begin("fields", 0);
    uint64_t work[ROUNDS];
    d9_park();
    for (int i = 0; i < ROUNDS; i++) {
        d9_unpark();
        d9_task_spawn((uint64_t)i + 1, D9_HERE);
        d9_poll_begin((uint64_t)i + 1, D9_HERE);
        d9_span_begin(D9_SPAN_NAME("round"), (uint64_t)i);
        work[i] = busy_work();
        d9_wake((uint64_t)i + 1);
        d9_poll_end();
        d9_span_end(D9_SPAN_NAME("round"), (uint64_t)i); /* outside a poll: task 0 */
        d9_task_terminate((uint64_t)i + 1);
        d9_park();
    }
    d9_unpark();
    d9_worker_end();
    d9_stop();

    CHECK_EQ_U64(d9f_check_run(d9_run_dir(), what), 2 * ROUNDS + 2);
    worker_parks w = {.tid = (uint32_t)gettid()};
    CHECK_EQ_U64(d9t_decode_run(d9_run_dir(), collect, &w), 0);
    CHECK_EQ_U64(w.n, 2 * ROUNDS + 2);
    CHECK_EQ_U64(w.span_enters, ROUNDS); /* checked against dial9's span fields above */
    CHECK_EQ_U64(w.span_exits, ROUNDS);
    unsetenv("DIAL9_THREAD_CPU");
    int stale = 0, shown = 0;
    for (int i = 0; i < ROUNDS && w.n == 2 * ROUNDS + 2; i++) {
        uint64_t unpark = w.cpu[1 + 2 * i], park = w.cpu[2 + 2 * i];
        CHECK(w.unpark[1 + 2 * i] && !w.unpark[2 + 2 * i]);
        shown += park >= unpark && park - unpark >= work[i];
        if (page ? park < unpark || unpark < w.cpu[2 * i] : park < unpark || park - unpark < work[i]) {
            if (stale++ == 0)
                fprintf(stderr, "%s, round %d: park CPU %llu - unpark CPU %llu < the work's %llu ns\n", what, i,
                        (unsigned long long)park, (unsigned long long)unpark, (unsigned long long)work[i]);
        }
    }
    CHECK_EQ_U64(stale, 0);
    if (page)
        printf("%s: %d parks, never down; grown by at least the work's CLOCK_THREAD_CPUTIME_ID in %d of %d\n", what,
               w.n, shown, ROUNDS);
    else
        printf("%s: %d parks, the CPU time of each grown by its work (%llu ns in the first)\n", what, w.n,
               (unsigned long long)work[0]);
    d9t_rm_rf(dir);
    free(dir);
}

/* Whether the shim names a sanitizer's runtime (a sanitizer build): it then cannot be preloaded
 * into a plain program, the runtime must come first (as tests/preload/preload_lib.sh says). */
static bool shim_sanitized(const char *shim) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    (void)shim;
    return true;
#else
    FILE *f = fopen(shim, "rb");
    if (!f) return false;
    static char buf[1 << 16];
    bool found = false;
    size_t n;
    /* the needed libraries' names sit in .dynstr, near the start: a name split across two
     * reads is missed, never one of those */
    while (!found && (n = fread(buf, 1, sizeof buf, f)) > 0)
        for (const char *rt = "libasan.so\0libtsan.so\0libubsan.so\0liblsan.so\0"; *rt && !found; rt += strlen(rt) + 1)
            found = memmem(buf, n, rt, strlen(rt)) != NULL;
    fclose(f);
    return found;
#endif
}

/* `dial9 run` of a home-grown epoll loop (tests/preload/d9p_behave): parks from the shim. */
static void record_zero_code(void) {
    const char *build = getenv("D9_BUILD_DIR");
    CHECK(build != NULL);
    if (!build) return;
    char cli[4096], behave[4096], shim[4096];
    snprintf(cli, sizeof cli, "%s/dial9", build);
    snprintf(behave, sizeof behave, "%s/tests/preload/d9p_behave", build);
    snprintf(shim, sizeof shim, "%s/libdial9-preload.so", build);
    if (shim_sanitized(shim)) {
        printf("zero-code: skipped, the preload shim is built with a sanitizer (it cannot be preloaded into plain programs)\n");
        return;
    }
    CHECK(access(cli, X_OK) == 0 && access(behave, X_OK) == 0);
    char *dir = d9t_mkdtemp("d9fields-run");
    pid_t pid = fork();
    if (pid == 0) {
        execl(cli, cli, "run", "-q", "-d", dir, "--", behave, "epoll-loop", (char *)NULL);
        _exit(127);
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    char run[4096] = "";
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));)
        if (e->d_name[0] != '.') snprintf(run, sizeof run, "%s/%s", dir, e->d_name);
    if (d) closedir(d);
    CHECK(run[0] != '\0');
    if (run[0]) CHECK(d9f_check_run(run, "zero-code") > 0);
    d9t_rm_rf(dir);
    free(dir);
}

int main(void) {
    record_in_process(false, false);
    record_in_process(true, false);
    record_in_process(false, true);
    record_in_process(true, true);
    record_zero_code();
    return d9t_summary("test_dial9_required_fields");
}
