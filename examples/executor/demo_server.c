/* executor_demo: a simulated request server on the example executor, recorded by dial9.
 *
 * An acceptor thread spawns one "connection" task per request, at a steady rate. Each
 * connection is a small state machine:
 *
 *   READ_REQUEST  parse (a few µs of CPU), then yield to let other tasks run
 *   ASK_BACKEND   send a query to the backend thread, wait for its reply (cross-thread wake)
 *   RENDER        compute the response; about one request in 500 is a "report" that takes
 *                 ~12 ms of CPU in a single poll — the slow poll the trace should reveal
 *   WRITE         wait for the socket to drain (a timer, woken from the timer thread)
 *   AUDIT         one request in four spawns an audit task and waits for it (task → task wake)
 *
 * Offered more than it can serve, it sheds load like a server whose listen backlog is full:
 * past --max-inflight requests in progress, new ones are rejected (and counted).
 *
 * Usage: executor_demo [--workers N] [--seconds S] [--trace-dir D] [--rate R] [--max-inflight M]
 * Recording follows the DIAL9_* environment variables; --trace-dir overrides DIAL9_TRACE_DIR.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <dial9/dial9.h>

#include "backend.h"
#include "executor.h"
#include "oneshot.h"
#include "timer.h"

#define SLOW_ONE_IN 500
#define SLOW_POLL_US 12000
#define AUDIT_ONE_IN 4

typedef struct demo_options {
    uint32_t workers;
    double seconds;
    double rate;              /* requests per second */
    uint32_t max_inflight;    /* accepted and not yet completed, at most */
    const char *trace_dir;    /* NULL: DIAL9_TRACE_DIR or the library default */
} demo_options;

typedef struct demo_app {
    ex_executor *ex;
    ex_timer *timer;
    ex_backend *backend;
    demo_options opt;
    _Atomic bool stop_accepting;
    _Atomic uint64_t offered, accepted, rejected, completed, slow, audits;
} demo_app;

/* ------------------------------------------------------------------ simulated work */

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Compute for about `us` microseconds: real arithmetic (what a CPU profile will show), with
 * the clock read only between rounds. Returns the result so the work cannot be optimized out. */
__attribute__((noinline)) static uint64_t compute_us(uint64_t us, uint64_t seed) {
    uint64_t end = now_ns() + us * 1000u, x = seed | 1;
    do {
        for (int i = 0; i < 256; i++) x = x * 6364136223846793005ull + 1442695040888963407ull;
    } while (now_ns() < end);
    return x;
}

/* The response of an ordinary request: tens of microseconds. */
__attribute__((noinline)) static uint64_t render_page(uint64_t value) {
    return compute_us(15 + value % 20, value) ^ value; /* not a tail call: stays in stacks */
}

/* About one request in 500 asks for a report that takes ~12 ms of CPU, computed inline in a
 * single poll: every other task queued on this worker waits meanwhile. This is what the trace
 * should reveal (longest polls, and with CPU profiling on, render_report in their stacks). */
__attribute__((noinline)) static uint64_t render_report(uint64_t value) {
    return compute_us(SLOW_POLL_US, value) ^ value;
}

static uint64_t mix(uint64_t x) {
    x ^= x >> 31;
    x *= 0x7fb5d329728ea185ull;
    return x ^ (x >> 27);
}

/* ------------------------------------------------------------------ the audit task */

typedef struct audit {
    ex_oneshot *parent_waits; /* lives in the parent connection until it receives */
    uint64_t request_no;
} audit;

static ex_poll_result audit_poll(ex_task *self, void *data) {
    audit *a = data;
    uint64_t digest = compute_us(3, a->request_no);
    /* Wakes the parent from inside this task: the trace links the two tasks. */
    ex_oneshot_send(a->parent_waits, digest);
    free(a);
    return EX_READY;
}

/* ------------------------------------------------------------------ the connection task */

enum conn_step { READ_REQUEST, ASK_BACKEND, RENDER, WRITE, AUDIT };

typedef struct connection {
    enum conn_step step;
    uint64_t request_no;
    demo_app *app;
    uint64_t checksum;        /* what the simulated work computed */
    ex_oneshot waiting;       /* what the connection currently waits for */
} connection;

static ex_poll_result connection_poll(ex_task *self, void *data) {
    connection *c = data;
    demo_app *app = c->app;
    uint64_t value;
    switch (c->step) {
    case READ_REQUEST:
        c->checksum = compute_us(5, c->request_no); /* parse the request */
        c->step = ASK_BACKEND;
        ex_yield(self); /* be fair to the other connections between steps */
        return EX_PENDING;

    case ASK_BACKEND:
        ex_oneshot_init(&c->waiting);
        ex_backend_query(app->backend, c->request_no, &c->waiting);
        c->step = RENDER;
        /* go on: poll the reply channel now, which registers our waker */
        __attribute__((fallthrough));
    case RENDER:
        if (!ex_oneshot_poll(&c->waiting, self, &value)) return EX_PENDING;
        if (mix(c->request_no + 1) % SLOW_ONE_IN == 0) {
            atomic_fetch_add(&app->slow, 1);
            c->checksum ^= render_report(value); /* the deliberate slow poll */
        } else {
            c->checksum ^= render_page(value);
        }
        ex_oneshot_init(&c->waiting);
        ex_timer_after(app->timer, 100 + value % 400, &c->waiting);
        c->step = WRITE;
        __attribute__((fallthrough));
    case WRITE:
        if (!ex_oneshot_poll(&c->waiting, self, &value)) return EX_PENDING;
        if (c->request_no % AUDIT_ONE_IN != 0) break;
        audit *a = malloc(sizeof *a);
        if (!a) break;
        *a = (audit){&c->waiting, c->request_no};
        ex_oneshot_init(&c->waiting);
        if (ex_spawn(app->ex, audit_poll, a) == 0) {
            free(a);
            break;
        }
        atomic_fetch_add(&app->audits, 1);
        c->step = AUDIT;
        __attribute__((fallthrough));
    case AUDIT:
        if (!ex_oneshot_poll(&c->waiting, self, &value)) return EX_PENDING;
        break;
    }
    atomic_fetch_add(&app->completed, 1);
    free(c);
    return EX_READY;
}

/* ------------------------------------------------------------------ the acceptor thread */

static void *acceptor_main(void *arg) {
    demo_app *app = arg;
    const uint64_t tick_ns = 1000000; /* accept in 1 ms batches, like a listen backlog */
    uint64_t start = now_ns(), next = start;
    uint64_t spawned = 0;
    while (!atomic_load(&app->stop_accepting)) {
        next += tick_ns;
        struct timespec until = {(time_t)(next / 1000000000u), (long)(next % 1000000000u)};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL);
        uint64_t due = (uint64_t)((double)(now_ns() - start) * 1e-9 * app->opt.rate);
        for (; spawned < due; spawned++) {
            atomic_fetch_add(&app->offered, 1);
            /* Overloaded: refuse rather than queue without bound (memory, and a backlog
             * whose latency grows without limit). */
            uint64_t inflight = atomic_load(&app->accepted) - atomic_load(&app->completed);
            connection *c = inflight < app->opt.max_inflight ? calloc(1, sizeof *c) : NULL;
            if (!c) {
                atomic_fetch_add(&app->rejected, 1);
                continue;
            }
            c->step = READ_REQUEST;
            c->request_no = spawned;
            c->app = app;
            /* Spawned from a thread that is not a worker: the task is queued round-robin. */
            if (ex_spawn(app->ex, connection_poll, c) == 0) {
                free(c);
                atomic_fetch_add(&app->rejected, 1);
                continue;
            }
            atomic_fetch_add(&app->accepted, 1);
        }
    }
    return NULL;
}

/* ------------------------------------------------------------------ main */

static void usage(FILE *to) {
    fprintf(to, "usage: executor_demo [--workers N] [--seconds S] [--trace-dir D] [--rate R]\n"
                "                     [--max-inflight M]\n"
                "  --workers N       worker threads (default 4)\n"
                "  --seconds S       how long to accept requests (default 3)\n"
                "  --trace-dir D     where to record (default: DIAL9_TRACE_DIR or /tmp/dial9-traces)\n"
                "  --rate R          requests per second (default 4000)\n"
                "  --max-inflight M  requests in progress at most; more are rejected (default 10000)\n");
}

static int parse_options(int argc, char **argv, demo_options *opt) {
    *opt = (demo_options){.workers = 4, .seconds = 3, .rate = 4000, .max_inflight = 10000};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            exit(0);
        }
        if (i + 1 >= argc) goto bad;
        const char *v = argv[++i];
        char *end;
        errno = 0;
        if (strcmp(a, "--workers") == 0) {
            unsigned long n = strtoul(v, &end, 10);
            if (*end || errno || n < 1 || n > 64) goto bad;
            opt->workers = (uint32_t)n;
        } else if (strcmp(a, "--seconds") == 0) {
            opt->seconds = strtod(v, &end);
            if (*end || errno || !(opt->seconds > 0 && opt->seconds <= 3600)) goto bad;
        } else if (strcmp(a, "--rate") == 0) {
            opt->rate = strtod(v, &end);
            if (*end || errno || !(opt->rate > 0 && opt->rate <= 1e6)) goto bad;
        } else if (strcmp(a, "--max-inflight") == 0) {
            unsigned long n = strtoul(v, &end, 10);
            if (*end || errno || n < 1 || n > 10000000) goto bad;
            opt->max_inflight = (uint32_t)n;
        } else if (strcmp(a, "--trace-dir") == 0) {
            opt->trace_dir = v;
        } else {
            goto bad;
        }
        continue;
    bad:
        fprintf(stderr, "executor_demo: bad argument '%s'\n", a);
        usage(stderr);
        return -1;
    }
    return 0;
}

/* The workload runs whatever happens to recording: a bad DIAL9_* value or an unusable trace
 * directory is one line on stderr, then nothing is recorded (d9_start_or_disabled). */
static void start_recording(const demo_options *opt) {
    d9_config cfg;
    if (d9_config_from_env(&cfg) != 0) /* cfg is left disabled */
        fprintf(stderr, "executor_demo: dial9: recording disabled: %s\n", d9_last_error());
    if (opt->trace_dir) cfg.trace_dir = opt->trace_dir;
    d9_start_or_disabled(&cfg);
}

int main(int argc, char **argv) {
    demo_app app = {0};
    if (parse_options(argc, argv, &app.opt) != 0) return 2;
    start_recording(&app.opt);
    const char *run_dir = d9_run_dir();
    printf("executor_demo: %u workers, %.1f s at %.0f requests/s, recording %s\n",
           app.opt.workers, app.opt.seconds, app.opt.rate,
           run_dir ? run_dir : "nothing (disabled)");
    fflush(stdout);

    app.timer = ex_timer_start();
    app.backend = ex_backend_start(500);
    app.ex = ex_executor_start(app.opt.workers);
    if (!app.timer || !app.backend || !app.ex) {
        perror("executor_demo: start");
        return 1;
    }
    pthread_t acceptor;
    if (pthread_create(&acceptor, NULL, acceptor_main, &app) != 0) {
        perror("executor_demo: acceptor");
        return 1;
    }
    pthread_setname_np(acceptor, "acceptor");

    uint64_t run_ns = (uint64_t)(app.opt.seconds * 1e9);
    nanosleep(&(struct timespec){(time_t)(run_ns / 1000000000u), (long)(run_ns % 1000000000u)}, NULL);
    atomic_store(&app.stop_accepting, true);
    pthread_join(acceptor, NULL);

    /* Shutdown in the order of ownership. Tasks use the timer and the backend, so those stay
     * until every accepted request has finished, however long the backlog takes (at most
     * --max-inflight requests): stopping them earlier frees what a task is about to call.
     * Then the timer and backend threads, which may still be inside a wake that touches the
     * executor, and only then the executor. */
    while (!ex_executor_wait_idle(app.ex, 5000))
        fprintf(stderr, "executor_demo: still %" PRIu64 " requests in progress, waiting\n",
                atomic_load(&app.accepted) - atomic_load(&app.completed));
    ex_timer_stop(app.timer);
    ex_backend_stop(app.backend);
    ex_executor_stats es;
    ex_executor_stop(app.ex, &es);
    d9_stop();

    d9_stats ds;
    d9_get_stats(&ds);
    printf("requests  %" PRIu64 " offered, %" PRIu64 " accepted, %" PRIu64 " rejected (overloaded), %"
           PRIu64 " completed (%" PRIu64 " with an audit task, %" PRIu64 " slow ~%u ms polls)\n",
           atomic_load(&app.offered), atomic_load(&app.accepted), atomic_load(&app.rejected),
           atomic_load(&app.completed), atomic_load(&app.audits), atomic_load(&app.slow),
           SLOW_POLL_US / 1000);
    printf("executor  %" PRIu64 " tasks, %" PRIu64 " polls, %" PRIu64 " wakes, %" PRIu64
           " tasks stolen, %" PRIu64 " parks\n",
           es.spawned, es.polls, es.wakes, es.stolen, es.parks);
    if (run_dir) {
        printf("dial9     %" PRIu64 " events recorded, %" PRIu64 " dropped, %" PRIu64
               " bytes in %" PRIu64 " segment(s)\n",
               ds.events_recorded, ds.events_dropped, ds.bytes_written, ds.segments_sealed);
        printf("trace     %s\n", run_dir);
    }
    return 0;
}
