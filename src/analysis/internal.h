/* State of an analysis shared by its parts: ingest.c (events -> per-worker pairing ->
 * records), sweep.c (records in time order -> statistics), report.c (statistics -> report),
 * red_flags.c. Not for use outside src/analysis. */
#ifndef D9_ANALYSIS_INTERNAL_H
#define D9_ANALYSIS_INTERNAL_H

#include "analysis/analysis.h"
#include "analysis/upload_loss.h"
#include "model/heap_sites.h"
#include "analysis/hist.h"
#include "common/u64_map.h"
#include "common/u64_set.h"
#include "analysis/intern.h"
#include "analysis/records.h"
#include "analysis/span_marks.h"
#include "analysis/symtab.h"
#include "analysis/topn.h"
#include "model/attribution.h"
#include "model/pairing.h"
#include "model/switch_stack_match.h"
#include "model/thread_worker.h"
#include "model/wake_link.h"
#include "analysis/span_stats.h"

#define D9A_MAX_WORKER_ID 4095    /* worker ids above are ignored (dial9's are < 256) */
#define D9A_POLL_GROUPS 16        /* distinct stacks kept per long poll */
#define D9A_LIVE_SLOTS 512        /* live-task timeline resolution (slots double in width) */
#define D9A_NO_ID UINT32_MAX

/* Blocked time of one poll under one switch-out stack: its cause is read at the report, when
 * the stack has its symbols (attribution.c). */
typedef struct attr_stack {
    uint32_t stack;
    uint64_t ns;
} attr_stack;

typedef struct worker {
    uint64_t id;
    d9m_pair_state pair; /* polls and parks, paired in stream order (model/pairing.h) */
    bool have_unpark;    /* the busy period since the last unpark (CPU time against wall) */
    uint64_t unpark_ts, unpark_cpu;
    uint64_t tid;
    uint32_t runtime; /* string id or D9A_NO_ID */
    /* statistics of the analyzed time */
    uint64_t polls, poll_ns, parks, park_ns;
    uint64_t busy_periods, busy_wall_ns, busy_cpu_ns;
    d9a_hist sched_wait;
    uint64_t cpu_in_poll, off_in_poll;
    uint64_t offcpu_in_poll_ns, preempted_in_poll_ns;
    uint64_t polls_with_queue, polls_with_queue_while_parked, max_lq;
    /* sweep state: the latest poll and park in time order */
    bool sw_has_poll, sw_has_park;
    uint64_t sw_poll_start, sw_poll_end, sw_park_start, sw_park_end;
    uint32_t sw_poll_loc;
    long sw_poll_slot; /* long-poll slot or -1 */
    uint32_t sw_poll_gen;
    /* the last off-CPU sample inside a poll: how long the thread stayed off-CPU is unknown
     * until the worker's next sample or the end of the poll (an upper bound) */
    bool pend_off;
    uint64_t pend_ts, pend_poll_end;
    uint64_t pend_off_end; /* end of the SchedSwitch off-CPU interval holding it, or max */
    bool sw_has_off;       /* the latest SchedSwitch off-CPU interval */
    uint64_t sw_off_start, sw_off_end;
    uint32_t pend_stack, pend_gen;
    long pend_slot;
    uint64_t off_est_ns;
    /* the attribution of its latest poll, open until its next poll (attribution.c) */
    bool at_open;
    d9m_attr_poll at;
    uint32_t at_loc, at_gen, nat_stk, at_stk_cap;
    long at_slot;
    d9m_span_task *at_span; /* the span model's state of the task it polls, and its generation
                               when the poll began (the task may end inside the poll) */
    uint32_t at_span_gen;
    uint64_t at_unmatched_ts, at_unmatched_ns; /* the latest blocked interval,
                              while no stack is matched to it (ns 0: none) */
    attr_stack *at_stk; /* every distinct blocking stack of the poll (nat_stk of at_stk_cap) */
    d9m_switch_match sw_match; /* which context-switch sample is which interval's (the model's rule) */
    d9a_poll_cpu_facts at_pc;  /* the open poll's, for the long polls' count (poll_cpu_cover.h) */
    bool lp_valid;             /* its latest closed poll, in the window: a PollCpuEvent's */
    uint64_t lp_start;
} worker;

typedef struct task {
    uint64_t id;
    d9m_wake_state wake; /* its wakes and its poll, linked (model/wake_link.h) */
    d9m_span_task *span; /* its state in the span model (span_sweep.h; NULL: none yet) */
    uint32_t loc;
    uint32_t polls, hops;
    uint16_t last_worker;
    bool spawned; /* spawned in the analyzed time */
    bool in_use;  /* false on the free list */
    uint32_t next_free;
} task;

typedef struct loc_stats {
    d9a_hist polls;
    uint64_t polls_over_warn;
    uint64_t spawned, terminated, live;
    d9m_parts parts; /* where its polls' time went (blocked stacks as blocked_other until the
                        report classifies them) */
} loc_stats;

typedef struct stack_stats {
    uint64_t cpu, cpu_in_poll, cpu_parked;
    uint64_t off, off_in_poll, off_parked;
    uint64_t off_in_poll_ns; /* estimated time off-CPU inside polls */
    uint64_t off_in_poll_max_ns; /* the longest of those (one sample's wait) */
    uint32_t example_loc;
} stack_stats;

typedef struct poll_group {
    uint32_t stack;
    uint8_t source;
    uint32_t count;
    uint64_t est_ns; /* off-CPU: estimated time off-CPU */
} poll_group;

typedef struct long_poll_entry {
    uint64_t start, dur, task;
    uint32_t loc;
    uint16_t worker;
    uint8_t lq;
    uint64_t cpu, off, offcpu_ns, preempted_ns;
    uint32_t ngroups;
    poll_group groups[D9A_POLL_GROUPS];
    d9m_parts parts;
    uint32_t nat_stk; /* its blocking stacks, in the analysis's lp_stk[its slot] */
} long_poll_entry;

typedef struct sched_entry {
    uint64_t ts, wait, tid;
    uint16_t worker;
} sched_entry;

typedef struct wake_entry {
    uint64_t wake, poll, task;
    uint32_t loc, wakes;
    uint16_t worker;
} wake_entry;

typedef struct migr_entry {
    uint64_t task;
    uint32_t loc, polls, hops;
} migr_entry;

typedef struct queued_entry {
    uint64_t ts;
    uint16_t worker, parked_worker;
    uint8_t lq;
} queued_entry;

typedef struct tid_state {
    uint64_t tid;
    uint16_t out_worker; /* the switch-out's worker (model/thread_worker.h), D9_WORKER_NONE */
    bool out;            /* switched out, waiting for the switch in */
    bool preempted;
    uint64_t out_ts;
} tid_state;

/* A span mark's pooled name, interned: a program marks its spans under a few names, which each
 * writing thread may pool under an id of its own. */
typedef struct span_name_slot {
    uint64_t pool;
    uint32_t name;
    bool known;
} span_name_slot;

struct d9a_analysis {
    d9a_options opt;
    bool failed, finished;

    /* per decoder / per stream caches */
    uint32_t cur_stream;
    bool stream_known;
    d9_u64_map loc_cache, stack_cache; /* pool id -> location / stack id, current stream */
    span_name_slot span_names[4];      /* span marks' pooled names by pool id, current stream */

    d9a_strings strings; /* locations, symbols, metadata, reasons, runtimes */
    d9a_stacks stacks;
    d9_u64_set truncated_stacks; /* stack ids a StackOriginEvent said were truncated */
    d9a_symtab symtab;

    /* time */
    bool have_first;
    uint64_t first_ts; /* first timestamp in file order: the origin of relative --from/--to */
    uint64_t min_ts, max_ts;
    bool window_resolved;
    d9_time_window win; /* what is analyzed (common/time_arg.h) */
    char window_error[160];

    /* summary */
    uint64_t events;
    uint64_t kind_counts[D9_ROLE_COUNT]; /* events by schema role (format/dec_bindings.h) */
    uint64_t cpu_samples, offcpu_samples;
    /* unparks with a nonzero sched_wait_ns; and, in traces that do not state their schedstat
     * source (model/schedstat_source.h), parks and unparks with a CPU time */
    uint64_t schedstat_seen;
    d9m_schedstat schedstat;   /* as the first SegmentMetadataEvent states it */
    uint64_t sched_wait_fields;
    uint64_t dropped;
    uint32_t *drop_reason;     /* string ids */
    uint64_t *drop_count;
    size_t ndrop, drop_cap;
    /* every SegmentMetadataEvent's keys, in the order they first came: the first one's value
     * (D9A_NO_ID for a key it lacked) and the last (the recorder rewrites changed metadata) */
    struct d9a_meta_entry {
        uint32_t key, first, last; /* string ids */
    } *meta;
    size_t nmeta, meta_cap;
    d9_u64_map meta_by_key; /* key's string id -> its index in meta */
    bool have_meta;
    bool have_clock;
    uint64_t clock_mono, clock_real;
    uint64_t unmatched_starts, unmatched_ends, late, unresolved;
    d9a_coverage coverage; /* CoverageEvent records (coverage.h) */
    d9a_upload_loss upload_loss; /* UploadLossEvent records (upload_loss.h) */
    /* IoUringRingEvent (the preload shim, docs/zero-code.md): rings never waited on where the
     * shim could see it, whose completions are not recorded; the first few fds */
    uint64_t unseen_rings;
    uint64_t unseen_ring_fd[4];
    d9a_span_stats spans;        /* spans by name (span_stats.h) */
    d9m_coverage swcov;    /* what the switch records cover (model/attribution.h) */
    d9a_poll_cpu_cover pcov; /* long polls with their off-CPU time accounted (poll_cpu_cover.h) */
    d9_u64_map attr_stacks; /* location << 32 | stack -> blocked ns of its polls */
    uint8_t *stack_cause;   /* by stack id: d9m_part + 1, 0 not classified yet */
    attr_stack **lp_stk;    /* by long-poll slot: the blocking stacks of the poll in it */
    uint32_t *lp_stk_cap;
    d9m_heap heap;               /* AllocEvent and FreeEvent (heap.h) */

    /* entities */
    worker **workers; /* by id, NULL when unseen */
    size_t workers_cap;
    worker **wlist;   /* the workers seen, in order of first sight */
    size_t nwlist;
    task *tasks;
    uint32_t ntasks, tasks_cap, free_task;
    uint32_t task_hit; /* the task found last, +1 (0: none): a wake and its poll, a poll and
                          the span marks inside it ask for the same task one after the other */
    d9_u64_map task_index;
    tid_state *tids;
    uint32_t ntids, tids_cap;
    d9_u64_map tid_index;
    d9m_thread_workers thread_workers; /* each thread's worker, the model's rule */
    loc_stats *locs; /* by location id */
    uint32_t locs_cap;
    stack_stats *stk; /* by stack id */
    uint32_t stk_cap;

    /* time ordering */
    d9a_rec_buf buf;
    d9a_span_marks marks; /* beside buf; buf.window bounds each (d9a_marks_full) */
    bool swept_any;
    uint64_t watermark; /* latest timestamp handed to the sweep */

    /* sweep results */
    d9a_hist polls, sched_wait, wake_delay;
    d9a_topn long_polls, sched_top, wake_top, migr_top, queued_top;
    uint64_t sched_over_warn, sched_over_crit;
    uint64_t polls_over_warn, polls_over_crit, wake_over_warn, wake_over_crit;
    uint64_t wakes, wakes_unpolled;
    uint64_t spawned, terminated, terminated_unknown;
    int64_t live;
    uint64_t migration_polls, migrations, tasks_polled, tasks_migrated;
    uint64_t polls_with_queue, polls_with_queue_while_parked;
    uint64_t qs_nonzero, qs_nonzero_while_parked;
    uint64_t off_total, off_in_poll, off_parked, cpu_total, cpu_in_poll;
    /* live-task timeline: spawns - terminations per slot */
    int64_t live_delta[D9A_LIVE_SLOTS];
    uint64_t live_slot_ns;
    uint64_t live_origin;
    uint64_t live_last_ts;

    /* the report, built by d9a_finish */
    struct d9a_report report;
    d9_arena report_arena;
    d9a_stack_view **views; /* by stack id, built on demand */
};

/* ingest.c */
/* The worker of id (created on first sight), or NULL for 255 (none), ids past the table and
 * out of memory. Inline: it runs for every poll and park mark; only a new worker takes the
 * call. */
worker *d9a_worker_add(d9a_analysis *a, uint64_t id);
static inline worker *d9a_worker(d9a_analysis *a, uint64_t id) {
    if (__builtin_expect(id < a->workers_cap && a->workers[id] != NULL, 1)) return a->workers[id];
    return d9a_worker_add(a, id);
}
/* sweep.c */
#define D9A_IDLE_MIN_NS 1000000 /* a parked worker counts as idle beside queued work when it
                                   stays parked at least this long after the observation */
#define D9A_SWITCH_MATCH_NS D9M_SWITCH_STACK_MATCH_NS /* a context-switch sample and its switch-out */
int d9a_sweep_flush(d9a_analysis *a, bool all);
/* The records held (checked as one is added), or the span marks held (as one is added), have
 * reached buf.window: time to hand the older half of both on. Each bounds itself: marks counted
 * with the records would flush a trace with spans more often (each flush compacts and merges
 * what stays) and shorten its records' reordering horizon, against the same trace without them. */
static inline bool d9a_records_full(const d9a_analysis *a) { return a->buf.n >= a->buf.window; }
static inline bool d9a_marks_full(const d9a_analysis *a) {
    return d9a_span_marks_pending(&a->marks) >= a->buf.window;
}
int d9a_sweep_finish(d9a_analysis *a);
task *d9a_task_lookup(d9a_analysis *a, uint64_t id, bool create);
/* The task of id (made when create and none), NULL when none or out of memory (a->failed):
 * the last one found is checked first, inline. */
static inline task *d9a_task(d9a_analysis *a, uint64_t id, bool create) {
    if (a->task_hit) {
        task *h = &a->tasks[a->task_hit - 1];
        if (h->in_use && h->id == id) return h;
    }
    return d9a_task_lookup(a, id, create);
}
loc_stats *d9a_loc_grow(d9a_analysis *a, uint32_t loc);
/* The statistics of location loc (NULL when out of memory). Inline: once per poll. */
static inline loc_stats *d9a_loc(d9a_analysis *a, uint32_t loc) {
    if (__builtin_expect(loc < a->locs_cap, 1)) return &a->locs[loc];
    return d9a_loc_grow(a, loc);
}
/* report.c */
int d9a_build_report(d9a_analysis *a);
void d9a_dist_from(d9a_dist *d, const d9a_hist *h);
/* attribution.c: the per-poll attribution (model/attribution.h); the sweep's side is inline,
 * attribution_sweep.h */
int d9a_attr_commit_stacks(d9a_analysis *a, const worker *w);
/* room for `need` stacks in *v (of *cap); 0, or -1 when out of memory */
int d9a_attr_stacks_reserve(attr_stack **v, uint32_t *cap, uint32_t need);
/* the worker's stacks copied to long-poll slot `slot` (nat_stk of the entry); 0 or -1 */
int d9a_attr_keep_entry_stacks(d9a_analysis *a, size_t slot, const worker *w);
/* at the report: move the blocked time of stacks from blocked_other to their causes */
int d9a_attr_classify(d9a_analysis *a, d9m_parts *parts, const attr_stack *stk, size_t n);
int d9a_attr_classify_locations(d9a_analysis *a);
/* red_flags.c */
int d9a_add_red_flags(d9a_analysis *a);

/* The window's rule (common/time_arg.h): instants by their time, slices by their start. */
static inline bool d9a_in_window(const d9a_analysis *a, uint64_t ts) {
    return d9_time_window_holds(&a->win, ts);
}

#endif
