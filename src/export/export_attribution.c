/* The per-poll attribution in the export model (export_attribution.h): switch records paired
 * per thread into off-CPU intervals, each given the context-switch sample taken at its
 * switch-out by the model's rule (model/switch_stack_match.h, as analyze), then every poll's parts by the
 * model's arithmetic (model/attribution.h) over the intervals that start inside it. */
#include "export/export_attribution.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/export.h"
#include "model/offcpu_cause.h"
#include "model/switch_stack_match.h"
#include "model/thread_worker.h"

typedef struct interval {
    uint64_t out, in;
    uint32_t worker; /* index into m->workers */
    uint32_t sample; /* the context-switch sample taken at it, or D9_XNONE */
    bool preempted;
} interval;

static int cmp_switch(const void *a, const void *b) {
    const d9_xswitch *x = a, *y = b;
    if (x->tid != y->tid) return x->tid < y->tid ? -1 : 1;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

static int cmp_interval(const void *a, const void *b) {
    const interval *x = a, *y = b;
    if (x->worker != y->worker) return x->worker < y->worker ? -1 : 1;
    return (x->out > y->out) - (x->out < y->out);
}

static uint32_t worker_of(const d9_xmodel *m, uint64_t id) {
    for (size_t i = 0; i < m->worker_count; i++)
        if (m->workers[i].id == id) return (uint32_t)i;
    return D9_XNONE;
}

/* The part of a stack, from the names of its frames (cached per stack: 0 = not read yet). */
static int stack_cause(const d9_xmodel *m, const d9_xsample *s, uint8_t *cache, uint32_t **frames,
                       size_t *cap) {
    if (cache[s->stack]) return cache[s->stack] - 1;
    long n = d9_xsample_frames(m, s, frames, cap);
    if (n < 0) return -1;
    const char **names = malloc(((size_t)n + 1) * sizeof *names);
    if (!names) return -1;
    for (long k = 0; k < n; k++) names[k] = d9_xm_str(m, m->frames[(*frames)[k]].name);
    d9m_part c = d9m_offcpu_cause(false, names, (size_t)n);
    free(names);
    cache[s->stack] = (uint8_t)(c + 1);
    return c;
}

/* Intervals of each worker, sorted by switch-out; *first[w] .. first[w + 1]. */
static interval *pair_switches(const d9_xmodel *m, d9_xswitch *sw, size_t n, size_t *count) {
    if (n) qsort(sw, n, sizeof *sw, cmp_switch);
    interval *iv = malloc((n / 2 + 1) * sizeof *iv);
    if (!iv) return NULL;
    size_t k = 0;
    for (size_t i = 0; i + 1 < n; i++) {
        if (!sw[i].out || sw[i + 1].out || sw[i + 1].tid != sw[i].tid) continue;
        uint64_t id = d9m_switch_worker(sw[i].worker_id, sw[i + 1].worker_id); /* the switch-in's */
        uint32_t w = id == D9_WORKER_NONE ? D9_XNONE : worker_of(m, id);
        if (w != D9_XNONE) iv[k++] = (interval){sw[i].ts, sw[i + 1].ts, w, D9_XNONE, sw[i].preempted};
        i++;
    }
    qsort(iv, k, sizeof *iv, cmp_interval);
    *count = k;
    return iv;
}

typedef struct sample_ref {
    uint64_t ts;
    uint32_t worker, index;
} sample_ref;

static int cmp_sample(const void *a, const void *b) {
    const sample_ref *x = a, *y = b;
    if (x->worker != y->worker) return x->worker < y->worker ? -1 : 1;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

/* Each off-CPU sample to an interval of its worker by the model's rule
 * (model/switch_stack_match.h, as analyze's sweep): per worker, its intervals and samples in
 * time order, a sample before a switch-out of the same time. */
static int match_samples(const d9_xmodel *m, interval *iv, const uint32_t *first) {
    sample_ref *ord = malloc((m->sample_count + 1) * sizeof *ord);
    if (!ord) return -1;
    size_t n = 0;
    for (size_t i = 0; i < m->sample_count; i++) {
        const d9_xsample *s = &m->samples[i];
        if (s->source == D9_XSAMPLE_OFFCPU && s->worker != D9_XNONE) ord[n++] = (sample_ref){s->ts, s->worker, (uint32_t)i};
    }
    if (n) qsort(ord, n, sizeof *ord, cmp_sample);
    for (size_t k = 0; k < n;) {
        uint32_t w = ord[k].worker;
        d9m_switch_match sm = {0};
        size_t j = first[w], end = first[w + 1];
        for (; k < n && ord[k].worker == w; k++) {
            for (; j < end && iv[j].out < ord[k].ts; j++) {
                uint32_t got = d9m_switch_match_interval(&sm, iv[j].out, iv[j].in);
                if (got != D9M_SWITCH_NO_SAMPLE) iv[j].sample = got;
            }
            if (d9m_switch_match_sample(&sm, ord[k].ts, ord[k].index)) iv[j - 1].sample = ord[k].index;
        }
        for (; j < end; j++) { /* the rest of the worker's intervals: the samples still waiting */
            uint32_t got = d9m_switch_match_interval(&sm, iv[j].out, iv[j].in);
            if (got != D9M_SWITCH_NO_SAMPLE) iv[j].sample = got;
        }
    }
    free(ord);
    return 0;
}

int d9_xattribute(d9_xmodel *m, d9_xswitch *sw, size_t n, const d9m_coverage *cov) {
    if (cov->stated == D9M_SWITCH_INACTIVE || (cov->stated == D9M_SWITCH_UNSTATED && !cov->switch_seen)) {
        /* no switch records: parts only when a poll's CPU time resolves its gap (the model's
         * rule: its exact PollCpuEvent, or none while poll_cpu is stated on) */
        bool any_cpu = false;
        for (size_t i = 0; i < m->poll_count && !any_cpu; i++) {
            const d9_xpoll *p = &m->polls[i];
            any_cpu = p->cpu_event == D9M_POLL_CPU_EXACT ||
                      d9m_poll_cpu_presumed(cov, p->cpu_event, p->end - p->start, p->end > p->start);
        }
        if (!any_cpu) return 0;
    }
    int rc = -1;
    size_t ni = 0;
    interval *iv = pair_switches(m, sw, n, &ni);
    uint32_t *first = calloc(m->worker_count + 2, sizeof *first);
    uint8_t *cache = calloc(m->stack_count + 1, 1);
    uint32_t *frames = NULL;
    size_t cap = 0;
    m->poll_parts = calloc(m->poll_count + 1, sizeof *m->poll_parts);
    m->sample_cause = calloc(m->sample_count + 1, 1);
    if (!iv || !first || !cache || !m->poll_parts || !m->sample_cause) goto done;
    for (size_t i = 0, w = 0; w <= m->worker_count; w++) {
        while (i < ni && iv[i].worker < w) i++;
        first[w] = (uint32_t)i;
    }
    first[m->worker_count + 1] = (uint32_t)ni;
    if (match_samples(m, iv, first) != 0) goto done;

    /* the cause of each interval, and of each off-CPU sample (its interval's, else its stack's) */
    uint8_t *cause = malloc(ni + 1);
    if (!cause) goto done;
    for (size_t j = 0; j < ni; j++) {
        int c = D9M_PART_BLOCKED_OTHER;
        if (iv[j].preempted) c = D9M_PART_RUNNABLE;
        else if (iv[j].sample != D9_XNONE) c = stack_cause(m, &m->samples[iv[j].sample], cache, &frames, &cap);
        if (c < 0) {
            free(cause);
            goto done;
        }
        cause[j] = (uint8_t)c;
        if (iv[j].sample != D9_XNONE) m->sample_cause[iv[j].sample] = (uint8_t)c;
    }
    for (size_t i = 0; i < m->sample_count; i++) {
        const d9_xsample *s = &m->samples[i];
        if (s->source != D9_XSAMPLE_OFFCPU || m->sample_cause[i]) continue;
        int c = stack_cause(m, s, cache, &frames, &cap);
        if (c < 0) {
            free(cause);
            goto done;
        }
        m->sample_cause[i] = (uint8_t)c;
    }

    /* each poll: the intervals of its worker that start inside it (polls are sorted by
     * (worker, start), and do not overlap on one worker); with spans, kept for their split */
    size_t npieces = 0, pieces_cap = 0;
    if (m->span_mark_count && !(m->poll_piece_first = calloc(m->poll_count + 1, sizeof *m->poll_piece_first)))
        goto fail_cause;
    for (size_t i = 0; i < m->poll_count; i++) {
        const d9_xpoll *p = &m->polls[i];
        d9m_attr_poll a;
        d9m_attr_begin(&a, p->start, p->end);
        d9m_coverage_gaps(cov, m->workers[p->worker].id, &a);
        d9m_attr_poll_cpu(&a, cov, p->cpu_event, p->cpu_ns); /* the model's rule: resolves its gaps */
        size_t lo = first[p->worker], hi = first[p->worker + 1];
        while (lo < hi) { /* the first interval of the worker that starts at or after the poll */
            size_t mid = lo + (hi - lo) / 2;
            if (iv[mid].out < p->start) lo = mid + 1;
            else hi = mid;
        }
        size_t upto = lo;
        for (; upto < first[p->worker + 1] && iv[upto].out < p->end; upto++)
            d9m_attr_offcpu(&a, iv[upto].out, iv[upto].in, (d9m_part)cause[upto]);
        d9m_attr_finish(&a, &m->poll_parts[i]);
        if (!m->poll_piece_first) continue;
        m->poll_piece_first[i] = (uint32_t)npieces;
        size_t need = npieces + a.ngaps + (upto - lo);
        if (need > pieces_cap) {
            size_t c = pieces_cap ? pieces_cap * 2 : 256;
            while (c < need) c *= 2;
            d9_xattr_piece *x = realloc(m->poll_pieces, c * sizeof *x);
            if (!x) goto fail_cause;
            m->poll_pieces = x;
            pieces_cap = c;
        }
        for (uint32_t g = 0; g < a.ngaps; g++)
            m->poll_pieces[npieces++] = (d9_xattr_piece){a.gaps[g].from, a.gaps[g].to, D9M_PART_UNKNOWN};
        for (size_t k = lo; k < upto; k++)
            m->poll_pieces[npieces++] = (d9_xattr_piece){iv[k].out, iv[k].in, cause[k]};
    }
    if (m->poll_piece_first) m->poll_piece_first[m->poll_count] = (uint32_t)npieces;
    free(cause);
    cause = NULL;
    char name[40];
    for (int k = 0; k < D9M_PARTS; k++) {
        snprintf(name, sizeof name, "%s_ns", d9m_part_names[k]);
        m->part_names[k] = d9_xstr_intern(&m->strings, name, strlen(name));
        m->cause_names[k] = d9_xstr_intern(&m->strings, d9m_part_names[k], strlen(d9m_part_names[k]));
        if (m->part_names[k] == D9_XSTR_FAILED || m->cause_names[k] == D9_XSTR_FAILED) goto done;
    }
    for (int k = 0; k < D9M_PARTS && m->span_mark_count; k++) {
        snprintf(name, sizeof name, "poll_%s_ns", d9m_part_names[k]);
        m->span_part_names[k] = d9_xstr_intern(&m->strings, name, strlen(name));
        if (m->span_part_names[k] == D9_XSTR_FAILED) goto done;
    }
    m->cause_key = d9_xstr_intern(&m->strings, "cause", 5);
    if (m->cause_key == D9_XSTR_FAILED) goto done;
    rc = 0;
    goto done;
fail_cause:
    free(cause);
done:
    if (rc != 0) {
        free(m->poll_parts);
        free(m->sample_cause);
        free(m->poll_pieces);
        free(m->poll_piece_first);
        m->poll_parts = NULL;
        m->sample_cause = NULL;
        m->poll_pieces = NULL;
        m->poll_piece_first = NULL;
    }
    free(iv);
    free(first);
    free(cache);
    free(frames);
    return rc;
}
