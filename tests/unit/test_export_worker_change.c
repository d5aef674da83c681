/* Whose worker an off-CPU interval and a CPU sample are (model/thread_worker.h):
 * on the shared vector's trace (tests/unit/worker_change_trace.h: a thread that changes worker
 * mid-run, samples without a worker id, switch records naming none or the former worker) the
 * export model's parts of every poll equal analyze's and the planted ones, its timer samples
 * without a worker id are counted in their thread's worker's polls as analyze counts them; and the rule's
 * pieces on their own: a record's own worker id wins, the switch-in's overrides the
 * switch-out's, a thread's latest named worker is remembered per thread. */
#include <stdio.h>

#include "worker_change_trace.h"
#include "check.h"
#include "export_model_of.h"
#include "export/export.h"
#include "model/thread_worker.h"

static const d9m_parts *export_parts(const d9_xmodel *m, const char *loc) {
    for (size_t i = 0; i < m->poll_count; i++)
        if (!strcmp(d9_xm_str(m, m->polls[i].loc), loc)) return &m->poll_parts[i];
    return NULL;
}

static const d9m_parts *analyze_parts(const d9a_report *r, const char *loc) {
    for (size_t k = 0; k < r->nlocations; k++)
        if (!strcmp(r->locations[k].location, loc)) return &r->locations[k].parts;
    return NULL;
}

/* the planted parts (worker_change_trace.h), every other part 0 */
static void check_planted(const d9m_parts *p, const char *who, const char *loc, const uint64_t want[D9M_PARTS]) {
    CHECK(p != NULL);
    if (!p) return;
    for (int k = 0; k < D9M_PARTS; k++) {
        if (p->ns[k] != want[k])
            fprintf(stderr, "%s %s %s: %llu, planted %llu\n", who, loc, d9m_part_names[k],
                    (unsigned long long)p->ns[k], (unsigned long long)want[k]);
        CHECK_EQ_U64(p->ns[k], want[k]);
    }
}

static void test_vector_trace(void) {
    tb t = {0};
    worker_change_trace(&t);
    d9a_analysis *a;
    const d9a_report *r = tb_analyze(&a, &t, NULL);
    d9_xmodel *m = d9t_xmodel_of(&t.b, NULL);
    CHECK(r != NULL && m != NULL && m && m->poll_parts != NULL);
    if (r && m && m->poll_parts) {
        uint64_t want_a[D9M_PARTS] = {0}, want_b[D9M_PARTS] = {0};
        want_a[D9M_PART_LOCK] = 2 * MS;
        want_a[D9M_PART_ON_CPU] = 8 * MS;
        want_b[D9M_PART_SLEEP] = 3 * MS;
        want_b[D9M_PART_RUNNABLE] = 1 * MS;
        want_b[D9M_PART_ON_CPU] = 6 * MS;
        CHECK_EQ_U64(r->nlocations, 2);
        check_planted(analyze_parts(r, "a.c:1"), "analyze", "a.c", want_a);
        check_planted(analyze_parts(r, "b.c:1"), "analyze", "b.c", want_b);
        check_planted(export_parts(m, "a.c:1"), "export", "a.c", want_a);
        check_planted(export_parts(m, "b.c:1"), "export", "b.c", want_b);
    }
    d9_xmodel_free(m);
    d9a_free(a);
    d9_buf_free(&t.b);
}

/* the export's CPU timer samples (source 0) inside polls of worker `id` */
static uint64_t export_cpu_in_poll(const d9_xmodel *m, uint64_t id) {
    uint64_t n = 0;
    for (size_t i = 0; i < m->sample_count; i++) {
        const d9_xsample *s = &m->samples[i];
        uint64_t w = s->worker == D9_XNONE ? D9_WORKER_NONE : m->workers[s->worker].id;
        n += s->source == D9_XSAMPLE_CPU && s->poll != D9_XNONE && w == id;
    }
    return n;
}

static uint64_t analyze_cpu_in_poll(const d9a_report *r, uint64_t id) {
    for (size_t k = 0; k < r->nworkers; k++)
        if (r->workers[k].id == id) return r->workers[k].cpu_samples_in_poll;
    return UINT64_MAX;
}

/* Timer samples without a worker id are their thread's worker's, as analyze counts them: one
 * in worker 0's poll, two in worker 1's, none left to "not a worker". */
static void test_timer_samples(void) {
    tb t = {0};
    worker_change_trace(&t);
    d9a_analysis *a;
    const d9a_report *r = tb_analyze(&a, &t, NULL);
    d9_xmodel *m = d9t_xmodel_of(&t.b, NULL);
    CHECK(r != NULL && m != NULL);
    if (r && m) {
        const uint64_t planted[2] = {1, 2};
        for (uint64_t w = 0; w < 2; w++) {
            uint64_t ex = export_cpu_in_poll(m, w), an = analyze_cpu_in_poll(r, w);
            if (ex != planted[w] || an != planted[w])
                fprintf(stderr, "worker %llu: CPU samples in polls export %llu, analyze %llu, planted %llu\n",
                        (unsigned long long)w, (unsigned long long)ex, (unsigned long long)an,
                        (unsigned long long)planted[w]);
            CHECK_EQ_U64(an, planted[w]);
            CHECK_EQ_U64(ex, planted[w]);
        }
        uint64_t orphans = 0;
        for (size_t i = 0; i < m->sample_count; i++)
            orphans += m->samples[i].source == D9_XSAMPLE_CPU &&
                       (m->samples[i].worker == D9_XNONE || m->workers[m->samples[i].worker].id == D9_WORKER_NONE);
        CHECK_EQ_U64(orphans, 0);
    }
    d9_xmodel_free(m);
    d9a_free(a);
    d9_buf_free(&t.b);
}

static void test_rule(void) {
    CHECK_EQ_U64(d9m_record_worker(3, 5), 5);
    CHECK_EQ_U64(d9m_record_worker(3, D9_WORKER_NONE), 3);
    CHECK_EQ_U64(d9m_switch_worker(0, 1), 1);
    CHECK_EQ_U64(d9m_switch_worker(2, D9_WORKER_NONE), 2);
    CHECK_EQ_U64(d9m_switch_worker(D9_WORKER_NONE, D9_WORKER_NONE), D9_WORKER_NONE);
    d9m_thread_workers tw = {0};
    uint64_t w = 0;
    CHECK_EQ_U64(d9m_thread_worker_of(&tw, 100), D9_WORKER_NONE);
    CHECK(d9m_thread_worker_note(&tw, 100, D9_WORKER_NONE, &w) == 0);
    CHECK_EQ_U64(w, D9_WORKER_NONE); /* nothing known yet */
    CHECK(d9m_thread_worker_note(&tw, 100, 0, &w) == 0 && w == 0);
    CHECK(d9m_thread_worker_note(&tw, 200, 7, &w) == 0 && w == 7);
    CHECK(d9m_thread_worker_note(&tw, 100, D9_WORKER_NONE, &w) == 0 && w == 0);
    CHECK(d9m_thread_worker_note(&tw, 100, 1, &w) == 0 && w == 1); /* changed worker mid-run */
    CHECK(d9m_thread_worker_note(&tw, 100, D9_WORKER_NONE, &w) == 0 && w == 1);
    CHECK_EQ_U64(d9m_thread_worker_of(&tw, 200), 7);
    d9m_thread_workers_free(&tw);
}

int main(void) {
    test_rule();
    test_vector_trace();
    test_timer_samples();
    return d9t_summary("export_worker_change");
}
