/* Span marks in a hand-built trace (test_analysis_builder.h): dial9's SpanEnterEvent and
 * SpanExitEvent, as the recorder writes them. */
#ifndef D9_TESTS_SPAN_TRACE_H
#define D9_TESTS_SPAN_TRACE_H

#include "test_analysis_builder.h"

static inline void tb_span_schemas(tb *t) {
    d9_enc_schema(&t->b, D9_SCH_SPAN_ENTER, &d9_builtin_schemas[D9_SCH_SPAN_ENTER]);
    d9_enc_schema(&t->b, D9_SCH_SPAN_EXIT, &d9_builtin_schemas[D9_SCH_SPAN_EXIT]);
}

static inline void tb_span(tb *t, bool enter, uint64_t ts, uint64_t worker, uint64_t id, uint32_t name,
                           uint64_t task, uint32_t tid) {
    d9_enc_event(&t->b, &t->st, enter ? D9_SCH_SPAN_ENTER : D9_SCH_SPAN_EXIT, ts);
    d9_put_varint(&t->b, worker);
    d9_put_varint(&t->b, id);
    if (enter) d9_put_u8(&t->b, 0); /* no parent */
    d9_put_u32(&t->b, name);
    d9_put_varint(&t->b, task);
    d9_put_u32(&t->b, tid);
}

#endif
