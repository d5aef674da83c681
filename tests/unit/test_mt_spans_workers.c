/* Spans recorded across two workers: each request begins in a poll of task A on worker 0,
 * which wakes task B and hands the request over; it ends in B's poll on worker 1. The two
 * workers go in lockstep (a hand-over and an acknowledgement through a mutex and a condition
 * variable), so the order of every event is fixed, whatever the timing: A's poll (begin, wake
 * of B) ends, B's poll (end) starts, ends, then A's next poll. The trace must say it: each
 * SpanEnterEvent on worker 0 with task A and A's thread, each SpanExitEvent on worker 1 with
 * task B; and `analyze` splits each span exactly as the recorded timestamps say: in polls
 * (A's from the begin to its end, B's from its start to the span's end), queued (B woken, from
 * A's poll end to B's poll start), no wait, nothing unknown. */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "check.h"
#include "dial9/dial9.h"
#include "format/decoder.h"
#include "trace_files_util.h"

#define REQUESTS 200
#define TASK_A 0xa1
#define TASK_B 0xb2
#define FIRST_ID 5000

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int handed = -1, acked = -1; /* the last request handed over / finished */
static pid_t tid_a, tid_b;
/* the trace's worker ids, as d9_worker_begin returns them (given in the order the workers
 * register, which the two threads race for) */
static uint32_t wid_a, wid_b;

static void *worker_a(void *arg) {
    (void)arg;
    tid_a = gettid();
    wid_a = d9_worker_begin("spans", 0);
    for (int i = 0; i < REQUESTS; i++) {
        d9_poll_begin(TASK_A, D9_HERE);
        d9_span_begin(D9_SPAN_NAME("request"), FIRST_ID + (uint64_t)i);
        d9_wake(TASK_B);
        d9_poll_end();
        pthread_mutex_lock(&mu);
        handed = i;
        pthread_cond_broadcast(&cv);
        while (acked < i) pthread_cond_wait(&cv, &mu);
        pthread_mutex_unlock(&mu);
    }
    d9_worker_end();
    return NULL;
}

static void *worker_b(void *arg) {
    (void)arg;
    tid_b = gettid();
    wid_b = d9_worker_begin("spans", 1);
    for (int i = 0; i < REQUESTS; i++) {
        pthread_mutex_lock(&mu);
        while (handed < i) pthread_cond_wait(&cv, &mu);
        pthread_mutex_unlock(&mu);
        d9_poll_begin(TASK_B, D9_HERE);
        d9_span_end(D9_SPAN_NAME("request"), FIRST_ID + (uint64_t)i);
        d9_poll_end();
        pthread_mutex_lock(&mu);
        acked = i;
        pthread_cond_broadcast(&cv);
        pthread_mutex_unlock(&mu);
    }
    d9_worker_end();
    return NULL;
}

/* What the raw events say, per request, in each worker's order. */
typedef struct seen {
    uint64_t a_start[REQUESTS], a_end[REQUESTS], b_start[REQUESTS], b_end[REQUESTS];
    uint64_t begin[REQUESTS], end[REQUESTS], wake[REQUESTS];
    int na_start, na_end, nb_start, nb_end, nbegin, nend, nwake;
    int bad_enter, bad_exit;
} seen;

static void collect(const d9_event *ev, void *ctx) {
    seen *s = ctx;
    uint64_t w = d9t_field_u(ev, "worker_id");
    if (d9t_is(ev, "PollStartEvent")) {
        if (w == wid_a && s->na_start < REQUESTS) s->a_start[s->na_start++] = ev->ts_ns;
        if (w == wid_b && s->nb_start < REQUESTS) s->b_start[s->nb_start++] = ev->ts_ns;
    } else if (d9t_is(ev, "PollEndEvent")) {
        if (w == wid_a && s->na_end < REQUESTS) s->a_end[s->na_end++] = ev->ts_ns;
        if (w == wid_b && s->nb_end < REQUESTS) s->b_end[s->nb_end++] = ev->ts_ns;
    } else if (d9t_is(ev, "WakeEventEvent")) {
        if (d9t_field_u(ev, "woken_task_id") == TASK_B && s->nwake < REQUESTS) s->wake[s->nwake++] = ev->ts_ns;
    } else if (d9t_is(ev, "SpanEnterEvent")) {
        if (w != wid_a || d9t_field_u(ev, "task_id") != TASK_A || d9t_field_u(ev, "tid") != (uint64_t)tid_a ||
            d9t_field_u(ev, "span_id") != FIRST_ID + (uint64_t)s->nbegin)
            s->bad_enter++;
        if (s->nbegin < REQUESTS) s->begin[s->nbegin++] = ev->ts_ns;
    } else if (d9t_is(ev, "SpanExitEvent")) {
        if (w != wid_b || d9t_field_u(ev, "task_id") != TASK_B || d9t_field_u(ev, "tid") != (uint64_t)tid_b ||
            d9t_field_u(ev, "span_id") != FIRST_ID + (uint64_t)s->nend)
            s->bad_exit++;
        if (s->nend < REQUESTS) s->end[s->nend++] = ev->ts_ns;
    }
}

static const d9a_report *analyze_run(d9a_analysis *a, const char *run_dir) {
    char **files;
    int n = d9t_list_segments(run_dir, &files);
    bool ok = n > 0;
    for (int i = 0; i < n && ok; i++) {
        char err[256];
        d9_decoder *d = d9_dec_open_path(files[i], NULL, err, sizeof err);
        if (!d) {
            fprintf(stderr, "open %s: %s\n", files[i], err);
            ok = false;
            break;
        }
        d9a_begin_file(a);
        d9_event ev;
        while (ok && d9_dec_next(d, &ev) > 0) ok = d9a_feed(a, &ev, d) == 0;
        ok = ok && d9_dec_state(d) == D9_DEC_END;
        d9_dec_close(d);
    }
    d9t_free_list(files, n);
    return ok ? d9a_finish(a) : NULL;
}

int main(void) {
    char *dir = d9t_mkdtemp("d9spans");
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    CHECK(d9_start(&cfg) == 0);
    pthread_t a, b;
    CHECK(pthread_create(&a, NULL, worker_a, NULL) == 0);
    CHECK(pthread_create(&b, NULL, worker_b, NULL) == 0);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    CHECK(wid_a != wid_b);
    d9_stop();
    d9_stats st;
    d9_get_stats(&st);
    CHECK_EQ_U64(st.events_dropped, 0);

    static seen s;
    CHECK_EQ_U64(d9t_decode_run(d9_run_dir(), collect, &s), 0);
    CHECK_EQ_U64(s.nbegin, REQUESTS);
    CHECK_EQ_U64(s.nend, REQUESTS);
    CHECK_EQ_U64(s.bad_enter, 0);
    CHECK_EQ_U64(s.bad_exit, 0);
    CHECK(s.na_start == REQUESTS && s.na_end == REQUESTS && s.nb_start == REQUESTS &&
          s.nb_end == REQUESTS && s.nwake == REQUESTS);

    /* the split the timestamps imply, in the lockstep order */
    uint64_t elapsed = 0, poll = 0, queued = 0;
    int out_of_order = 0;
    for (int i = 0; i < REQUESTS && s.nwake == REQUESTS && s.nb_end == REQUESTS; i++) {
        if (!(s.a_start[i] <= s.begin[i] && s.begin[i] <= s.wake[i] && s.wake[i] <= s.a_end[i] &&
              s.a_end[i] <= s.b_start[i] && s.b_start[i] <= s.end[i] && s.end[i] <= s.b_end[i]))
            out_of_order++;
        elapsed += s.end[i] - s.begin[i];
        poll += (s.a_end[i] - s.begin[i]) + (s.end[i] - s.b_start[i]);
        queued += s.b_start[i] - s.a_end[i];
    }
    CHECK_EQ_U64(out_of_order, 0);

    d9a_options opt;
    d9a_options_init(&opt);
    d9a_analysis *an = d9a_new(&opt);
    const d9a_report *r = an ? analyze_run(an, d9_run_dir()) : NULL;
    CHECK(r != NULL);
    if (r) {
        CHECK_EQ_U64(r->nspans, 1);
        CHECK_EQ_U64(r->span_stray_ends, 0);
        const d9a_span_report *sp = r->nspans ? &r->spans[0] : NULL;
        if (sp) {
            CHECK_STR(sp->name, "request");
            CHECK_EQ_U64(sp->count, REQUESTS);
            CHECK_EQ_U64(sp->unended, 0);
            CHECK_EQ_U64(sp->cross_worker, REQUESTS);
            CHECK_EQ_U64(sp->elapsed.total, elapsed);
            CHECK_EQ_U64(sp->poll_ns, poll);
            CHECK_EQ_U64(sp->queued_ns, queued);
            CHECK_EQ_U64(sp->wait_ns, 0);
            CHECK_EQ_U64(sp->unknown_ns, 0);
            printf("%d spans across two workers: %llu ns, in polls %llu, queued %llu\n", REQUESTS,
                   (unsigned long long)elapsed, (unsigned long long)poll, (unsigned long long)queued);
        }
    }
    d9a_free(an);
    if (d9t_failed == 0) d9t_rm_rf(dir);
    free(dir);
    return d9t_summary("mt_spans_workers");
}
