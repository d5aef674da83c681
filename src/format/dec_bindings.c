#include "format/dec_bindings.h"

#include <string.h>

#include "format/decoder.h"

static const char *const known_names[D9_KF_COUNT] = {
    [D9_KF_WORKER_ID] = "worker_id",         [D9_KF_LOCAL_QUEUE] = "local_queue",
    [D9_KF_TASK_ID] = "task_id",             [D9_KF_SPAWN_LOC] = "spawn_loc",
    [D9_KF_CPU_TIME_NS] = "cpu_time_ns",     [D9_KF_SCHED_WAIT_NS] = "sched_wait_ns",
    [D9_KF_TID] = "tid",                     [D9_KF_GLOBAL_QUEUE] = "global_queue",
    [D9_KF_INSTRUMENTED] = "instrumented",   [D9_KF_WAKER_TASK_ID] = "waker_task_id",
    [D9_KF_WOKEN_TASK_ID] = "woken_task_id", [D9_KF_TARGET_WORKER] = "target_worker",
    [D9_KF_SOURCE] = "source",               [D9_KF_THREAD_NAME] = "thread_name",
    [D9_KF_CALLCHAIN] = "callchain",         [D9_KF_CPU] = "cpu",
    [D9_KF_ENTRIES] = "entries",             [D9_KF_REALTIME_NS] = "realtime_ns",
    [D9_KF_ADDR] = "addr",                   [D9_KF_SIZE] = "size",
    [D9_KF_SYMBOL_NAME] = "symbol_name",     [D9_KF_INLINE_DEPTH] = "inline_depth",
    [D9_KF_SOURCE_FILE] = "source_file",     [D9_KF_SOURCE_LINE] = "source_line",
    [D9_KF_COUNT_FIELD] = "count",           [D9_KF_REASON] = "reason",
    [D9_KF_RUNTIME] = "runtime",             [D9_KF_INDEX] = "index",
    [D9_KF_SWITCH_OUT] = "switch_out",       [D9_KF_PREEMPTED] = "preempted",
    [D9_KF_START] = "start",                 [D9_KF_END] = "end",
    [D9_KF_FILE_OFFSET] = "file_offset",     [D9_KF_PATH] = "path",
    [D9_KF_BUILD_ID] = "build_id",           [D9_KF_METHOD] = "method",
    [D9_KF_OBJECT] = "object",               [D9_KF_MODE] = "mode",
    [D9_KF_ONE_IN] = "one_in",
    [D9_KF_SPAN_ID] = "span_id",             [D9_KF_SPAN_NAME] = "span_name",
    [D9_KF_EXACT] = "exact",
};

void d9_dec_bind(d9_dec_binding *b, const char *name, const d9_dec_field *fields, uint16_t n) {
    b->role = D9_ROLE_OTHER;
    for (unsigned i = 0; i < D9_SCH_BUILTIN_COUNT; i++)
        if (strcmp(d9_builtin_schemas[i].name, name) == 0) {
            b->role = (uint8_t)i;
            break;
        }
    for (unsigned k = 0; k < D9_KF_COUNT; k++) {
        b->field[k] = -1;
        /* the first field of that name, as d9_schema_field_index finds it */
        size_t len = strlen(known_names[k]);
        for (uint16_t i = 0; i < n && i < INT16_MAX; i++)
            if (fields[i].name_len == len && memcmp(fields[i].name, known_names[k], len) == 0) {
                b->field[k] = (int16_t)i;
                break;
            }
    }
    b->uint_fields = 0;
    for (unsigned k = 0; k < D9_KF_COUNT; k++) {
        if (b->field[k] < 0 || fields[b->field[k]].optional) continue;
        switch (fields[b->field[k]].type) {
        case D9_FT_VARINT: case D9_FT_U8: case D9_FT_U16: case D9_FT_U32: case D9_FT_BOOL:
            b->uint_fields |= D9_KF_BIT(k);
            break;
        default: break;
        }
    }
}
