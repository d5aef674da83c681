/* Data sources other than the hooks (perf CPU samples, context switches, memory maps...):
 * the collector asks each one for its new events on every drain, on its background thread,
 * and merges them by timestamp with the threads' records. A source never runs on an
 * application thread through this interface. */
#ifndef D9_CORE_SOURCE_H
#define D9_CORE_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/run_metadata.h"

typedef enum d9_src_kind {
    D9_SRC_CPU_SAMPLE, /* -> CpuSampleEvent */
    D9_SRC_SWITCH,     /* -> SchedSwitchEvent */
    D9_SRC_MMAP,       /* -> MemoryMapEvent */
    D9_SRC_LOST,       /* -> DroppedEventsEvent */
    D9_SRC_COVERAGE,   /* -> CoverageEvent */
} d9_src_kind;

typedef struct d9_src_event {
    uint64_t ts_ns; /* CLOCK_MONOTONIC */
    uint8_t kind;   /* d9_src_kind */
    uint32_t tid;   /* 0 when not about a thread */
    int32_t cpu;    /* -1 when unknown */
    union {
        struct {
            uint8_t source;        /* 0 = CPU profile, 1 = context switch */
            uint32_t nframes;
            const uint64_t *frames; /* leaf first; copied by d9_src_batch_add_frames */
            uint8_t method;         /* how the user frames were obtained (d9_stack_method), 0: not said */
            uint32_t deferred_words; /* > 0: the last this many of frames are not frames but what
                                      * d9_perf_unwind_deferred unwinds later, if the sample falls
                                      * inside a poll (core/collector_switch_stack.h) */
        } sample;
        struct {
            bool out;       /* switched out (true) or in */
            bool preempted; /* switched out while runnable */
        } sw;
        struct {
            uint64_t start, end, file_offset;
            const char *path;     /* copied */
            const char *build_id; /* hex, "" when unknown; copied */
        } map;
        struct {
            uint64_t count;
            const char *reason; /* static string */
        } lost;
        struct {                 /* a governed source changed mode (cost_governor.h) */
            const char *source;   /* static strings */
            const char *mode;
            const char *previous; /* the mode until now ("none" at the first record) */
            uint64_t previous_since_ns; /* when the previous mode began */
            uint32_t one_in;      /* 1 full, N sampled, 0 paused */
            uint64_t rate_per_s;  /* the rate the decision saw (switches/s) */
            uint64_t cost_ppm;    /* estimated cost at the new mode, millionths of one CPU */
            uint64_t budget_ppm;
        } coverage;
    };
} d9_src_event;

/* Events a source hands over in one drain. Memory is the collector's, reused every drain. */
typedef struct d9_src_batch d9_src_batch;
/* Append one event; frames/strings it points to are copied. False when out of memory. */
bool d9_src_batch_add(d9_src_batch *b, const d9_src_event *ev);

/* Turns the payload of a task dump record (what the source that captures dumps wrote after the
 * task id: its own layout) into frames, leaf first, on the collector's background thread.
 * Returns the frame count (at most `max`) and sets *method (how they were obtained: a
 * d9_stack_method of the sources, 0 = not said). Registered with d9_collector_set_dump_unwinder,
 * so the core knows nothing of unwinding. */
typedef uint32_t (*d9_dump_unwind_fn)(const uint64_t *payload, uint64_t words, uint64_t *out, uint32_t max,
                                      uint8_t *method);

typedef struct d9_source d9_source;
struct d9_source {
    const char *name;
    /* Append the events that arrived since the last call (any order). */
    void (*collect)(d9_source *s, d9_src_batch *out);
    /* A new segment starts: append what a reader of that segment alone needs (e.g. the whole
     * memory map). May be NULL. */
    void (*segment_start)(d9_source *s, d9_src_batch *out);
    /* Stop and free. Called on the recorder's thread after the last collect. */
    void (*close)(d9_source *s);
    void *ctx;
};

#endif
