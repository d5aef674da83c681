/* A span's in-poll part by cause through the whole analysis (`dial9 analyze`'s spans section),
 * on the hand-built trace of the attribution tests with a span inside each of its polls
 * (attribution_span_trace.h): the parts of the polls' time inside each span exactly, the blocked time
 * classified by its stack at the report (lock, sleep, io), a stack matched after its switch-out,
 * the governor's sampled period unknown, and a drop inside a span's window making the span
 * unknown up to it. */
#include "check.h"
#include "attribution_span_trace.h"

static const d9a_span_report *span(const d9a_report *r, const char *name) {
    for (size_t i = 0; i < r->nspans; i++)
        if (!strcmp(r->spans[i].name, name)) return &r->spans[i];
    return NULL;
}

static uint64_t part(const d9a_span_report *s, d9m_part k) { return s->poll_parts.ns[k]; }

/* Each span is one ended span of its own name; its parts add up. */
static const d9a_span_report *one(const d9a_report *r, const char *name) {
    const d9a_span_report *s = span(r, name);
    CHECK(s != NULL);
    if (!s) return NULL;
    CHECK_EQ_U64(s->count, 1);
    CHECK_EQ_U64(d9m_parts_total(&s->poll_parts), s->poll_ns);
    CHECK_EQ_U64(s->poll_ns + s->queued_ns + s->wait_ns + s->unknown_ns, s->elapsed.total);
    return s;
}

static void test_spans(bool switches) {
    tb t = {0};
    attribution_span_trace(&t, switches);
    d9a_analysis *a;
    const d9a_report *r = tb_analyze(&a, &t, NULL);
    CHECK(r != NULL);
    if (!r) goto out;
    const d9a_span_report *s = one(r, "lock_req");
    if (s && switches) {
        CHECK_EQ_U64(s->poll_ns, 7 * MS);
        CHECK_EQ_U64(part(s, D9M_PART_LOCK), 4 * MS);    /* 1 .. 5, its stack read at the report */
        CHECK_EQ_U64(part(s, D9M_PART_RUNNABLE), 1 * MS); /* 6 .. 7 */
        CHECK_EQ_U64(part(s, D9M_PART_ON_CPU), 2 * MS);
    } else if (s) {
        CHECK_EQ_U64(part(s, D9M_PART_UNKNOWN), 7 * MS); /* no switch records: all unknown */
    }
    s = one(r, "io_req");
    if (s && switches) {
        CHECK_EQ_U64(s->poll_ns, 9 * MS);
        CHECK_EQ_U64(part(s, D9M_PART_IO), 1 * MS);      /* 39 .. 40: the rest in the gap */
        CHECK_EQ_U64(part(s, D9M_PART_UNKNOWN), 5 * MS); /* sampled 40 .. 45 */
        CHECK_EQ_U64(part(s, D9M_PART_ON_CPU), 3 * MS);
    }
    s = one(r, "drop_req");
    if (s) {
        CHECK_EQ_U64(s->unknown_ns, 4 * MS); /* 51 .. 55: events dropped before 55 ms */
        CHECK_EQ_U64(s->poll_ns, 3 * MS);    /* 55 .. 58 */
        CHECK_EQ_U64(part(s, switches ? D9M_PART_ON_CPU : D9M_PART_UNKNOWN), 3 * MS);
    }
    s = one(r, "sleep_req");
    if (s && switches) {
        CHECK_EQ_U64(s->poll_ns, 4 * MS);
        CHECK_EQ_U64(part(s, D9M_PART_SLEEP), 3 * MS); /* its stack came 3 us after the switch */
        CHECK_EQ_U64(part(s, D9M_PART_BLOCKED_OTHER), 0);
        CHECK_EQ_U64(part(s, D9M_PART_ON_CPU), 1 * MS);
    }
out:
    d9a_free(a);
    d9_buf_free(&t.b);
}

int main(void) {
    test_spans(true);
    test_spans(false);
    return d9t_summary("analysis_span_attribution");
}
