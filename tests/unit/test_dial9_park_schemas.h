/* WorkerParkEvent and WorkerUnparkEvent as dial9 declares them, and as this recorder writes
 * them again (src/format/schemas.c): cpu_time_ns and sched_wait_ns plain Varints, with 0 for
 * "not measured". And the layout this recorder wrote for a while, both optional, absent for
 * "not measured": the tests' own traces keep it (d9_test_put_ns), so that readers are checked
 * on both. */
#ifndef D9_TESTS_DIAL9_PARK_SCHEMAS_H
#define D9_TESTS_DIAL9_PARK_SCHEMAS_H

#include "format/encoder.h"

static const d9_schema_field d9_test_dial9_park_fields[] = {
    {"worker_id", D9_FT_VARINT}, {"local_queue", D9_FT_U8}, {"cpu_time_ns", D9_FT_VARINT}, {"tid", D9_FT_U32}};
static const d9_schema_field d9_test_dial9_unpark_fields[] = {
    {"worker_id", D9_FT_VARINT}, {"local_queue", D9_FT_U8}, {"cpu_time_ns", D9_FT_VARINT},
    {"sched_wait_ns", D9_FT_VARINT}, {"tid", D9_FT_U32}};
static const d9_schema_def d9_test_dial9_park = {"WorkerParkEvent", true, 4, d9_test_dial9_park_fields};
static const d9_schema_def d9_test_dial9_unpark = {"WorkerUnparkEvent", true, 5, d9_test_dial9_unpark_fields};

static const d9_schema_field d9_test_optional_park_fields[] = {
    {"worker_id", D9_FT_VARINT}, {"local_queue", D9_FT_U8},
    {"cpu_time_ns", D9_FT_OPTIONAL | D9_FT_VARINT}, {"tid", D9_FT_U32}};
static const d9_schema_field d9_test_optional_unpark_fields[] = {
    {"worker_id", D9_FT_VARINT}, {"local_queue", D9_FT_U8}, {"cpu_time_ns", D9_FT_OPTIONAL | D9_FT_VARINT},
    {"sched_wait_ns", D9_FT_OPTIONAL | D9_FT_VARINT}, {"tid", D9_FT_U32}};
static const d9_schema_def d9_test_optional_park = {"WorkerParkEvent", true, 4, d9_test_optional_park_fields};
static const d9_schema_def d9_test_optional_unpark = {"WorkerUnparkEvent", true, 5,
                                                      d9_test_optional_unpark_fields};

/* The park or unpark schema of a test stream: dial9's layout, or the optional one. */
static inline const d9_schema_def *d9_test_park_schema(bool dial9_layout, bool unpark) {
    if (dial9_layout) return unpark ? &d9_test_dial9_unpark : &d9_test_dial9_park;
    return unpark ? &d9_test_optional_unpark : &d9_test_optional_park;
}

/* A cpu_time_ns or sched_wait_ns value as the stream's schema declares it: optional (absent
 * for D9_ABSENT) in the optional layout, a plain Varint in dial9's. */
static inline void d9_test_put_ns(d9_buf *b, bool dial9_layout, uint64_t v) {
    if (dial9_layout) {
        d9_put_varint(b, v);
        return;
    }
    d9_put_u8(b, v != D9_ABSENT);
    if (v != D9_ABSENT) d9_put_varint(b, v);
}

#endif
