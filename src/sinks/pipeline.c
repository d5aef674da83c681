/* The sealed-segment pipeline. The collector thread only queues a copy of each sealed path;
 * a thread of the lowest scheduling class (SCHED_IDLE, else nice 19) symbolizes the files in
 * order, appending SymbolTableEntry events to each. d9_pipeline_stop lifts the thread back to
 * normal priority, lets it finish the queue within STOP_BUDGET_NS and then makes it give up
 * (files left unsymbolized can still be done offline with `dial9 symbolize`). */
#include "sinks/pipeline.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "symbols/symbolize_file.h"
#include "symbols/symbolize_report.h"
#include "symbols/symbolizer.h"

#define QUEUE_CAP 256 /* paths; a longer backlog means symbolizing cannot keep up */
#define STOP_BUDGET_NS (5ull * 1000000000ull)

struct d9_pipeline {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake; /* work arrived or stop requested */
    pthread_cond_t idle; /* the queue drained or the thread ended */
    char *queue[QUEUE_CAP];
    size_t head, count;
    bool stopping, finished;
    atomic_bool give_up;
    d9_symbolizer *sym;  /* the worker's only */
    d9_pipeline_resized_fn on_resized;
    void *on_resized_ctx;
    uint64_t max_file_size; /* symbols never take a segment past it */
    uint64_t max_growth;    /* nor grow it by more than this */
};

static bool should_give_up(void *ctx) {
    d9_pipeline *p = ctx;
    return atomic_load_explicit(&p->give_up, memory_order_relaxed);
}

static void lower_priority(void) {
    struct sched_param sp = {.sched_priority = 0};
    if (pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp) != 0)
        setpriority(PRIO_PROCESS, (id_t)gettid(), 19); /* per thread on Linux */
}

static void symbolize_one(d9_pipeline *p, const char *path) {
    d9_symbolize_report r = {0};
    if (!p->sym) {
        d9_sym_options opt = {.system_debug_dir = true};
        p->sym = d9_symbolizer_new(&opt);
    }
    d9_symbolize_stats st;
    char err[512] = "out of memory";
    memset(&st, 0, sizeof st);
    int rc = p->sym ? d9_symbolize_file_in_place(p->sym, path, p->max_file_size, p->max_growth, &st,
                                                 should_give_up, p, err, sizeof err)
                    : -1;
    /* Done with the file, whatever happened: its size is final, so the writer's disk budget
     * counts it as it is from now on (it held room for the symbols until now). */
    struct stat sb;
    if (p->on_resized && stat(path, &sb) == 0) p->on_resized(path, (uint64_t)sb.st_size, p->on_resized_ctx);
    if (rc != 0 && should_give_up(p)) {
        r.files_skipped = 1; /* out of time at stop: left unchanged */
    } else if (rc == 0) {
        r.files_symbolized = 1;
        r.no_room = st.no_room;
        r.addresses = st.addresses;
        r.named = st.named;
        r.entries = st.entries;
        r.bytes_appended = st.bytes;
    } else {
        r.files_failed = 1;
        snprintf(r.last_error, sizeof r.last_error, "%s", err);
    }
    d9_symbolize_report_add(&r);
}

static void *worker_main(void *arg) {
    d9_pipeline *p = arg;
    pthread_mutex_lock(&p->lock);
    /* Under the lock: a stop that came first has already asked for normal priority. */
    if (!p->stopping) lower_priority();
    for (;;) {
        while (p->count == 0 && !p->stopping) {
            pthread_cond_broadcast(&p->idle);
            pthread_cond_wait(&p->wake, &p->lock);
        }
        if (p->count == 0) break; /* stopping with nothing left */
        char *path = p->queue[p->head];
        p->head = (p->head + 1) % QUEUE_CAP;
        p->count--;
        pthread_mutex_unlock(&p->lock);
        if (should_give_up(p)) {
            d9_symbolize_report r = {.files_skipped = 1};
            d9_symbolize_report_add(&r);
        } else {
            symbolize_one(p, path);
        }
        free(path);
        pthread_mutex_lock(&p->lock);
    }
    p->finished = true;
    pthread_cond_broadcast(&p->idle);
    pthread_mutex_unlock(&p->lock);
    d9_symbolizer_free(p->sym);
    p->sym = NULL;
    return NULL;
}

d9_pipeline *d9_pipeline_start(const d9_config *cfg) {
    if (!cfg->symbolize) return NULL;
    d9_symbolize_report_reset();
    d9_pipeline *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->max_file_size = cfg->max_file_size;
    /* Symbols take a few KB per segment: 1/32 of a large one is plenty, up to half of a small
     * one (what does not fit can still be named offline by `dial9 symbolize -o`). */
    uint64_t growth = cfg->max_file_size / 32;
    if (growth < 65536) growth = cfg->max_file_size / 2 < 65536 ? cfg->max_file_size / 2 : 65536;
    p->max_growth = growth ? growth : 1;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->wake, NULL);
    /* d9_pipeline_stop's deadline must not move with the wall clock. */
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&p->idle, &attr);
    pthread_condattr_destroy(&attr);
    atomic_init(&p->give_up, false);
    /* The thread must not take the application's signals. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&p->thread, NULL, worker_main, p);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        pthread_mutex_destroy(&p->lock);
        pthread_cond_destroy(&p->wake);
        pthread_cond_destroy(&p->idle);
        free(p);
        return NULL;
    }
    pthread_setname_np(p->thread, "dial9-symbols");
    return p;
}

uint64_t d9_pipeline_max_growth(const d9_pipeline *p) { return p ? p->max_growth : 0; }

void d9_pipeline_set_on_resized(d9_pipeline *p, d9_pipeline_resized_fn fn, void *ctx) {
    if (!p) return;
    pthread_mutex_lock(&p->lock);
    p->on_resized = fn;
    p->on_resized_ctx = ctx;
    pthread_mutex_unlock(&p->lock);
}

void d9_pipeline_on_sealed(const char *path, void *pipeline) {
    d9_pipeline *p = pipeline;
    char *copy = strdup(path);
    pthread_mutex_lock(&p->lock);
    if (!copy || p->count == QUEUE_CAP || p->finished) {
        d9_symbolize_report r = {.files_dropped = 1};
        d9_symbolize_report_add(&r);
        free(copy);
    } else {
        p->queue[(p->head + p->count) % QUEUE_CAP] = copy;
        p->count++;
        pthread_cond_signal(&p->wake);
    }
    pthread_mutex_unlock(&p->lock);
}

static void deadline_after(struct timespec *ts, uint64_t ns) {
    clock_gettime(CLOCK_MONOTONIC, ts); /* the clock of the idle condition */
    uint64_t t = (uint64_t)ts->tv_nsec + ns;
    ts->tv_sec += (time_t)(t / 1000000000u);
    ts->tv_nsec = (long)(t % 1000000000u);
}

void d9_pipeline_stop(d9_pipeline *p) {
    if (!p) return;
    struct timespec until;
    deadline_after(&until, STOP_BUDGET_NS);
    pthread_mutex_lock(&p->lock);
    p->stopping = true;
    /* The caller waits for us now: SCHED_IDLE could starve on a busy machine. (Where only
     * nice 19 could be set, an unprivileged thread cannot undo it.) */
    struct sched_param sp = {.sched_priority = 0};
    pthread_setschedparam(p->thread, SCHED_OTHER, &sp);
    pthread_cond_signal(&p->wake);
    while (!p->finished) {
        if (pthread_cond_timedwait(&p->idle, &p->lock, &until) != 0 && !p->finished) {
            atomic_store(&p->give_up, true); /* out of time: skip what is left */
            break;
        }
    }
    pthread_mutex_unlock(&p->lock);
    pthread_join(p->thread, NULL);
    d9_symbolize_report r = {.files_skipped = p->count};
    d9_symbolize_report_add(&r);
    for (size_t i = 0; i < p->count; i++) free(p->queue[(p->head + i) % QUEUE_CAP]);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->idle);
    free(p);
}
