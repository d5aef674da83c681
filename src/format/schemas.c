#include "format/schemas.h"

#include "format/wire.h"

#define FIELDS(...) (const d9_schema_field[]){__VA_ARGS__}
#define DEF(nm, ts, ...)                                                                   \
    {.name = nm, .has_timestamp = ts,                                                      \
     .field_count = sizeof(FIELDS(__VA_ARGS__)) / sizeof(d9_schema_field),                 \
     .fields = FIELDS(__VA_ARGS__)}

#define OPT(t) (D9_FT_OPTIONAL | (t))

const d9_schema_def d9_builtin_schemas[D9_SCH_BUILTIN_COUNT] = {
    [D9_SCH_POLL_START] = DEF("PollStartEvent", 1, {"worker_id", D9_FT_VARINT},
                              {"local_queue", D9_FT_U8}, {"task_id", D9_FT_VARINT},
                              {"spawn_loc", D9_FT_POOLED_STRING}),
    [D9_SCH_POLL_END] = DEF("PollEndEvent", 1, {"worker_id", D9_FT_VARINT}),
    [D9_SCH_WORKER_PARK] = DEF("WorkerParkEvent", 1, {"worker_id", D9_FT_VARINT},
                               {"local_queue", D9_FT_U8}, {"cpu_time_ns", D9_FT_VARINT},
                               {"tid", D9_FT_U32}),
    [D9_SCH_WORKER_UNPARK] = DEF("WorkerUnparkEvent", 1, {"worker_id", D9_FT_VARINT},
                                 {"local_queue", D9_FT_U8}, {"cpu_time_ns", D9_FT_VARINT},
                                 {"sched_wait_ns", D9_FT_VARINT}, {"tid", D9_FT_U32}),
    [D9_SCH_QUEUE_SAMPLE] = DEF("QueueSampleEvent", 1, {"global_queue", D9_FT_U8}),
    [D9_SCH_TASK_SPAWN] = DEF("TaskSpawnEvent", 1, {"task_id", D9_FT_VARINT},
                              {"spawn_loc", D9_FT_POOLED_STRING}, {"instrumented", D9_FT_BOOL}),
    [D9_SCH_TASK_TERMINATE] = DEF("TaskTerminateEvent", 1, {"task_id", D9_FT_VARINT}),
    [D9_SCH_WAKE] = DEF("WakeEventEvent", 1, {"waker_task_id", D9_FT_VARINT},
                        {"woken_task_id", D9_FT_VARINT}, {"target_worker", D9_FT_U8}),
    [D9_SCH_CPU_SAMPLE] = DEF("CpuSampleEvent", 1, {"worker_id", D9_FT_VARINT},
                              {"tid", D9_FT_U32}, {"source", D9_FT_U8},
                              {"thread_name", OPT(D9_FT_POOLED_STRING)},
                              {"callchain", D9_FT_POOLED_STACK}, {"cpu", OPT(D9_FT_VARINT)}),
    [D9_SCH_TASK_DUMP] = DEF("TaskDumpEvent", 1, {"task_id", D9_FT_VARINT},
                             {"callchain", D9_FT_POOLED_STACK}),
    [D9_SCH_SEGMENT_METADATA] = DEF("SegmentMetadataEvent", 1, {"entries", D9_FT_STRING_MAP}),
    [D9_SCH_CLOCK_SYNC] = DEF("ClockSyncEvent", 1, {"realtime_ns", D9_FT_VARINT}),
    [D9_SCH_SYMBOL_TABLE_ENTRY] = DEF("SymbolTableEntry", 1, {"addr", D9_FT_VARINT},
                                      {"size", D9_FT_VARINT}, {"symbol_name", D9_FT_POOLED_STRING},
                                      {"inline_depth", D9_FT_VARINT},
                                      {"source_file", D9_FT_POOLED_STRING},
                                      {"source_line", D9_FT_VARINT}),
    [D9_SCH_DROPPED_EVENTS] = DEF("DroppedEventsEvent", 1, {"count", D9_FT_VARINT},
                                  {"reason", D9_FT_POOLED_STRING}, {"tid", D9_FT_U32},
                                  {"worker_id", D9_FT_VARINT}),
    [D9_SCH_WORKER_REGISTERED] = DEF("WorkerRegisteredEvent", 1, {"worker_id", D9_FT_VARINT},
                                     {"tid", D9_FT_U32}, {"runtime", D9_FT_POOLED_STRING},
                                     {"index", D9_FT_VARINT},
                                     {"thread_name", D9_FT_POOLED_STRING}),
    [D9_SCH_SCHED_SWITCH] = DEF("SchedSwitchEvent", 1, {"tid", D9_FT_U32},
                                {"worker_id", D9_FT_VARINT}, {"switch_out", D9_FT_BOOL},
                                {"preempted", D9_FT_BOOL}, {"cpu", OPT(D9_FT_VARINT)}),
    [D9_SCH_MEMORY_MAP] = DEF("MemoryMapEvent", 1, {"start", D9_FT_VARINT}, {"end", D9_FT_VARINT},
                              {"file_offset", D9_FT_VARINT}, {"path", D9_FT_POOLED_STRING},
                              {"build_id", D9_FT_STRING}),
    [D9_SCH_STACK_ORIGIN] = DEF("StackOriginEvent", 1, {"callchain", D9_FT_POOLED_STACK},
                                {"method", D9_FT_U8}),
    [D9_SCH_TASK_OBJECT] = DEF("TaskObjectEvent", 1, {"task_id", D9_FT_VARINT},
                               {"object", D9_FT_VARINT}),
    [D9_SCH_COVERAGE] = DEF("CoverageEvent", 1, {"source", D9_FT_POOLED_STRING},
                            {"mode", D9_FT_POOLED_STRING}, {"previous_mode", D9_FT_POOLED_STRING},
                            {"previous_since_ns", D9_FT_VARINT}, {"one_in", D9_FT_VARINT},
                            {"rate_per_s", D9_FT_VARINT}, {"cost_ppm", D9_FT_VARINT},
                            {"budget_ppm", D9_FT_VARINT}),
    [D9_SCH_UPLOAD_LOSS] = DEF("UploadLossEvent", 1, {"run_id", D9_FT_POOLED_STRING},
                               {"segments", D9_FT_VARINT}, {"bytes", D9_FT_VARINT},
                               {"first_start_unix_ns", D9_FT_VARINT},
                               {"last_end_unix_ns", D9_FT_VARINT}, {"reason", D9_FT_POOLED_STRING}),
    /* dial9's span events (its tracing layer's, by the names its viewer also accepts): their
     * fields first, then ours (the task being polled, the thread), which its viewer shows as
     * the span's fields. span_id is the user's id; a parent is never written. */
    [D9_SCH_SPAN_ENTER] = DEF("SpanEnterEvent", 1, {"worker_id", D9_FT_VARINT},
                              {"span_id", D9_FT_VARINT}, {"parent_span_id", OPT(D9_FT_VARINT)},
                              {"span_name", D9_FT_POOLED_STRING}, {"task_id", D9_FT_VARINT},
                              {"tid", D9_FT_U32}),
    [D9_SCH_SPAN_EXIT] = DEF("SpanExitEvent", 1, {"worker_id", D9_FT_VARINT},
                             {"span_id", D9_FT_VARINT}, {"span_name", D9_FT_POOLED_STRING},
                             {"task_id", D9_FT_VARINT}, {"tid", D9_FT_U32}),
    [D9_SCH_ALLOC] = DEF("AllocEvent", 1, {"tid", D9_FT_U32}, {"size", D9_FT_VARINT},
                         {"addr", D9_FT_VARINT}, {"callchain", D9_FT_POOLED_STACK}),
    [D9_SCH_FREE] = DEF("FreeEvent", 1, {"tid", D9_FT_U32}, {"addr", D9_FT_VARINT},
                        {"size", D9_FT_VARINT}, {"alloc_timestamp_ns", D9_FT_VARINT}),
    /* written through the custom-event path (core/poll_cpu.c defines it with these fields) */
    [D9_SCH_POLL_CPU] = DEF("PollCpuEvent", 1, {"worker_id", D9_FT_VARINT},
                            {"cpu_time_ns", D9_FT_VARINT}, {"exact", D9_FT_BOOL}),
    /* written through the custom-event path too (preload/preload_uring_raw.c) */
    [D9_SCH_IO_URING_RING] = DEF("IoUringRingEvent", 1, {"ring_fd", D9_FT_VARINT},
                                 {"set_up_by", D9_FT_POOLED_STRING}, {"waits_seen", D9_FT_VARINT},
                                 {"state", D9_FT_POOLED_STRING}),
};
