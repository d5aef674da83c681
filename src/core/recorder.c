/* Recorder lifecycle: start, stop, the background thread that drains the buffers, flush on
 * demand, at exit, and what a forked child inherits (nothing: it records nothing until it
 * calls d9_start itself). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/collector.h"
#include "core/collector_wake.h"
#include "core/config_abi.h"
#include "core/flight_recorder.h"
#include "core/flight_rule_wake.h"
#include "core/fork_guard.h"
#include "core/last_error.h"
#include "core/own_thread_name.h"
#include "core/pause_ends.h"
#include "core/recorder_hooks.h"
#include "core/run_metadata.h"
#include "core/schedstat.h"
#include "core/poll_cpu.h"
#include "core/thread_cpu_clock.h"
#include "core/thread_cpu_time.h"
#include "core/thread_buffer.h"
#include "dial9/dial9.h"
#include "sinks/pipeline.h"
#include "sources/sources.h"

typedef struct recorder {
    pthread_mutex_t lifecycle;   /* start/stop/get_stats */
    bool running;
    d9_config cfg;
    char *trace_dir, *service;
    char run_id[96];
    char *run_dir;
    d9_collector *col;
    d9_pipeline *pipeline;
    pthread_mutex_t col_lock;    /* col as seen by the pipeline's thread (on_resized) */
    d9_stats last_stats;         /* kept after d9_stop */
    pthread_t thread;
    bool thread_started;         /* not for a program already ending (start) */

    pthread_mutex_t wake_lock;   /* stop and flush requests (the sleep: collector_wake.h) */
    pthread_cond_t flushed;
    bool stop_requested;
    uint64_t flush_requested, flush_done;
} recorder;

static recorder g_rec = {
    .lifecycle = PTHREAD_MUTEX_INITIALIZER,
    .col_lock = PTHREAD_MUTEX_INITIALIZER,
    .wake_lock = PTHREAD_MUTEX_INITIALIZER,
    .flushed = PTHREAD_COND_INITIALIZER,
};

static void *background_main(void *arg) {
    recorder *r = arg;
    d9_name_own_thread("dial9-collect");
    uint32_t max_ms = r->cfg.flush_ms, interval_ms = max_ms;
    bool follow_up = false; /* a drain 1 ms after one a poll end asked for (flight_rule_wake.h) */
    uint32_t seen = d9_collector_wake_seen(); /* read before each drain: a wake during it is kept */
    pthread_mutex_lock(&r->wake_lock);
    while (!r->stop_requested) {
        if (r->flush_requested == r->flush_done) {
            pthread_mutex_unlock(&r->wake_lock);
            d9_collector_sleep(seen, follow_up ? 1 : interval_ms);
            pthread_mutex_lock(&r->wake_lock);
            if (r->stop_requested) break;
        }
        uint64_t flush_target = r->flush_requested;
        pthread_mutex_unlock(&r->wake_lock);

        seen = d9_collector_wake_seen();
        /* a wake asked for by a poll end past a rule's threshold: this drain, and one more
         * 1 ms later for the ends whose wakes the 1 ms rate limit held back */
        bool woken = d9_rule_wake_take();
        d9_rule_wake_in_drain = woken;
        follow_up = woken;
        double fill = d9_collector_drain(r->col);
        d9_rule_wake_in_drain = false;
        /* Drain sooner while buffers fill up (a burst), relax back to flush_ms once they hold
         * little: the rings above D9_RING_GROW_FILL grow meanwhile, so a steady rate ends at
         * flush_ms with rings large enough for it, not at 1 ms drains of small rings. */
        if (fill > 2 * D9_RING_GROW_FILL) interval_ms = interval_ms > 2 ? interval_ms / 2 : 1;
        else if (fill <= D9_RING_GROW_FILL && interval_ms < max_ms) interval_ms = interval_ms * 2 < max_ms ? interval_ms * 2 : max_ms;

        pthread_mutex_lock(&r->wake_lock);
        if (flush_target > r->flush_done) {
            r->flush_done = flush_target;
            pthread_cond_broadcast(&r->flushed);
        }
    }
    pthread_mutex_unlock(&r->wake_lock);
    return NULL;
}

void d9_recorder_forget_after_fork(void) {
    /* The child has our memory but not our background thread, and must never write into the
     * parent's files: drop everything without touching it. */
    __atomic_store_n(&d9__active, 0, __ATOMIC_RELAXED);
    d9_pause_ends_clear();
    d9_clock_forget_after_fork();
    d9_thread_cpu_clock_forget_after_fork();
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
    g_rec.lifecycle = m;
    g_rec.col_lock = m;
    g_rec.wake_lock = m;
    g_rec.flushed = cv;
    g_rec.running = false;
    g_rec.col = NULL;
    g_rec.pipeline = NULL;
    g_rec.stop_requested = false;
    g_rec.flush_requested = g_rec.flush_done = 0;
    d9_threads_forget_after_fork();
    d9_flight_forget_after_fork();
}

/* Registered at the first start, so it runs before the exit handlers registered earlier (the
 * preload shim's among them): a start still in progress on another thread (the shim's) holds
 * the lifecycle lock, and d9_stop waits for it. Say first that the process is ending, so that
 * the start skips the perf events it has not reached yet (sources.h). */
static void at_exit_stop(void) {
    d9_sources_process_ending();
    d9_stop();
}

/* The pipeline grew a sealed segment (symbols): the writer's disk budget must count it. The
 * pipeline outlives the collector at stop, hence the lock and the NULL check. */
static void on_segment_resized(const char *path, uint64_t new_size, void *ctx) {
    recorder *r = ctx;
    pthread_mutex_lock(&r->col_lock);
    if (r->col) d9_collector_note_resized(r->col, path, new_size);
    pthread_mutex_unlock(&r->col_lock);
}

/* Close the collector where the pipeline's thread may look at it. */
static void close_collector(recorder *r, d9_stats *final_stats) {
    d9_pipeline_closing(r->pipeline); /* the last seals: prepared by d9_pipeline_stop, no thread */
    d9_flight_collector_closing();
    pthread_mutex_lock(&r->col_lock);
    d9_collector_close(r->col, final_stats);
    r->col = NULL;
    pthread_mutex_unlock(&r->col_lock);
    d9_flight_stop(); /* its last segments are in: the dumps under way end */
}

static void install_process_hooks(void) {
    d9_fork_guard_install();
    atexit(at_exit_stop);
}

static uint64_t ring_words_for(uint32_t buffer_kb) {
    uint64_t words = (uint64_t)buffer_kb * 1024 / 8, p = 1;
    while (p < words) p <<= 1;
    return p;
}

static void free_strings(recorder *r) {
    free(r->trace_dir);
    free(r->service);
    free(r->run_dir);
    r->trace_dir = r->service = r->run_dir = NULL;
}

/* Called when a run starts, before any hook records (see d9__on_recording_start). */
#define MAX_START_HOOKS 8
static void (*g_start_hooks[MAX_START_HOOKS])(void);
static _Atomic unsigned g_nstart_hooks;

void d9__on_recording_start(void (*fn)(void)) {
    unsigned i = atomic_fetch_add(&g_nstart_hooks, 1);
    if (i < MAX_START_HOOKS) __atomic_store_n(&g_start_hooks[i], fn, __ATOMIC_RELEASE);
}

static void run_start_hooks(void) {
    unsigned n = atomic_load(&g_nstart_hooks);
    for (unsigned i = 0; i < n && i < MAX_START_HOOKS; i++) {
        void (*fn)(void) = __atomic_load_n(&g_start_hooks[i], __ATOMIC_ACQUIRE);
        if (fn) fn();
    }
}

/* The plugin point of recorder_hooks.h: one function, for the preload shim's notes. */
static _Atomic(d9_on_sources_started_fn) g_on_sources_started;

void d9_recorder_set_on_sources_started(d9_on_sources_started_fn fn) {
    atomic_store_explicit(&g_on_sources_started, fn, memory_order_release);
}

static int start(const d9_config *cfg);

/* The caller's struct may be another version's (struct_size): only a whole d9_config of this
 * version goes further. */
int d9_start(const d9_config *caller_cfg) {
    d9_config cfg;
    int rc = d9_config_from_caller(caller_cfg, &cfg);
    if (rc == D9_OK) rc = d9_config_validate(&cfg);
    if (rc != D9_OK) return rc;
    return start(&cfg);
}

static int start(const d9_config *cfg) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    if (!cfg->enabled) return D9_OK;
    pthread_once(&once, install_process_hooks);

    recorder *r = &g_rec;
    pthread_mutex_lock(&r->lifecycle);
    if (r->running) {
        pthread_mutex_unlock(&r->lifecycle);
        d9_set_error("already recording (call d9_stop first)");
        return D9_ERR_ALREADY_STARTED;
    }
    free_strings(r); /* the previous run's: d9_run_dir() stayed valid until now */
    memset(&r->last_stats, 0, sizeof r->last_stats);
    r->cfg = *cfg;
    r->trace_dir = strdup(cfg->trace_dir);
    r->service = strdup(cfg->service ? cfg->service : d9_program_name());
    if (!r->trace_dir || !r->service) goto oom;
    r->cfg.trace_dir = r->trace_dir;
    r->cfg.service = r->service;

    if (cfg->clock == D9_CLOCK_AUTO) d9_clock_auto_load_from(cfg->trace_dir); /* an earlier process's check */
    d9_clock_mode clock = d9_clock_select(cfg->clock);
    __atomic_store_n(&d9_schedstat_enabled, cfg->schedstat && d9_schedstat_available(), __ATOMIC_RELAXED);
    /* In ns until the collector knows the tick rate: fewer ticks than ns, so reads too often. */
    __atomic_store_n(&d9_schedstat_min_ticks, (uint64_t)cfg->schedstat_resolution_us * 1000u, __ATOMIC_RELAXED);
    __atomic_add_fetch(&d9_schedstat_run, 1, __ATOMIC_RELAXED);
    uint32_t cpu_run = __atomic_load_n(&d9_schedstat_run, __ATOMIC_RELAXED);
    __atomic_store_n(&d9_thread_cpu_time_key[0], D9_THREAD_CPU_TIME_KEY(cfg->thread_cpu_time, cpu_run), __ATOMIC_RELAXED);
    __atomic_store_n(&d9_thread_cpu_time_key[1], D9_THREAD_CPU_TIME_UNPARK_KEY(cfg->thread_cpu_time, cpu_run),
                     __ATOMIC_RELAXED);
    d9_thread_cpu_source cpu_source = D9_THREAD_CPU_AUTO; /* validated by d9_config_from_env */
    const char *cpu_env = getenv("DIAL9_THREAD_CPU");
    if (cpu_env && !d9_thread_cpu_source_parse(cpu_env, &cpu_source)) {
        d9_set_error("DIAL9_THREAD_CPU=\"%s\": expected " D9_THREAD_CPU_SOURCES, cpu_env);
        free_strings(r);
        pthread_mutex_unlock(&r->lifecycle);
        return D9_ERR_INVALID;
    }
    if (d9_thread_cpu_clock_start(cpu_source, clock != D9_CLOCK_TSC, cfg->thread_cpu_time == D9_THREAD_CPU_TIME_OFF) !=
        0) {
        free_strings(r);
        pthread_mutex_unlock(&r->lifecycle);
        return D9_ERR_SYSTEM;
    }
    d9_thread_set_ring_limits(ring_words_for(cfg->buffer_kb), (uint64_t)cfg->memory_budget_mb << 20);
    d9_make_run_id(r->run_id, sizeof r->run_id);
    d9_flight_config flight;
    d9_flight_config_from_env(&flight, cfg->trace_dir);
    flight.recorder_cfg = &r->cfg; /* dumps go to S3 too when it is configured */
    flight.service = r->service;

    d9_collector_config cc = {
        .cfg = &r->cfg,
        .run_id = r->run_id,
        .service = r->service,
        .clock_name = clock == D9_CLOCK_TSC ? "tsc" : "monotonic",
        .schedstat_active = __atomic_load_n(&d9_schedstat_enabled, __ATOMIC_RELAXED),
        .memory = flight.memory,
        .memory_segment_ns = flight.segment_ns,
        .memory_segment_bytes = flight.memory_bytes / 4,
    };
    char err[512];
    r->col = d9_collector_open(&cc, err, sizeof err);
    if (!r->col) { /* the run directory cannot be made (rarely: no memory for the writer) */
        d9_set_error("%s", err);
        free_strings(r);
        pthread_mutex_unlock(&r->lifecycle);
        return D9_ERR_TRACE_DIR;
    }
    r->pipeline = flight.memory ? NULL : d9_pipeline_start(&r->cfg); /* memory mode: no file to process */
    if (r->pipeline) {
        d9_pipeline_set_on_resized(r->pipeline, on_segment_resized, r);
        d9_pipeline_set_run_fd(r->pipeline, d9_collector_run_dir_fd(r->col)); /* files through it, not by path */
        /* Symbols appended to sealed segments: room for them in each file and in the budget. */
        d9_collector_expect_growth(r->col, d9_pipeline_max_growth(r->pipeline));
        d9_collector_set_on_sealed(r->col, d9_pipeline_on_sealed, r->pipeline);
        /* symbolizing: what each segment holds to name is listed as it is written, not read back */
        if (d9_pipeline_max_growth(r->pipeline) > 0) d9_collector_collect_symbols(r->col);
    }
    d9_run_metadata_set(d9_collector_metadata(r->col), "clock_reason", "%s", d9_clock_reason());
    d9_run_metadata_set(d9_collector_metadata(r->col), "thread_cpu_clock", "%s", d9_thread_cpu_clock_reason());
    d9_run_metadata_set(d9_collector_metadata(r->col), "poll_cpu", "%s", d9_poll_cpu_reason());
    if (cfg->clock == D9_CLOCK_AUTO) d9_clock_auto_store_in(cfg->trace_dir); /* the directory exists now */
    (void)d9_flight_start(&flight, r->col, r->run_id); /* without it: no dumps, the recording goes on */
    d9_sources_start(&r->cfg, r->col);
    d9_on_sources_started_fn on_started = atomic_load_explicit(&g_on_sources_started, memory_order_acquire);
    if (on_started) on_started(r->col);
    err[0] = 0;
    if (d9_collector_start(r->col, err, sizeof err) != 0) {
        close_collector(r, NULL);
        d9_sources_stop();
        d9_pipeline_stop(r->pipeline);
        r->pipeline = NULL;
        d9_set_error("%s", err);
        free_strings(r);
        pthread_mutex_unlock(&r->lifecycle);
        return D9_ERR_TRACE_DIR; /* the first segment cannot be written */
    }
    if (err[0]) d9_set_error("%s", err); /* started, but why nothing is written yet (a full disk) */
    r->run_dir = strdup(d9_collector_run_dir(r->col));
    if (r->run_dir) d9_pipeline_set_run(r->pipeline, r->cfg.trace_dir, r->run_dir);
    d9_threads_set_collector_running(true);
    r->stop_requested = false;

    /* The background thread must not take the application's signals. A program whose exit
     * handlers already run (sources.h) gets no background thread: the d9_stop that follows at
     * once drains everything, and a d9_flush meanwhile returns when it has. */
    int rc = 0;
    r->thread_started = !d9_sources_process_is_ending();
    if (r->thread_started) {
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        rc = pthread_create(&r->thread, NULL, background_main, r);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    if (rc != 0) {
        close_collector(r, NULL);
        d9_threads_set_collector_running(false);
        d9_sources_stop();
        d9_pipeline_stop(r->pipeline);
        r->pipeline = NULL;
        free_strings(r);
        pthread_mutex_unlock(&r->lifecycle);
        d9_set_error("cannot start the background thread: %s", strerror(rc));
        return D9_ERR_THREAD;
    }
    r->running = true;
    run_start_hooks(); /* tasks that exist already spawn in this run, before any poll of it */
    __atomic_store_n(&d9__active, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&r->lifecycle);
    return D9_OK;
oom:
    free_strings(r);
    pthread_mutex_unlock(&r->lifecycle);
    d9_set_error("out of memory");
    return D9_ERR_NO_MEMORY;
}

int d9_start_or_disabled(const d9_config *cfg) {
    int rc = d9_start(cfg);
    /* already started (twice, or the zero-code shim records this program): recording goes on */
    if (rc == D9_ERR_ALREADY_STARTED)
        fprintf(stderr, "dial9: already recording (an earlier d9_start, or dial9 run / the preload "
                        "shim): this start changes nothing, the recording goes on\n");
    else if (rc != 0)
        fprintf(stderr, "dial9: recording disabled: %s\n", d9_last_error());
    return 0;
}

void d9_stop(void) {
    recorder *r = &g_rec;
    pthread_mutex_lock(&r->lifecycle);
    if (!r->running) {
        pthread_mutex_unlock(&r->lifecycle);
        return;
    }
    __atomic_store_n(&d9__active, 0, __ATOMIC_RELAXED);
    d9_pause_ends_clear();
    pthread_mutex_lock(&r->wake_lock);
    r->stop_requested = true;
    pthread_mutex_unlock(&r->wake_lock);
    d9_collector_wake();
    if (r->thread_started) pthread_join(r->thread, NULL);
    close_collector(r, &r->last_stats); /* drains what is left, seals the last segment */
    d9_sources_stop();
    d9_pipeline_stop(r->pipeline); /* finishes the sealed segments' steps (symbols...) */
    r->pipeline = NULL;
    d9_threads_set_collector_running(false);
    d9_threads_reap();
    d9_thread_cpu_clock_stop();
    r->running = false;
    pthread_mutex_lock(&r->wake_lock);
    r->flush_done = r->flush_requested;
    pthread_cond_broadcast(&r->flushed);
    pthread_mutex_unlock(&r->wake_lock);
    pthread_mutex_unlock(&r->lifecycle);
}

void d9_set_enabled(bool enabled) {
    recorder *r = &g_rec;
    pthread_mutex_lock(&r->lifecycle);
    bool was_active = __atomic_load_n(&d9__active, __ATOMIC_RELAXED);
    __atomic_store_n(&d9__active, enabled && r->running, __ATOMIC_RELAXED);
    if (enabled || !r->running) d9_pause_ends_clear();
    else if (was_active) d9_pause_ends_begin(); /* pausing twice: the first pause's ends stand */
    pthread_mutex_unlock(&r->lifecycle);
}

void d9_flush(void) {
    recorder *r = &g_rec;
    pthread_mutex_lock(&r->lifecycle);
    bool running = r->running;
    pthread_mutex_unlock(&r->lifecycle);
    if (!running) return;
    pthread_mutex_lock(&r->wake_lock);
    uint64_t target = ++r->flush_requested;
    d9_collector_wake(); /* under the lock: the collector reads the request under it after its sleep */
    while (r->flush_done < target && !r->stop_requested) pthread_cond_wait(&r->flushed, &r->wake_lock);
    pthread_mutex_unlock(&r->wake_lock);
}

const char *d9_run_dir(void) {
    recorder *r = &g_rec;
    pthread_mutex_lock(&r->lifecycle);
    const char *dir = r->run_dir;
    pthread_mutex_unlock(&r->lifecycle);
    return dir;
}

/* `size` is the caller's sizeof(d9_stats): another version's struct is shorter or longer. */
void d9_get_stats_size(d9_stats *out, size_t size) {
    if (!out) return;
    d9_stats st;
    memset(&st, 0, sizeof st);
    recorder *r = &g_rec;
    pthread_mutex_lock(&r->lifecycle);
    if (r->col) d9_collector_get_stats(r->col, &st);
    else st = r->last_stats;
    st.buffer_bytes = d9_ring_bytes_used(); /* the buffers outlive the run */
    st.buffer_bytes_peak = d9_ring_bytes_peak();
    pthread_mutex_unlock(&r->lifecycle);
    size_t n = size < sizeof st ? size : sizeof st;
    memcpy(out, &st, n);
    if (size > n) memset((char *)out + n, 0, size - n);
}
