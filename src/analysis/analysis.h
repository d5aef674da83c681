/* The trace analysis behind `dial9 analyze` and `dial9 check`: one pass over the events of a
 * trace (any number of files, in order), memory bounded by what it reports (per worker, per
 * spawn location, per live task, per distinct stack, top-N lists, a bounded reordering
 * window), never by the number of events.
 *
 *     d9a_options opt;
 *     d9a_options_init(&opt);
 *     d9a_analysis *a = d9a_new(&opt);
 *     for each file:  d9a_begin_file(a);  for each event: d9a_feed(a, &ev, dec);
 *     const d9a_report *r = d9a_finish(a);   // valid until d9a_free(a)
 *
 * What the sections mean is documented in docs/analyze.md. */
#ifndef D9_ANALYSIS_ANALYSIS_H
#define D9_ANALYSIS_ANALYSIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/coverage.h"
#include "analysis/poll_cpu_cover.h"
#include "analysis/symtab.h"
#include "analysis/time_arg.h"
#include "analysis/upload_loss.h"
#include "format/decoder.h"
#include "model/attribution.h"

typedef struct d9a_options {
    size_t top_n;              /* entries in each top list (default 10) */
    d9_time_arg from, to;      /* analyze [from, to) only; unset = the whole trace */
    /* the trace's first and last timestamps (trace_span_known), which relative --from/--to
     * resolve against (common/time_arg.h) and a one-pass analysis cannot know: the CLI reads
     * them first. Without them the first timestamp read stands for the start. */
    bool trace_span_known;
    uint64_t trace_start_ts, trace_end_ts;
    size_t window_records;     /* reordering window in records of 32 bytes (default 524288) */
    /* red-flag thresholds (ns) */
    uint64_t long_poll_warn_ns, long_poll_crit_ns;     /* 10 ms, 50 ms */
    uint64_t sched_delay_warn_ns, sched_delay_crit_ns; /* 1 ms, 10 ms */
    uint64_t wake_delay_warn_ns, wake_delay_crit_ns;   /* 5 ms, 50 ms */
} d9a_options;

void d9a_options_init(d9a_options *opt);

typedef struct d9a_analysis d9a_analysis;

/* NULL when out of memory. */
d9a_analysis *d9a_new(const d9a_options *opt);
/* Call before the first event of each decoder (each file): schema caches are per decoder. */
void d9a_begin_file(d9a_analysis *a);
/* One decoded event, in file order. 0, or -1 when out of memory (the analysis is then
 * unusable). */
int d9a_feed(d9a_analysis *a, const d9_event *ev, d9_decoder *dec);
/* Finish (once) and return the report; NULL when out of memory. */
const struct d9a_report *d9a_finish(d9a_analysis *a);
void d9a_free(d9a_analysis *a);

/* Feeding an analysis from a reader that calls back per event with the file's index (the
 * CLI's d9_read_trace_files): calls d9a_begin_file when the index changes. */
typedef struct d9a_feeder {
    d9a_analysis *a;
    size_t file;
    bool started;
} d9a_feeder;
int d9a_feeder_event(void *feeder, const d9_event *ev, d9_decoder *dec, size_t file_index);

/* ------------------------------------------------------------------------------------------
 * The report. Strings and arrays belong to the analysis.
 * ---------------------------------------------------------------------------------------- */

typedef struct d9a_dist {
    uint64_t count, total, min, max, p50, p90, p99; /* ns; quantiles within 0.4 % */
} d9a_dist;

/* A call stack expanded into frames (leaf first, inline levels included), with what the
 * analysis reads from it. */
typedef struct d9a_stack_view {
    uint32_t id;
    const d9a_frame *frames;
    uint32_t nframes;
    uint32_t naddrs;
    const char *function;  /* off-CPU: the blocking function (first frame past the scheduler);
                              CPU: the leaf function. Symbol, or hex address. */
    const char *app_frame; /* first application frame (symbol), or NULL */
    const char *syscall;   /* the system call it was in ("socket", "futex"), or NULL */
    bool preempted;        /* off-CPU only: the thread was preempted, not blocked */
    bool symbolized;       /* at least one frame has a symbol */
    bool truncated;        /* unwinding stopped before the outermost frame (StackOriginEvent
                              method 3): the callers of the last frame were not recorded */
} d9a_stack_view;

typedef struct d9a_named_count {
    const char *name;
    uint64_t count;
} d9a_named_count;

typedef struct d9a_kv {
    const char *key, *value;
} d9a_kv;

/* A metadata key whose value changed during the run (or that came after the first metadata). */
typedef struct d9a_kv_change {
    const char *key, *first, *last; /* first: NULL when the first metadata lacked the key */
} d9a_kv_change;

/* A data source: what the trace shows of it and what the recorder declared about it. */
typedef struct d9a_source {
    const char *name;     /* polls, parks, wakes, tasks, schedstat, cpu_profile, ... */
    uint64_t events;      /* events seen that come from it */
    bool active;          /* events seen, or declared active */
    const char *declared; /* the metadata's "source.<name>" value, or NULL */
} d9a_source;

typedef struct d9a_worker_report {
    uint64_t id;
    const char *runtime;          /* from WorkerRegisteredEvent, or NULL */
    uint64_t tid;                 /* 0 when unknown */
    uint64_t polls, poll_ns;
    uint64_t parks, park_ns;
    double busy_pct;              /* poll time / analyzed duration */
    double parked_pct;            /* park time / analyzed duration */
    uint64_t busy_periods;        /* unpark..park periods with CPU time on both ends */
    uint64_t busy_wall_ns, busy_cpu_ns;
    double cpu_ratio;             /* busy_cpu / busy_wall; < 0 when unknown */
    d9a_dist sched_wait;          /* sched_wait_ns of its unparks */
    uint64_t cpu_samples_in_poll, offcpu_samples_in_poll;
    uint64_t offcpu_in_poll_ns, preempted_in_poll_ns; /* from SchedSwitchEvent */
    uint64_t offcpu_in_poll_est_ns; /* from off-CPU samples: each until the worker's next
                                       sample or the end of the poll (an upper bound) */
    uint64_t polls_with_queue;    /* polls started with local_queue > 0 */
    uint64_t polls_with_queue_while_parked; /* ... while another worker was parked (and
                                               stayed parked >= 1 ms more) */
    uint64_t max_local_queue;
} d9a_worker_report;

typedef struct d9a_poll_sample_group {
    const d9a_stack_view *stack;
    uint8_t source; /* 0 CPU, 1 off-CPU */
    uint64_t count;
    uint64_t est_ns; /* off-CPU: estimated time off-CPU (upper bound, see the worker's) */
} d9a_poll_sample_group;

typedef struct d9a_long_poll {
    uint64_t start_ns, duration_ns, worker, task;
    const char *location;
    uint64_t local_queue;
    uint64_t cpu_samples, offcpu_samples;
    uint64_t offcpu_ns, preempted_ns; /* from SchedSwitchEvent */
    const d9a_poll_sample_group *groups; /* by count, decreasing */
    size_t ngroups;
    d9m_parts parts; /* where its time went: they add up to duration_ns (model/attribution.h) */
} d9a_long_poll;

typedef struct d9a_sched_delay {
    uint64_t ts, wait_ns, worker, tid;
} d9a_sched_delay;

typedef struct d9a_wake_delay {
    uint64_t wake_ns, poll_ns, delay_ns, task, worker; /* wake_ns: when the task became runnable
                                                        * (its first wake, or the end of the poll
                                                        * it was woken in); worker: the poller */
    const char *location;
    uint64_t wakes; /* wakes of the task before that poll (the delay is from the first) */
} d9a_wake_delay;

typedef struct d9a_location_report {
    const char *location;
    d9a_dist polls;
    uint64_t polls_over_warn;
    uint64_t spawned, terminated;
    uint64_t live; /* spawned in the analyzed time and not terminated */
    d9m_parts parts; /* where its polls' time went: they add up to polls.total */
} d9a_location_report;

typedef struct d9a_sample_group {
    const char *function;          /* blocking function (off-CPU) or leaf function (CPU) */
    const d9a_stack_view *stack;   /* by-stack groups: the stack; by-function: the top stack */
    const char *app_frame;         /* application frame of `stack`, or NULL */
    const char *syscall;           /* system call of `stack`, or NULL */
    bool preempted;
    uint64_t samples, in_poll, parked, other;
    uint64_t in_poll_ns;           /* off-CPU: estimated time off-CPU inside polls */
    const char *example_location;  /* spawn location of a poll it fell into, or NULL */
} d9a_sample_group;

/* Waits for a lock inside polls (futex waits under pthread_mutex_lock, rwlocks...), by the
 * application function that took the lock. */
typedef struct d9a_lock_wait {
    const char *app_frame;         /* the function that took the lock, or NULL when unknown */
    const char *lock_function;     /* pthread_mutex_lock, pthread_rwlock_wrlock, ... */
    uint64_t samples;              /* off-CPU samples inside polls */
    uint64_t total_ns, worst_ns;   /* estimated time off-CPU (upper bounds, like in_poll_ns) */
    const d9a_stack_view *stack;   /* the stack with the most time */
    const char *example_location;  /* spawn location of a poll it fell into, or NULL */
} d9a_lock_wait;

typedef struct d9a_migrating_task {
    uint64_t task, polls, hops;
    const char *location;
} d9a_migrating_task;

typedef struct d9a_queued_example {
    uint64_t ts, worker, local_queue, parked_worker;
} d9a_queued_example;

typedef struct d9a_live_point {
    uint64_t t_ns; /* since the analyzed start */
    int64_t live;  /* tasks spawned in the analyzed time and not yet terminated */
} d9a_live_point;

/* Spans of one name: their elapsed time, and where it went (model/spans.h): in polls of their
 * tasks, queued (woken, waiting for the poll), waiting for a wake, unknown. The parts are
 * totals over the ended spans and add up to elapsed.total exactly. */
typedef struct d9a_span_report {
    const char *name;
    uint64_t count;   /* ended in the analyzed time */
    uint64_t unended; /* begun and still open at its end (not in elapsed nor the parts) */
    d9a_dist elapsed;
    uint64_t poll_ns, queued_ns, wait_ns, unknown_ns;
    uint64_t cross_worker; /* ended on another worker than the one it began on */
    d9m_parts poll_parts;  /* poll_ns by cause, as a poll's (model/attribution.h): sums to it */
} d9a_span_report;

typedef enum d9a_severity { D9A_INFO, D9A_WARNING, D9A_CRITICAL } d9a_severity;

typedef struct d9a_flag {
    d9a_severity severity;
    const char *code;     /* long_poll, sched_delay, wake_delay, blocking_in_poll, lock_contention, task_leak,
                             worker_imbalance, cpu_contention, dropped_events, missing_source,
                             out_of_order, unseen_io_uring */
    char title[200];
    char evidence[600];
    char hint[300];       /* what to do, or "" */
} d9a_flag;

/* An allocation site of the heap profile (AllocEvent's stack): weighted estimates. */
typedef struct d9a_heap_site_report {
    const d9a_stack_view *stack;
    double alloc_bytes, alloc_count;  /* allocated over the trace */
    double inuse_bytes, inuse_count;  /* still in use at its end */
    double peak_inuse_bytes;
    double growth_bytes;              /* in use at the end minus in use at the middle (growth_known) */
    uint64_t samples, frees;          /* sampled blocks, frees of them seen */
} d9a_heap_site_report;

typedef struct d9a_heap_report {
    bool present;                     /* AllocEvents in the trace */
    uint64_t rate;                    /* bytes per sample (memory_profile.sample_rate_bytes) */
    uint64_t samples, frees, frees_unmatched;
    double alloc_bytes, inuse_bytes;  /* all sites */
    bool growth_known;                /* the trace's span was known: growth is over its second half */
    const d9a_heap_site_report *by_alloc, *by_inuse, *leaks; /* top lists; leaks: in use at the
                                         end and never freed from (in use only grew), by bytes */
    size_t nby_alloc, nby_inuse, nleaks;
} d9a_heap_report;

typedef struct d9a_report {
    /* summary */
    uint64_t start_ns, end_ns, duration_ns; /* the analyzed time */
    uint64_t trace_first_ns, trace_last_ns; /* every timestamped event */
    bool windowed;                          /* --from/--to applied */
    const char *window_error; /* the window holds none of the trace (common/time_arg.h: the
                               * commands refuse it), NULL when it does */
    uint64_t events;
    struct {
        uint64_t poll_starts, poll_ends, parks, unparks, wakes, spawns, terminates;
        uint64_t cpu_samples, offcpu_samples, sched_switches, task_dumps, queue_samples;
        uint64_t symbols, drop_events, worker_registrations, memory_maps, other;
    } counts;
    uint64_t dropped;
    const d9a_named_count *drops_by_reason;
    size_t ndrops;
    const d9a_kv *metadata; /* each key's last value over every SegmentMetadataEvent */
    size_t nmetadata;
    const d9a_kv_change *metadata_changed; /* the keys whose last value is not the first one's */
    size_t nmetadata_changed;
    const d9a_source *sources;
    size_t nsources;
    bool have_clock_sync;
    uint64_t clock_mono_ns, clock_realtime_ns; /* first ClockSyncEvent */
    uint64_t unmatched_poll_starts, unmatched_poll_ends;
    uint64_t late_records;   /* arrived after the reordering window had moved past them */
    uint64_t unresolved_refs; /* spawn locations / stacks whose pool entry was missing */

    const d9a_worker_report *workers;
    size_t nworkers;

    d9a_dist polls;
    uint64_t polls_over_warn, polls_over_crit;
    const d9a_long_poll *long_polls;
    size_t nlong_polls;

    d9a_dist sched_wait;
    uint64_t sched_over_warn, sched_over_crit;
    const d9a_sched_delay *sched_worst;
    size_t nsched_worst;

    d9a_dist wake_delay;
    uint64_t wakes, wakes_unpolled, wake_over_warn, wake_over_crit;
    const d9a_wake_delay *wake_worst;
    size_t nwake_worst;

    const d9a_location_report *locations; /* by total poll time, decreasing */
    size_t nlocations;
    d9m_parts parts; /* where all polls' time went (the locations' sum): adds up to polls.total */

    uint64_t spawned, terminated, terminated_unknown, live_at_end;
    double live_growth_per_s; /* slope of live tasks over the second half */
    const d9a_live_point *live_series;
    size_t nlive_series;

    uint64_t offcpu_total, offcpu_in_poll, offcpu_parked, offcpu_other;
    uint64_t blocked_in_poll;    /* off-CPU samples inside polls, preemptions left out */
    uint64_t blocked_in_poll_ns; /* their estimated time off-CPU (an upper bound) */
    const d9a_sample_group *blocking_functions, *blocking_stacks;
    size_t nblocking_functions, nblocking_stacks;
    const d9a_sample_group *blocking_syscalls; /* by .syscall (NULL: not in a system call);
                                                  .function is its top blocking function */
    size_t nblocking_syscalls;

    const d9a_lock_wait *lock_waits; /* by total time, decreasing */
    size_t nlock_waits;

    uint64_t cpu_total, cpu_in_poll;
    const d9a_sample_group *cpu_functions, *cpu_stacks;
    size_t ncpu_functions, ncpu_stacks;

    uint64_t migration_polls; /* polls of a task polled before */
    uint64_t migrations;      /* ... on another worker than its previous poll */
    uint64_t tasks_polled, tasks_migrated;
    double migrations_per_s;
    const d9a_migrating_task *top_migrating;
    size_t ntop_migrating;

    uint64_t polls_with_queue, polls_with_queue_while_parked;
    uint64_t queue_samples_nonzero, queue_samples_nonzero_while_parked;
    const d9a_queued_example *queued_examples; /* by local queue depth */
    size_t nqueued_examples;

    /* governed sources (CoverageEvent): where they recorded partially; none: no records */
    const d9a_coverage_source *coverage;
    size_t ncoverage;
    const d9a_coverage_period *coverage_periods; /* partial periods, in time order per source */
    size_t ncoverage_periods;
    d9a_poll_cpu_cover poll_cpu; /* long polls whose off-CPU time is accounted (poll_cpu_cover.h) */

    /* spans (d9_span_begin / d9_span_end) by name, by total elapsed time decreasing */
    const d9a_span_report *spans;
    size_t nspans;
    uint64_t span_stray_ends, span_reopened; /* ends that closed nothing; begins of an open one */

    /* sealed segments deleted before upload (UploadLossEvent), all runs' total (run NULL):
     * segments 0 when none */
    d9a_upload_loss_run upload_lost;

    d9a_heap_report heap;  /* sampled heap profile (AllocEvent, FreeEvent) */

    bool symbols_present;
    const d9a_flag *flags; /* critical first */
    size_t nflags;
} d9a_report;

const char *d9a_severity_name(d9a_severity s); /* "info", "warning", "critical" */

#endif
