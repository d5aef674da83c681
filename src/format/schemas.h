/* The event schemas this project writes: dial9's built-in ones (exact names, fields and types,
 * so dial9's tools read our traces) and our additions (docs/schemas.md). The type id of a
 * built-in schema in our streams is its enum value; custom application events follow. */
#ifndef D9_FORMAT_SCHEMAS_H
#define D9_FORMAT_SCHEMAS_H

#include "format/encoder.h"

enum d9_schema_id {
    D9_SCH_POLL_START,
    D9_SCH_POLL_END,
    D9_SCH_WORKER_PARK,
    D9_SCH_WORKER_UNPARK,
    D9_SCH_QUEUE_SAMPLE,
    D9_SCH_TASK_SPAWN,
    D9_SCH_TASK_TERMINATE,
    D9_SCH_WAKE,
    D9_SCH_CPU_SAMPLE,
    D9_SCH_TASK_DUMP,
    D9_SCH_SEGMENT_METADATA,
    D9_SCH_CLOCK_SYNC,
    D9_SCH_SYMBOL_TABLE_ENTRY,
    /* our additions */
    D9_SCH_DROPPED_EVENTS,
    D9_SCH_WORKER_REGISTERED,
    D9_SCH_SCHED_SWITCH,
    D9_SCH_MEMORY_MAP,
    D9_SCH_STACK_ORIGIN,
    D9_SCH_TASK_OBJECT,
    D9_SCH_COVERAGE,
    D9_SCH_UPLOAD_LOSS,
    D9_SCH_SPAN_ENTER, /* d9_span_begin: dial9's SpanEnterEvent fields, and ours after them */
    D9_SCH_SPAN_EXIT,  /* d9_span_end: dial9's SpanExitEvent fields, and ours */
    D9_SCH_ALLOC, /* dial9's AllocEvent and FreeEvent: sampled heap blocks */
    D9_SCH_FREE,
    D9_SCH_POLL_CPU, /* a long poll's CPU time when the thread was switched out in it (core/poll_cpu.h) */
    D9_SCH_IO_URING_RING, /* the shim's note of a ring it never saw waited on (preload_uring_raw.c) */
    D9_SCH_BUILTIN_COUNT,
    D9_SCH_FIRST_CUSTOM = 64,
};

extern const d9_schema_def d9_builtin_schemas[D9_SCH_BUILTIN_COUNT];

/* StackOriginEvent.method: how a pooled stack was obtained (docs/schemas.md). The recorder
 * writes them (sources/stack_unwind.h, which may not include format/: test_source_unwinder
 * checks that its values are these); the readers count and mark stacks by them. */
enum d9_stack_origin_method {
    D9_ORIGIN_UNRECORDED = 0,     /* no unwinding was attempted */
    D9_ORIGIN_FRAME_POINTERS = 1, /* frame pointers only */
    D9_ORIGIN_CFI = 2,            /* with CFI unwinding: complete */
    D9_ORIGIN_TRUNCATED = 3,      /* ended early: the callers of its last frame were not recorded */
    D9_ORIGIN_METHODS             /* how many there are */
};

#endif
