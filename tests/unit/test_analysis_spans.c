/* `analyze`'s spans section on a hand-built trace: a span begun on worker 0 and ended on
 * worker 1 (the second worker's events written first, as dial9 writes one stream per thread:
 * the analysis puts them in time order), its exact split, an unended span and a stray end. */
#include "check.h"
#include "span_trace.h"

int main(void) {
    tb t = {0};
    tb_stream(&t);
    tb_span_schemas(&t);
    uint32_t loc = tb_string(&t, "server.c:10");
    uint32_t req = tb_string(&t, "request");
    uint32_t bg = tb_string(&t, "background");
    /* worker 1 (task 2): woken at 180 us by task 1, polled 230..260, woken by the network at
     * 400, polled 410..500, ends the request at 450 */
    tb_poll(&t, 230 * US, 30 * US, 1, 0, 2, loc);
    tb_wake(&t, 400 * US, 0, 2, 1);
    tb_poll_start(&t, 410 * US, 1, 0, 2, loc);
    tb_span(&t, false, 450 * US, 1, 42, req, 2, 12);
    tb_poll_end(&t, 500 * US, 1);
    tb_span(&t, false, 600 * US, 1, 43, req, 0, 12); /* closes nothing */
    /* worker 0 (task 1): polled 100..200, begins the request at 150, wakes task 2 at 180 */
    tb_poll_start(&t, 100 * US, 0, 0, 1, loc);
    tb_span(&t, true, 150 * US, 0, 42, req, 1, 11);
    tb_wake(&t, 180 * US, 1, 2, 1);
    tb_poll_end(&t, 200 * US, 0);
    tb_span(&t, true, 300 * US, 0, 42, bg, 0, 11); /* same id, other name: never ended */
    tb_poll(&t, 700 * US, 10 * US, 0, 0, 1, loc);

    d9a_options opt;
    d9a_options_init(&opt);
    d9a_analysis *a;
    const d9a_report *r = tb_analyze(&a, &t, &opt);
    CHECK(r != NULL);
    if (r) {
        CHECK_EQ_U64(r->nspans, 2);
        CHECK_EQ_U64(r->span_stray_ends, 1);
        CHECK_EQ_U64(r->span_reopened, 0);
        const d9a_span_report *s = r->nspans == 2 ? &r->spans[0] : NULL;
        CHECK(s != NULL);
        if (s) {
            CHECK_STR(s->name, "request");
            CHECK_EQ_U64(s->count, 1);
            CHECK_EQ_U64(s->unended, 0);
            CHECK_EQ_U64(s->cross_worker, 1);
            CHECK_EQ_U64(s->elapsed.total, 300 * US);
            CHECK_EQ_U64(s->poll_ns, 120 * US);   /* 150..200, 230..260, 410..450 */
            CHECK_EQ_U64(s->queued_ns, 40 * US);  /* 200..230 (woken during task 1's poll), 400..410 */
            CHECK_EQ_U64(s->wait_ns, 140 * US);   /* 260..400 */
            CHECK_EQ_U64(s->unknown_ns, 0);
            const d9a_span_report *b = &r->spans[1];
            CHECK_STR(b->name, "background");
            CHECK_EQ_U64(b->count, 0);
            CHECK_EQ_U64(b->unended, 1);
        }
    }
    d9a_free(a);
    d9_buf_free(&t.b);
    return d9t_summary("analysis_spans");
}
