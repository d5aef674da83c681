/* The one schema-binding table of the readers: what a decoded schema is (its role: the built-in
 * schema of the same name, D9_SCH_* of format/schemas.h, or D9_ROLE_OTHER) and where each field
 * a reader knows by name sits in it. The decoder binds every schema once, when it first sees
 * it (d9_dec_schema.bind), so stats, dump, analyze, check, export and symbolize look roles and
 * fields up by index per event instead of each keeping its own table of names. */
#ifndef D9_FORMAT_DEC_BINDINGS_H
#define D9_FORMAT_DEC_BINDINGS_H

#include <stdint.h>

#include "format/schemas.h"

/* Every field name of the built-in schemas (and dial9's versions of them). */
typedef enum d9_known_field {
    D9_KF_WORKER_ID, D9_KF_LOCAL_QUEUE, D9_KF_TASK_ID, D9_KF_SPAWN_LOC, D9_KF_CPU_TIME_NS,
    D9_KF_SCHED_WAIT_NS, D9_KF_TID, D9_KF_GLOBAL_QUEUE, D9_KF_INSTRUMENTED, D9_KF_WAKER_TASK_ID,
    D9_KF_WOKEN_TASK_ID, D9_KF_TARGET_WORKER, D9_KF_SOURCE, D9_KF_THREAD_NAME, D9_KF_CALLCHAIN,
    D9_KF_CPU, D9_KF_ENTRIES, D9_KF_REALTIME_NS, D9_KF_ADDR, D9_KF_SIZE, D9_KF_SYMBOL_NAME,
    D9_KF_INLINE_DEPTH, D9_KF_SOURCE_FILE, D9_KF_SOURCE_LINE, D9_KF_COUNT_FIELD, D9_KF_REASON,
    D9_KF_RUNTIME, D9_KF_INDEX, D9_KF_SWITCH_OUT, D9_KF_PREEMPTED, D9_KF_START, D9_KF_END,
    D9_KF_FILE_OFFSET, D9_KF_PATH, D9_KF_BUILD_ID, D9_KF_METHOD, D9_KF_OBJECT, D9_KF_MODE,
    D9_KF_ONE_IN,
    D9_KF_SPAN_ID, D9_KF_SPAN_NAME,
    D9_KF_EXACT,
    D9_KF_COUNT
} d9_known_field;

/* The role of a schema no built-in one is named like (a custom event, dial9's spans...). */
#define D9_ROLE_OTHER ((uint8_t)D9_SCH_BUILTIN_COUNT)
#define D9_ROLE_COUNT (D9_SCH_BUILTIN_COUNT + 1)

typedef struct d9_dec_binding {
    uint8_t role;                  /* D9_SCH_* or D9_ROLE_OTHER */
    int16_t field[D9_KF_COUNT];    /* index of the field in the schema, -1 when it has none */
    /* bit k (D9_KF_*): field k is there with a required Varint, U8, U16, U32 or Bool type, so
     * every event of the schema holds it present and its value.u is what d9_value_uint reads:
     * a reader tests its fields' bits once per schema or event, not each value's type */
    uint64_t uint_fields;
} d9_dec_binding;
_Static_assert(D9_KF_COUNT <= 64, "d9_dec_binding.uint_fields has a bit per known field");

/* The bit of known field k in d9_dec_binding.uint_fields. */
#define D9_KF_BIT(k) ((uint64_t)1 << (k))

struct d9_dec_field;
/* Bind a schema called `name` (NUL-terminated) with fields[0..n). The decoder does it. */
void d9_dec_bind(d9_dec_binding *b, const char *name, const struct d9_dec_field *fields, uint16_t n);

#endif
