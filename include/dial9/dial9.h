/* dial9 — a flight recorder for asynchronous C runtimes.
 *
 * Record what an event loop or executor actually did (every poll of a task, every park in
 * the poller, every cross-thread wake) into dial9 trace files (format v1) that rotate within
 * a disk budget. Hooks are cheap enough to leave on in production: no lock, no allocation
 * and no system call on the hot path (park/unpark read schedstat by design; see below).
 *
 *   d9_config cfg;
 *   d9_config_init(&cfg);                 // or d9_config_from_env(&cfg)
 *   cfg.trace_dir = "/tmp/my_traces";
 *   int rc = d9_start(&cfg);
 *   if (rc != D9_OK) fprintf(stderr, "dial9: %s (%s)\n", d9_last_error(), d9_strerror(rc));
 *   ...
 *   d9_stop();
 *
 * Every hook is safe to call from any thread at any time: before d9_start, after d9_stop,
 * or while recording is disabled it does nothing. Hooks are not async-signal-safe: do not call
 * them from a signal handler that may interrupt another hook on the same thread.
 *
 * Versions and the ABI: dial9/version.h and d9_version() below; what a minor or patch release
 * may change is written in docs/abi.md. Structs the caller allocates and the library reads or
 * fills (d9_config, d9_stats) carry their size, so a newer library never reads or writes past
 * the struct an older program was compiled with: always fill them with d9_config_init /
 * d9_config_from_env and read d9_stats with d9_get_stats (inline wrappers that pass the size).
 */
#ifndef DIAL9_DIAL9_H
#define DIAL9_DIAL9_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dial9/version.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(D9_BUILDING_LIBRARY)
#define D9_API __attribute__((visibility("default")))
#else
#define D9_API
#endif

/* Every function marked D9_INLINE below is compiled into the caller (a load and a branch for
 * the hooks; the struct size for the init wrappers). */
#define D9_INLINE static inline __attribute__((always_inline))

/* ------------------------------------------------------------------------------------------
 * Version of the library the program runs with (DIAL9_VERSION*: the headers it was built with)
 * ---------------------------------------------------------------------------------------- */

/* DIAL9_VERSION of the library: (major << 16) | (minor << 8) | patch. */
D9_API unsigned d9_version(void);
/* DIAL9_VERSION_STRING of the library, e.g. "0.5.0" (static storage). */
D9_API const char *d9_version_string(void);

/* ------------------------------------------------------------------------------------------
 * Errors: every function returning int returns D9_OK (0) or one of these negative codes;
 * d9_last_error() adds the details (which value, which path). Compare with the names: the
 * numbers are stable (docs/abi.md), but new codes may be added in a minor release.
 * ---------------------------------------------------------------------------------------- */

typedef enum d9_error {
    D9_OK = 0,
    D9_ERR_INVALID = -1,         /* a bad value in the configuration or an argument */
    D9_ERR_ALREADY_STARTED = -2, /* d9_start while recording: call d9_stop first */
    D9_ERR_TRACE_DIR = -3,       /* the trace directory cannot be created or written */
    D9_ERR_NO_MEMORY = -4,
    D9_ERR_THREAD = -5,          /* the background thread cannot be created */
    D9_ERR_NOT_STARTED = -6,     /* needs a run (d9_hand_over_files before any d9_start) */
    D9_ERR_SYSTEM = -7,          /* a system call failed (d9_last_error names it and errno) */
} d9_error;

/* A short description of `code` (a d9_error; static storage, never NULL; "unknown error" for
 * a code this library does not know). */
D9_API const char *d9_strerror(int code);

/* ------------------------------------------------------------------------------------------
 * Configuration
 * ---------------------------------------------------------------------------------------- */

/* How a recorder timestamps events. AUTO uses the TSC when the kernel's clocksource is the
 * TSC and the CPU's TSC is invariant, and CLOCK_MONOTONIC otherwise. Either way timestamps
 * in the trace are CLOCK_MONOTONIC nanoseconds. */
typedef enum d9_clock_mode { D9_CLOCK_AUTO = 0, D9_CLOCK_TSC, D9_CLOCK_MONOTONIC } d9_clock_mode;

/* How CPU profile samples are taken. AUTO prefers perf_event_open and falls back to per-thread
 * CPU timers (SIGPROF) where perf is refused. */
typedef enum d9_sampler_mode { D9_SAMPLER_AUTO = 0, D9_SAMPLER_PERF, D9_SAMPLER_TIMER } d9_sampler_mode;
/* How sealed segments are compressed (auto: gzip when uploading, none otherwise). ZSTD: since
 * 0.4 (an older library refuses it: D9_ERR_INVALID). */
typedef enum d9_compress_mode {
    D9_COMPRESS_AUTO = 0,
    D9_COMPRESS_NONE,
    D9_COMPRESS_GZIP,
    D9_COMPRESS_ZSTD
} d9_compress_mode;

/* When a park or unpark reads the thread's CPU time for its cpu_time_ns by system call (the
 * kernel has no vDSO path for it), where the per-thread task-clock page is not to be had
 * (DIAL9_THREAD_CPU, docs/kernel-sources.md; with the page, PARK and EVERY both give every park
 * and unpark its own value, without a system call but after some switches). PARK (the
 * default): at each park; an unpark carries the
 * value of the park before it (the thread slept in between), so one read per active period.
 * EVERY: at every park and unpark. OFF: never; cpu_time_ns is 0 and the trace's metadata says
 * thread_cpu_time=off, so 0 is not read as "no CPU". Since 0.5. */
typedef enum d9_thread_cpu_time_mode {
    D9_THREAD_CPU_TIME_PARK = 0,
    D9_THREAD_CPU_TIME_EVERY,
    D9_THREAD_CPU_TIME_OFF
} d9_thread_cpu_time_mode;

typedef struct d9_config {
    uint32_t struct_size;     /* sizeof(d9_config) as the caller was compiled: set by
                                 d9_config_init / d9_config_from_env, never by hand. Fields
                                 past it (added by a later version) take their defaults */
    bool enabled;             /* DIAL9_ENABLED (default true): false makes d9_start a no-op */
    const char *trace_dir;    /* DIAL9_TRACE_DIR (default "/tmp/dial9-traces"); runs go in
                                 {trace_dir}/{run_id}/trace.{N}.bin */
    const char *service;      /* DIAL9_SERVICE (default: the program's name) */
    uint64_t max_file_size;   /* DIAL9_MAX_FILE_SIZE_MB (default 64 MiB): rotate past this */
    uint64_t max_total_size;  /* DIAL9_MAX_DISK_USAGE_MB (default 1 GiB): bytes on disk for all
                                 runs in trace_dir; oldest sealed files are deleted first */
    uint32_t rotation_secs;   /* DIAL9_ROTATION_SECS (default 60; 0 = rotate by size only) */
    uint32_t buffer_kb;       /* DIAL9_BUFFER_KB (default 1024): per-thread event buffer, at most;
                                 a thread's starts at 4 KiB and doubles while it fills up
                                 (or is found over 1/8 full at a drain) */
    uint32_t flush_ms;        /* DIAL9_FLUSH_MS (default 20): longest time an event waits in a
                                 thread buffer before the background thread writes it */
    bool schedstat;           /* DIAL9_SCHEDSTAT (default true): read /proc/thread-self/schedstat
                                 on park/unpark for kernel scheduling delay (the CPU time:
                                 thread_cpu_time below) */
    uint32_t schedstat_resolution_us; /* DIAL9_SCHEDSTAT_RESOLUTION_US (default 1000): read it
                                 only when this long has passed since the thread's last read
                                 (0: at every park and unpark). An unpark not read has
                                 sched_wait_ns 0; a delay longer than this is
                                 always caught, and overstated by less than this */
    d9_clock_mode clock;      /* DIAL9_CLOCK = auto | tsc | monotonic (default auto) */

    /* Kernel data sources (docs/kernel-sources.md). Each is detected at start; what is active
     * and why others are not is written in every segment's metadata. */
    bool cpu_profile;         /* DIAL9_CPU_PROFILE_ENABLED (default false): CPU samples */
    uint32_t cpu_sample_hz;   /* DIAL9_CPU_SAMPLE_HZ (default 99) */
    d9_sampler_mode sampler;  /* DIAL9_CPU_SAMPLER = auto | perf | timer (default auto) */
    bool schedule_profile;    /* DIAL9_SCHEDULE_PROFILE_ENABLED (default true): off-CPU intervals
                                 and context-switch stacks, where the host allows them */
    uint32_t switch_stacks_per_sec; /* DIAL9_SWITCH_STACKS_PER_SEC (default 500): context-switch
                                 stacks taken per second on average at most (each costs the
                                 kernel ~4 us); above it they pause (docs/kernel-sources.md) */
    double overhead_budget_pct; /* DIAL9_OVERHEAD_BUDGET_PCT (default 1): the kernel sources' CPU
                                 budget, % of one CPU (0.01 to 100; 0 or "off": not governed).
                                 Above it the context-switch source degrades (records and
                                 stacks in one window of N, paused), written in the trace as
                                 CoverageEvent (docs/kernel-sources.md, "Cost governor") */
    bool task_dumps;          /* DIAL9_TASK_DUMPS (default true): stacks of suspended tasks */
    bool symbolize;           /* DIAL9_SYMBOLIZE (default true): append symbols to sealed
                                 segments in the background */

    /* Off the host (docs/s3.md): sealed segments compressed and uploaded in the background,
     * deleted locally once the upload is confirmed. */
    d9_compress_mode compress; /* DIAL9_COMPRESS = auto | gzip | zstd | none (default auto: gzip
                                 when s3_bucket is set, else none); needs libz.so.1 (zstd:
                                 libzstd.so.1) at run time */
    const char *s3_bucket;    /* DIAL9_S3_BUCKET (default NULL: no upload); needs libcurl.so.4 */
    const char *s3_prefix;    /* DIAL9_S3_PREFIX (default "dial9-traces") */
    const char *s3_region;    /* AWS_REGION, else AWS_DEFAULT_REGION (default "us-east-1") */
    const char *s3_endpoint;  /* AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL (default NULL: AWS's
                                 https://s3.{region}.amazonaws.com) */
    int s3_path_style;        /* DIAL9_S3_PATH_STYLE: 1 path-style, 0 virtual-hosted, -1 (default)
                                 path-style when the endpoint's host is an IP address or localhost */
    uint32_t s3_exit_wait_secs; /* DIAL9_S3_EXIT_WAIT_SECS (default 10): at d9_stop, how long to
                                 wait for the uploads still to do; what remains stays on disk.
                                 Not waited for when S3 is down (the upload circuit open) */
    uint32_t memory_budget_mb; /* DIAL9_MEMORY_BUDGET_MB (default 64): all threads' buffers
                                 together; past it, buffers do not grow and new threads have none:
                                 their events are dropped and counted (DroppedEventsEvent) */
    uint32_t symbolize_exit_wait_secs; /* DIAL9_SYMBOLIZE_EXIT_WAIT_SECS (default 5): at d9_stop,
                                 how long to wait for symbols still to add to sealed segments
                                 (added in 0.3); what remains is named offline by dial9 symbolize */
    d9_thread_cpu_time_mode thread_cpu_time; /* DIAL9_THREAD_CPU_TIME = park | every | off
                                 (default park): when parks and unparks read the thread's CPU
                                 time (added in 0.5; docs/kernel-sources.md) */
    /* Sampled heap profiling (docs/heap-profiling.md): AllocEvent and FreeEvent, dial9's. */
    bool memory_profile;      /* DIAL9_MEMORY_PROFILE_ENABLED (default false): sample allocations
                                 (the preload shim's malloc family; d9_heap_sample_alloc) */
    uint64_t memory_sample_bytes; /* DIAL9_MEMORY_SAMPLE_BYTES (default 524288): mean bytes
                                 between two samples (1: every allocation) */
    uint64_t memory_seed;     /* DIAL9_MEMORY_SEED (default 0: from the clock): the sampler's
                                 draws, for reproducible tests */
} d9_config;

/* The size-taking forms behind the inline wrappers below, for callers that cannot use inline
 * functions (other languages' bindings): `size` is the caller's sizeof(d9_config). The library
 * writes exactly `size` bytes: its fields within them, zeros in any it does not know. */
D9_API void d9_config_init_size(d9_config *cfg, size_t size);
D9_API int d9_config_from_env_size(d9_config *cfg, size_t size);

/* Fill `cfg` with the defaults above. */
D9_INLINE void d9_config_init(d9_config *cfg) { d9_config_init_size(cfg, sizeof *cfg); }

/* Initialise `cfg` with the defaults, then apply every DIAL9_* environment variable that is
 * set. Returns D9_OK, or D9_ERR_INVALID when a variable holds a bad value; d9_last_error()
 * then names the variable and the value, and `cfg` is left disabled (enabled = false), so a
 * program that reports the error and starts anyway runs without recording. Strings in `cfg`
 * point into the environment. */
D9_INLINE int d9_config_from_env(d9_config *cfg) { return d9_config_from_env_size(cfg, sizeof *cfg); }

/* Check a configuration without starting anything: D9_OK, or D9_ERR_INVALID with
 * d9_last_error() (also for a struct_size no d9_config_init could have written). */
D9_API int d9_config_validate(const d9_config *cfg);

/* ------------------------------------------------------------------------------------------
 * Lifecycle
 *
 * Threads: d9_start, d9_stop, d9_flush, d9_set_enabled, d9_get_stats, d9_run_dir and
 * d9_hand_over_files may be called from any thread, also concurrently (one lock orders them),
 * but not from a signal handler nor from inside a hook. The start/stop pair may repeat: each
 * d9_start begins a new run directory. Hooks running on other threads while d9_start or d9_stop
 * runs are safe; an event racing d9_stop may be left out of the run (never half written).
 * d9_stop and d9_flush block: d9_flush until what was recorded is written, d9_stop until every
 * buffer is drained, the last segment sealed and the sealed segments' background steps are
 * done (uploads: at most s3_exit_wait_secs). d9_last_error() is per thread.
 *
 * Exit: the first d9_start registers d9_stop with atexit(), so returning from main or calling
 * exit() seals the last segment as d9_stop would (a program that calls d9_stop itself loses
 * nothing by it). _exit(), a crash or a kill leaves the segment being written as
 * trace.N.bin.active, which every reader reads up to its last whole event
 * (docs/files-on-disk.md).
 *
 * fork: the child inherits no recording. Its hooks do nothing, it never writes to the parent's
 * files, and it may call d9_start for a run of its own (a new run directory); the parent keeps
 * recording undisturbed. fork() while another thread is inside d9_start or d9_stop is safe
 * too (the child's locks are reset). After exec, nothing of the library remains: the zero-code
 * shim can follow children (DIAL9_TRACE_CHILDREN, docs/zero-code.md).
 * ---------------------------------------------------------------------------------------- */

/* Start recording with `cfg` (copied; the caller may free its strings afterwards). Returns
 * D9_OK, or a negative d9_error with d9_last_error() saying why: D9_ERR_INVALID (a bad value),
 * D9_ERR_ALREADY_STARTED, D9_ERR_TRACE_DIR (the directory cannot be created or written),
 * D9_ERR_NO_MEMORY, D9_ERR_THREAD. With cfg->enabled false it returns D9_OK and records
 * nothing. */
D9_API int d9_start(const d9_config *cfg);

/* Like d9_start, but never fails: on a bad configuration it prints a warning on stderr and
 * leaves a recorder that records nothing; when a recording runs already (an earlier start, or
 * the zero-code shim of `dial9 run`), it says so and that recording goes on. Always returns 0. */
D9_API int d9_start_or_disabled(const d9_config *cfg);

/* Stop recording: drain every thread's buffer, write what remains and seal the last segment.
 * Safe to call twice, or without a start. Afterwards hooks are no-ops until d9_start. */
D9_API void d9_stop(void);

/* Pause (false) or resume (true) recording without closing files. Cheap: two stores. While
 * paused, hooks record nothing, except the end of what a thread began before the pause: a
 * poll's end (d9_poll_end) and a park's unpark (d9_unpark) are still recorded when the poll or
 * park started while recording, so a pause never cuts an interval's end off (a pause from
 * inside a callback, or while a worker waits in its poller). */
D9_API void d9_set_enabled(bool enabled);

/* Why the last failed call of this thread failed (a static or thread-local string); the code
 * that call returned says what kind of failure it was (d9_strerror). */
D9_API const char *d9_last_error(void);

/* Before the program changes its identity (setuid to an unprivileged user, as a daemon
 * does after binding its ports), while it still may: give the run directory and every file in
 * it to `uid` (and `gid`, unless it is (gid_t)-1), so rotation, sealing, symbolizing and the
 * disk budget keep working as the new user. Modes stay as they are (0755 and 0644; nothing
 * becomes world-writable). Returns D9_OK, or D9_ERR_NOT_STARTED (no run) or D9_ERR_SYSTEM
 * (not root, ...) with d9_last_error(). The
 * zero-code shim calls it by itself from its setuid/setresuid/... interposers. */
D9_API int d9_hand_over_files(unsigned uid, unsigned gid);

/* The directory of the current or last run ({trace_dir}/{run_id}); NULL before any start.
 * The string stays valid until the next d9_start. */
D9_API const char *d9_run_dir(void);

/* Counters since d9_start (after d9_stop: the final counts of that run). */
typedef struct d9_stats {
    uint64_t events_recorded;   /* accepted into a thread buffer */
    uint64_t events_dropped;    /* dropped: a full buffer or a failed write (all reasons) */
    uint64_t events_written;    /* encoded into a segment file */
    uint64_t bytes_written;     /* bytes written to segment files */
    uint64_t write_errors;      /* failed writes (disk full, directory gone, ...) */
    uint64_t segments_sealed;
    uint64_t files_deleted;     /* removed to respect max_total_size */
    uint32_t threads;           /* threads that have recorded at least one event */
    uint64_t buffer_bytes;      /* thread buffers' memory now (within memory_budget_mb) */
    uint64_t buffer_bytes_peak; /* ... and the most it has been in this process */
} d9_stats;
/* Fill the first `size` bytes of `out` (the caller's sizeof(d9_stats)): counters this library
 * does not know are zero, counters the caller does not know are not written. */
D9_API void d9_get_stats_size(d9_stats *out, size_t size);
D9_INLINE void d9_get_stats(d9_stats *out) { d9_get_stats_size(out, sizeof *out); }

/* Write everything recorded so far to the current segment now (blocks until done). */
D9_API void d9_flush(void);

/* Heap sampling for a program with an allocator of its own (the preload shim does it for the
 * malloc family): call d9_heap_sample_alloc after each allocation of `size` bytes at `ptr`. It
 * returns 1 when the block was sampled (an AllocEvent with the caller's stack is recorded): the
 * program then calls d9_heap_sample_free when it frees that block, and only for those. No lock;
 * one thread-local subtraction when the block is not sampled. Does nothing unless recording
 * with memory_profile on. */
D9_API int d9_heap_sample_alloc(const void *ptr, size_t size);
D9_API void d9_heap_sample_free(const void *ptr, size_t size);
/* Dump [now - lookback_ms, now + lookforward_ms] into a directory of its own under
 * DIAL9_DUMP_DIR (docs/flight-recorder.md), `reason` (may be NULL) in its manifest. Returns at
 * once (nothing is locked or written on the calling thread): the recorder's flight thread
 * writes the dump, its manifest last once the look-forward has passed. D9_OK; D9_ERR_NOT_STARTED
 * when no flight recorder runs (it needs DIAL9_MODE=memory, DIAL9_TRIGGERS or DIAL9_DUMPS=1);
 * D9_ERR_INVALID when 16 requests wait already. Safe from any thread, not a signal handler. */
D9_API int d9_dump(uint32_t lookback_ms, uint32_t lookforward_ms, const char *reason);

/* ------------------------------------------------------------------------------------------
 * Source locations: D9_HERE is a pointer to a static d9_loc, interned on first use (the id is
 * cached in the struct), so a hook never hashes a string.
 * ---------------------------------------------------------------------------------------- */

/* d9_loc, d9_field and d9_arg are compiled into programs (static initialisers, arrays): their
 * layout never changes within a major version (docs/abi.md). */
typedef struct d9_loc {
    const char *file;
    const char *function;
    uint32_t line;
    uint32_t id;              /* 0 until interned; owned by the library */
} d9_loc;

#define D9_HERE                                                                          \
    (__extension__({                                                                     \
        static d9_loc d9__here_ = {__FILE__, __func__, __LINE__, 0};                     \
        &d9__here_;                                                                      \
    }))

/* A location made at run time (e.g. a callback's symbol); `name` is copied, interned once per
 * distinct name, and the returned pointer lives until the process exits. NULL on no memory. */
D9_API const d9_loc *d9_loc_intern(const char *name);

/* ------------------------------------------------------------------------------------------
 * Hooks for any runtime. Call each on the thread where the thing happens.
 * Task ids are the runtime's own 64-bit identities (0 means "no task").
 * The inline wrappers test one global flag, so a disabled recorder costs a load and a branch.
 * ---------------------------------------------------------------------------------------- */

D9_API extern int d9__active; /* nonzero while recording; read by the wrappers (relaxed atomic) */
/* while a recording is paused (d9_set_enabled(false)): bit 0, poll ends may be owed; bit 1,
 * unparks (each cleared once no thread owes one) */
D9_API extern int d9__paused;
/* Wrappers are inlined even at -O0 (D9_INLINE): the disabled cost stays one load and a
 * branch, and a stack captured inside a hook starts at the caller, not at a wrapper. */
#define D9__ACTIVE() __builtin_expect(__atomic_load_n(&d9__active, __ATOMIC_RELAXED), 0)
#define D9__PAUSED(bit) __builtin_expect(__atomic_load_n(&d9__paused, __ATOMIC_RELAXED) & (bit), 0)

D9_API uint32_t d9__worker_begin(const char *runtime, uint32_t index);
D9_API void d9__worker_end(void);
D9_API void d9__poll_begin(uint64_t task_id, const d9_loc *where);
D9_API void d9__poll_end(void);
D9_API void d9__poll_end_begin(uint64_t task_id, const d9_loc *where);
D9_API void d9__park(void);
D9_API void d9__unpark(void);
/* While paused: the end of a poll / park this thread began while recording (else nothing). */
D9_API void d9__poll_end_paused(void);
D9_API void d9__unpark_paused(void);
D9_API void d9__wake(uint64_t woken_task_id);
D9_API void d9__task_spawn(uint64_t task_id, const d9_loc *where);
D9_API void d9__task_spawn_object(uint64_t task_id, const d9_loc *where, const void *object);
D9_API void d9__wake_ready(uint64_t woken_task_id);
D9_API void d9__unpark_wake_ready(uint64_t woken_task_id); /* woken_task_id != 0 */
D9_API void d9__poll_end_park(void); /* d9__poll_end then d9__park, at one clock read */
/* d9__unpark_wake_ready (d9__unpark when woken_task_id is 0) then d9__poll_begin, at one clock read */
D9_API void d9__unpark_wake_ready_poll_begin(uint64_t woken_task_id, uint64_t task_id, const d9_loc *where);
D9_API void d9__poll_end_terminate(uint64_t task_id); /* d9__poll_end then d9__task_terminate, at one clock read */
D9_API void d9__poll_end_terminate_park(uint64_t task_id); /* d9__poll_end_terminate then d9__park, at one clock read */
/* For runtimes that keep tasks across starts (the loop adapters): `fn` runs in every d9_start
 * just before hooks begin to record; it may call the d9__ hooks (d9__task_spawn_object) to
 * spawn the tasks that exist already. At most 8. */
D9_API void d9__on_recording_start(void (*fn)(void));
D9_API void d9__task_terminate(uint64_t task_id);
D9_API void d9__set_local_queue(uint32_t depth);

/* Declare this thread worker `index` of runtime `runtime` (a name such as "io"). Returns the
 * process-wide worker id: each (runtime, index) pair gets its own id, so runtimes never share
 * ids. Ids are small integers < 254 (254 and 255 mean "blocking pool" and "not a worker" in
 * the format); past 253 workers the id is 255. Works whether or not recording is on. */
D9_INLINE uint32_t d9_worker_begin(const char *runtime, uint32_t index) {
    return d9__worker_begin(runtime, index);
}
/* This thread stops being a worker. */
D9_INLINE void d9_worker_end(void) { d9__worker_end(); }

/* A poll (one callback invocation, one run of a task) starts / ends on this thread. */
D9_INLINE void d9_poll_begin(uint64_t task_id, const d9_loc *where) {
    if (D9__ACTIVE()) d9__poll_begin(task_id, where);
}
D9_INLINE void d9_poll_end(void) {
    if (D9__ACTIVE()) d9__poll_end();
    else if (D9__PAUSED(1)) d9__poll_end_paused();
}

/* A poll ends and the next one begins at once on this thread (a callback nested in another's,
 * a loop moving on to the next connection): d9_poll_end then d9_poll_begin, at one clock read. */
D9_INLINE void d9_poll_end_begin(uint64_t task_id, const d9_loc *where) {
    if (D9__ACTIVE()) d9__poll_end_begin(task_id, where);
    else if (D9__PAUSED(1)) d9__poll_end_paused();
}

/* A poll ends and its task terminates right after it (the task's last poll): d9_poll_end then
 * d9_task_terminate, at one clock read. */
D9_INLINE void d9_poll_end_terminate(uint64_t task_id) {
    if (D9__ACTIVE()) d9__poll_end_terminate(task_id);
    else if (D9__PAUSED(1)) d9__poll_end_paused();
}

/* The worker is about to block in its poller (epoll_wait, a condition variable...) / has
 * returned from it. These read the thread's CPU time (from a per-thread perf task-clock page,
 * or, where the kernel refuses it, as d9_config.thread_cpu_time says: by default at each park,
 * an unpark carrying the park's) and /proc/thread-self/schedstat (one
 * pread, at most once per schedstat_resolution_us per thread) for, on unpark, how long the
 * kernel kept it runnable but not running. */
D9_INLINE void d9_park(void) {
    if (D9__ACTIVE()) d9__park();
}
D9_INLINE void d9_unpark(void) {
    if (D9__ACTIVE()) d9__unpark();
    else if (D9__PAUSED(2)) d9__unpark_paused();
}

/* This thread wakes task `woken_task_id` (uv_async_send, a runtime's own wake...). The waking
 * task (the one being polled on this thread, if any) and this worker are recorded too. */
D9_INLINE void d9_wake(uint64_t woken_task_id) {
    if (D9__ACTIVE()) d9__wake(woken_task_id);
}

/* Task `task_id` is created / registered at `where` (may be NULL), or closed / freed. */
D9_INLINE void d9_task_spawn(uint64_t task_id, const d9_loc *where) {
    if (D9__ACTIVE()) d9__task_spawn(task_id, where);
}
D9_INLINE void d9_task_terminate(uint64_t task_id) {
    if (D9__ACTIVE()) d9__task_terminate(task_id);
}

/* A new task id, never 0 and never handed out twice in this process: for runtimes whose own
 * identities (addresses of handles or requests) are reused. Cheap (a thread-local increment
 * nearly always); works whether or not recording is on. */
D9_API uint64_t d9_task_id_new(void);

/* d9_task_spawn that also names the object the task stands for (a handle's address), written
 * as a TaskObjectEvent next to the spawn so a reader can map the id back to it. */
D9_INLINE void d9_task_spawn_object(uint64_t task_id, const d9_loc *where, const void *object) {
    if (D9__ACTIVE()) d9__task_spawn_object(task_id, where, object);
}

/* This thread's poller found task `woken_task_id` ready (an fd ready for its callback): a
 * wake by no task (waker 0), stamped when the thread last returned from its poller
 * (d9_unpark), or now if it has not parked since, so the wake-to-poll delay of I/O tasks is
 * measured from the moment the poller returned. */
D9_INLINE void d9_wake_ready(uint64_t woken_task_id) {
    if (D9__ACTIVE()) d9__wake_ready(woken_task_id);
}

/* d9_unpark, then d9_wake_ready(woken_task_id) unless it is 0 (the first task the poller found
 * ready): the same events at one clock read and in one record, the hot path of a loop whose
 * poller returns ready fds. */
D9_INLINE void d9_unpark_wake_ready(uint64_t woken_task_id) {
    if (D9__ACTIVE()) {
        if (woken_task_id) d9__unpark_wake_ready(woken_task_id);
        else d9__unpark();
    } else if (D9__PAUSED(2)) {
        d9__unpark_paused();
    }
}

D9_API void d9__task_suspend(uint64_t task_id);

/* Task `task_id` suspends here: it registered its continuation (uv_read_start, event_add, a
 * channel wait...) and returns to its loop. The call stack at this point is captured, sampled
 * over idle time so the cost stays bounded, and written as a TaskDumpEvent: where a task waits. */
D9_INLINE void d9_task_suspend(uint64_t task_id) {
    if (D9__ACTIVE()) d9__task_suspend(task_id);
}

/* The depth of this worker's local run queue, recorded with the following polls and parks
 * (saturates at 255 in the trace). */
D9_INLINE void d9_set_local_queue(uint32_t depth) {
    if (D9__ACTIVE()) d9__set_local_queue(depth);
}

/* ------------------------------------------------------------------------------------------
 * Spans: a unit of the application's work (a request) from its begin to its end, across
 * callbacks, tasks and workers: begin and end may run on different threads. `id` is the
 * application's own 64-bit id (the request id it logs), so a span joins its logs; a begin and
 * an end pair by name and id. The name is a location, interned once: D9_SPAN_NAME("request")
 * (a literal), or d9_loc_intern(name) for one made at run time. Each costs about what a poll
 * hook does; the worker, the task being polled (if any) and the thread are recorded with it,
 * and readers split the span's time into its tasks' polls, waits for a poll and waits for a
 * wake (docs/analyze.md). Written as dial9's SpanEnterEvent / SpanExitEvent, so dial9's viewer
 * shows them. An end during a pause (d9_set_enabled(false)) is not recorded: its span is
 * reported unended.
 *
 *   d9_span_begin(D9_SPAN_NAME("request"), req->id);   // in the read callback
 *   ...
 *   d9_span_end(D9_SPAN_NAME("request"), req->id);     // in the write callback, any thread
 * ---------------------------------------------------------------------------------------- */

#define D9_SPAN_NAME(name)                                                               \
    (__extension__({                                                                     \
        static d9_loc d9__span_name_ = {name, name, 0, 0};                               \
        &d9__span_name_;                                                                 \
    }))

D9_API void d9__span_begin(const d9_loc *name, uint64_t id);
D9_API void d9__span_end(const d9_loc *name, uint64_t id);

D9_INLINE void d9_span_begin(const d9_loc *name, uint64_t id) {
    if (D9__ACTIVE()) d9__span_begin(name, id);
}
D9_INLINE void d9_span_end(const d9_loc *name, uint64_t id) {
    if (D9__ACTIVE()) d9__span_end(name, id);
}

/* ------------------------------------------------------------------------------------------
 * Custom application events: declare a schema once, then record events that cost about as
 * much as a built-in one.
 *
 *   static const d9_field fields[] = {{"key_hash", D9_U64}, {"table", D9_STATIC_STRING},
 *                                     {"fill", D9_F64}};
 *   const d9_event_type *miss = d9_event_type_define("CacheMissEvent", fields, 3);
 *   ...
 *   D9_EMIT(miss, {.u = h}, {.s = "users"}, {.f = 0.75});
 * ---------------------------------------------------------------------------------------- */

typedef enum d9_field_kind {
    D9_U64,           /* unsigned integer (varint on the wire) */
    D9_I64,           /* signed integer */
    D9_F64,           /* double */
    D9_BOOL,
    D9_STRING,        /* copied at record time (up to 1024 bytes; longer is cut) */
    D9_STATIC_STRING, /* a string that lives forever (a literal): interned by address */
} d9_field_kind;

typedef struct d9_field {
    const char *name;
    d9_field_kind kind;
} d9_field;

typedef struct d9_event_type d9_event_type;

typedef union d9_arg {
    uint64_t u;
    int64_t i;
    double f;
    bool b;
    const char *s;
} d9_arg;

/* Declare an event schema (name and fields are copied; at most 32 fields). Declaring the same
 * name again with the same fields returns the same type; with other fields it is an error.
 * Returns NULL with d9_last_error() on error. Valid before d9_start and across restarts. */
D9_API const d9_event_type *d9_event_type_define(const char *name, const d9_field *fields,
                                                 size_t field_count);

D9_API void d9__emit(const d9_event_type *type, const d9_arg *args);

/* Record one event of `type`, with one argument per declared field, in order. */
D9_INLINE void d9_emit(const d9_event_type *type, const d9_arg *args) {
    if (D9__ACTIVE()) d9__emit(type, args);
}
#define D9_EMIT(type, ...) d9_emit((type), (const d9_arg[]){__VA_ARGS__})

#ifdef __cplusplus
}
#endif
#endif /* DIAL9_DIAL9_H */
