/* The model every exporter writes from: a trace's events turned into what the tools outside
 * show. Workers (one thread track each), polls and parks (slices), wakes (flows from the wake
 * to the poll it caused), queue depths and scheduling delays (counters), CPU and off-CPU stack
 * samples (with symbolized, interned call stacks), all restricted to a time window.
 *
 *     d9_xmodel *m = d9_xmodel_new();
 *     for each event of each file:  d9_xmodel_add(m, &ev);
 *     d9_xmodel_finish(m, &window, err, sizeof err);   // pairs, sorts, clips, symbolizes
 *     d9_export_write(m, D9_XF_PERFETTO, &opts, out, err, sizeof err);  (export.h)
 *
 * Pairing follows dial9: a poll runs from a PollStartEvent to the next PollEndEvent of the same
 * worker, a park from a WorkerParkEvent to the next WorkerUnparkEvent; events are sorted by
 * time per worker first (files are ordered per stream only). A start that meets another start
 * before its end is dropped and counted. On one worker, polls and parks never overlap in the
 * model: a slice that runs into the next one is cut at the next one's start (counted), so the
 * exporters' slices nest properly by construction.
 */
#ifndef D9_EXPORT_MODEL_H
#define D9_EXPORT_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/time_arg.h"

#include "core/stack_table.h"
#include "export/string_pool.h"
#include "common/u64_map.h"
#include "format/decoder.h"
#include "model/spans.h"
#include "model/attribution.h"
#include "model/heap_sites.h"

#define D9_XNONE UINT32_MAX

/* A thread that runs polls: one track in the exports. */
typedef struct d9_xworker {
    uint64_t id;        /* worker id in the trace (254 blocking pool, 255 not a worker) */
    uint32_t tid;       /* its thread id when known (tid_known) */
    bool tid_known;
    uint32_t name;      /* display name, e.g. "worker 0 (runtime main)" (string index) */
    uint32_t runtime;   /* runtime name, 0 = unknown (string index) */
    uint64_t polls, parks, samples; /* counts inside the window */
} d9_xworker;

typedef struct d9_xpoll {
    uint64_t start, end; /* ns, CLOCK_MONOTONIC, clipped to the window */
    uint64_t task;
    uint32_t worker;     /* index into workers */
    uint32_t loc;        /* spawn location (string index), 0 = unknown */
    uint32_t queue;      /* local queue depth at the start */
    uint32_t wakes_first, wakes_count; /* wakes that led to this poll: wake_order[first..] */
    d9m_poll_cpu cpu_event; /* what its PollCpuEvent said, if it had one (model/attribution.h's rule) */
    uint64_t cpu_ns;        /* its exact CPU time, when it said so */
} d9_xpoll;

typedef struct d9_xpark {
    uint64_t start, end;
    uint32_t worker;
    bool has_sched_wait;
    uint64_t sched_wait_ns; /* run-queue wait between park and unpark (from the unpark) */
    bool has_cpu;           /* schedstat was read at both ends */
    uint64_t cpu_ns;        /* the thread's CPU time consumed while parked (unpark - park) */
} d9_xpark;

typedef struct d9_xwake {
    uint64_t ts;
    uint64_t waker_task, woken_task;
    uint32_t from_worker; /* worker index it came from, D9_XNONE when not from a worker */
    uint32_t target;      /* the woken task's next poll (index into polls) or D9_XNONE */
} d9_xwake;

enum { D9_XSAMPLE_CPU = 0, D9_XSAMPLE_OFFCPU = 1 }; /* CpuSampleEvent.source */

typedef struct d9_xsample {
    uint64_t ts;
    uint32_t worker;  /* index into workers or D9_XNONE */
    uint32_t tid;
    uint32_t stack;   /* index into stacks */
    uint32_t poll;    /* the poll running on that worker at ts, or D9_XNONE */
    uint32_t thread_name; /* string index, 0 = none */
    uint8_t source;   /* D9_XSAMPLE_CPU / D9_XSAMPLE_OFFCPU */
    bool parked;      /* the worker was parked at ts */
} d9_xsample;

typedef struct d9_xcounter {
    uint64_t ts;
    uint64_t value;
    uint32_t worker; /* index into workers; D9_XNONE for the global queue */
} d9_xcounter;

/* A span (d9_span_begin / d9_span_end) begun in the window, split by the span model
 * (model/spans.h) over the model's polls and wakes. */
typedef struct d9_xspan {
    uint64_t start, end;      /* end: the drawn end when unended */
    uint64_t id;
    uint32_t name;            /* string index */
    uint32_t name_index;      /* into span_names */
    uint32_t lane;            /* spans of one name that overlap go on different lanes */
    bool ended;
    uint64_t begin_task, end_task;
    d9m_span_parts parts;
    d9m_parts poll_parts;     /* parts.poll_ns by cause (model/spans.h), when poll_parts is set */
} d9_xspan;

/* A piece of a poll's attribution handed to the span model: a gap (part UNKNOWN) or an
 * off-CPU interval with its cause. */
typedef struct d9_xattr_piece {
    uint64_t from, to;
    uint8_t part;
} d9_xattr_piece;

/* A span event as read, kept until finish pairs them (export_spans.c). */
typedef struct d9_xspan_mark {
    uint64_t ts, id, task;
    uint32_t name;
    bool begin;
} d9_xspan_mark;

/* An executable mapping (MemoryMapEvent), for pprof mappings and Perfetto rel_pc. */
typedef struct d9_xmapping {
    uint64_t start, end, file_offset;
    uint32_t path, build_id; /* string indexes */
} d9_xmapping;

/* One function frame at an address: an address yields one frame per inline level. */
typedef struct d9_xframe {
    uint32_t name;   /* symbol, or "0x..." when the trace has no symbol for the address */
    uint32_t file;   /* source file, 0 = unknown */
    uint32_t line;
    uint16_t depth;  /* inline depth: 0 = the function that holds the address */
    bool symbolized;
} d9_xframe;

/* A distinct address of the call stacks, with its frames innermost first (frames[first]) and
 * its mapping. The pprof Location. */
typedef struct d9_xloc {
    uint64_t addr;
    uint32_t first_frame, frame_count;
    uint32_t mapping; /* index into mappings or D9_XNONE */
} d9_xloc;

/* A distinct call stack: its locations, leaf first (stack_locs[first..first+count)). */
typedef struct d9_xstack {
    uint32_t first, count;
} d9_xstack;

/* A time window (common/time_arg.h): relative times count from the trace's first timestamp
 * or back from its last; unset ends are the trace's. What it holds is the rule every command
 * follows (d9_time_window_holds): instants by their time, polls and parks by their start, each
 * drawn cut at --to. */
typedef struct d9_xwindow {
    d9_time_arg from, to;
} d9_xwindow;

typedef struct d9_xmodel d9_xmodel;

struct d9_xmodel {
    d9_xstrings strings;

    d9_xworker *workers;    size_t worker_count;
    d9_xpoll *polls;        size_t poll_count;   /* sorted by (worker, start) */
    uint32_t *worker_polls; /* per worker: index of its first poll (worker_count + 1 entries) */
    d9_xpark *parks;        size_t park_count;   /* sorted by (worker, start) */
    d9_xwake *wakes;        size_t wake_count;   /* sorted by ts */
    uint32_t *wake_order;   /* wake indexes grouped by target poll (see d9_xpoll.wakes_first) */
    d9_xsample *samples;    size_t sample_count; /* sorted by ts */
    d9_xcounter *local_queue;  size_t local_queue_count;  /* per worker, sorted by ts */
    d9_xcounter *global_queue; size_t global_queue_count; /* sorted by ts */
    d9_xcounter *sched_delay;  size_t sched_delay_count;  /* at each unpark, sorted by ts */

    d9_xspan *spans;        size_t span_count;   /* sorted by start */
    uint32_t *span_names;   size_t span_name_count; /* distinct names (string indexes), by first span */
    uint32_t *span_name_lanes; /* lanes each of span_names uses */
    d9_xspan_mark *span_marks; size_t span_mark_count, span_mark_cap; /* read, until finish */
    uint64_t span_stray_ends;

    d9_xmapping *mappings;  size_t mapping_count;
    d9_xframe *frames;      size_t frame_count;
    d9_xloc *locs;          size_t loc_count;
    d9_xstack *stacks;      size_t stack_count;
    uint32_t *stack_locs;   size_t stack_loc_count;
    d9m_heap heap;          /* sampled heap sites, the whole trace (sites' stack: index into stacks) */

    /* where each poll's time went (model/attribution.h, export_attribution.h), by poll index;
     * NULL when the trace has no switch records (every poll would be unknown) */
    d9m_parts *poll_parts;
    uint32_t part_names[D9M_PARTS]; /* string indexes of "<part>_ns", when poll_parts is set */
    uint32_t cause_key;             /* ... of "cause", and of each part's bare name: pprof's */
    uint32_t cause_names[D9M_PARTS];/* label of an off-CPU sample */
    uint8_t *sample_cause;          /* by sample index, with poll_parts: the d9m_part of the
                                       off-CPU interval an off-CPU sample was taken at */
    uint32_t span_part_names[D9M_PARTS]; /* "poll_<part>_ns": a span's poll part by cause */
    /* each poll's gaps and off-CPU intervals, by poll index (poll i: poll_pieces[
     * poll_piece_first[i] .. poll_piece_first[i + 1])), kept from the attribution until the
     * spans are split (only when the trace has spans) */
    d9_xattr_piece *poll_pieces;
    uint32_t *poll_piece_first;

    /* the trace */
    uint64_t first_ts, last_ts; /* of all timestamped events read (0, 0 when none) */
    d9_time_window window;      /* what is in the model (common/time_arg.h), after finish */
    uint64_t from, to;          /* the time drawn: the window, up to the trace's end without
                                 * --to (the whole trace by default) */
    bool have_realtime;
    uint64_t realtime_at_from;  /* wall clock ns at `from` (from a ClockSyncEvent) */
    uint32_t service;           /* metadata "service" (string index), 0 = none */
    uint32_t pid;               /* metadata "pid", 0 = unknown */

    /* what could not be used */
    uint64_t unmatched_polls, unmatched_parks; /* starts without an end (or ends alone) */
    uint64_t cut_slices;        /* slices cut short because the next one started earlier */
    uint64_t unresolved_strings;/* pooled strings undefined when read */
    uint64_t events;            /* events read */

    struct d9_xbuild *build;    /* state while adding (freed by finish) */
    bool failed;                /* out of memory: results are incomplete */
};

d9_xmodel *d9_xmodel_new(void);
void d9_xmodel_free(d9_xmodel *m);

/* Take in one decoded event (any schema; the ones the exports use are kept). Events of
 * several files may come in any order. Returns 0, or -1 when out of memory. */
int d9_xmodel_add(d9_xmodel *m, const d9_event *ev);

/* Build the model from everything added: pair, sort, clip to the window (NULL: all),
 * symbolize stacks. Returns 0, or -1 with a message (out of memory, empty window). */
int d9_xmodel_finish(d9_xmodel *m, const d9_xwindow *w, char *err, size_t errlen);

/* export_spans.c: keep one span event (its name already interned); pair and split them once
 * the polls and wakes are built (called by finish). 0, or -1 when out of memory. */
int d9_xspans_add(d9_xmodel *m, const d9_event *ev, uint32_t name);
int d9_xspans_build(d9_xmodel *m, const d9m_coverage *cov);

static inline const char *d9_xm_str(const d9_xmodel *m, uint32_t index) {
    return d9_xstr_get(&m->strings, index);
}

#endif
