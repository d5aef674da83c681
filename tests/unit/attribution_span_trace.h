/* attribution_trace.h's hand-built trace with a span inside each of its polls (task, window):
 *   lock_req   task 1, 0.5 .. 7.5 ms   (lock.c's poll, 0 .. 10 ms)
 *   io_req     task 3, 38 .. 47 ms     (io.c's, 38 .. 48 ms; the governor samples 40 .. 45)
 *   drop_req   task 4, 51 .. 58 ms     (drop.c's, 50 .. 60 ms; a drop at 55 ms)
 *   sleep_req  task 5, 65.5 .. 69.5 ms (after.c's, 65 .. 70 ms)
 * shared by the span attribution tests of analyze and of the export. */
#ifndef D9_TESTS_ATTRIBUTION_SPAN_TRACE_H
#define D9_TESTS_ATTRIBUTION_SPAN_TRACE_H

#include "attribution_trace.h"
#include "span_trace.h"

static inline void attribution_add_span(tb *t, const char *name, uint64_t task, uint64_t from, uint64_t to) {
    uint32_t n = tb_string(t, name);
    tb_span(t, true, ATTR_T0 + from, 0, 1, n, task, 100);
    tb_span(t, false, ATTR_T0 + to, 0, 1, n, task, 100);
}

static inline void attribution_span_trace(tb *t, bool switches) {
    attribution_trace(t, switches);
    tb_span_schemas(t);
    attribution_add_span(t, "lock_req", 1, 500 * US, 7500 * US);
    attribution_add_span(t, "io_req", 3, 38 * MS, 47 * MS);
    attribution_add_span(t, "drop_req", 4, 51 * MS, 58 * MS);
    attribution_add_span(t, "sleep_req", 5, 65500 * US, 69500 * US);
}

#endif
