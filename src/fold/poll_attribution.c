/* polls' attribution columns (poll_attribution.h). */
#include "fold/poll_attribution.h"

#include <stdlib.h>

#include "common/u64_map.h"
#include "format/wire.h"
#include "model/switch_stack_match.h"
#include "model/thread_worker.h"

struct d9f_switch {
    uint64_t ts, worker, tid, seq;
    bool out, preempted;
};

struct d9f_offcpu_sample {
    uint64_t ts, worker;
    uint32_t stack, index;
};

struct d9f_interval {
    uint64_t worker, out, in, tid, seq; /* tid and seq (of the switch-out): the order of ties */
    uint32_t sample; /* the index of the sample taken at it, or D9M_SWITCH_NO_SAMPLE */
    bool preempted;
    uint8_t cause;
};

/* `worker`: the switch-in's (model/thread_worker.h: it overrides the switch-out's) */
static int add_interval(d9f_attr *a, const d9f_switch *o, uint64_t in, uint64_t worker) {
    if (a->niv == a->iv_cap) {
        size_t c = a->iv_cap ? a->iv_cap * 2 : 512;
        d9f_interval *p = realloc(a->iv, c * sizeof *p);
        if (!p) return -1;
        a->iv = p;
        a->iv_cap = c;
    }
    a->iv[a->niv++] = (d9f_interval){worker, o->ts, in, o->tid, o->seq, D9M_SWITCH_NO_SAMPLE, o->preempted, 0};
    return 0;
}

/* Where thread tid's last switch record index is kept (UINT64_MAX: none yet); NULL out of
 * memory. */
static uint64_t *last_of_tid(d9f_attr *a, uint64_t tid) {
    if (tid == UINT64_MAX) return d9_u64_map_upsert(&a->last_of_tid, tid, UINT64_MAX); /* tid + 1 wraps */
    d9f_tid_last *r = &a->recent_tid[tid % 64];
    if (r->tid1 == tid + 1) return &r->last;
    if (r->tid1) { /* the slot's thread back to the map */
        uint64_t *v = d9_u64_map_upsert(&a->last_of_tid, r->tid1 - 1, UINT64_MAX);
        if (!v) return NULL;
        *v = r->last;
    }
    const uint64_t *known = d9_u64_map_get(&a->last_of_tid, tid);
    r->tid1 = tid + 1;
    r->last = known ? *known : UINT64_MAX;
    return &r->last;
}

/* Paired as they come: a thread's switch-out and the switch-in right after it (the pairing
 * of the records sorted by thread and time, when each thread's come in time order, as the
 * recorder writes them). A thread's record earlier than its previous one: the records are
 * sorted and paired after the pass instead (pair_switches). */
int d9f_attr_switch(d9f_attr *a, uint64_t ts, uint64_t worker, uint64_t tid, bool out, bool preempted) {
    a->cov.switch_seen = true;
    if (a->nsw == a->sw_cap) {
        size_t c = a->sw_cap ? a->sw_cap * 2 : 1024;
        d9f_switch *p = realloc(a->sw, c * sizeof *p);
        if (!p) return -1;
        a->sw = p;
        a->sw_cap = c;
    }
    a->sw[a->nsw] = (d9f_switch){ts, worker, tid, a->nsw, out, preempted};
    a->nsw++;
    if (a->unordered) return 0;
    uint64_t *last = last_of_tid(a, tid);
    if (!last) return -1;
    uint64_t prev = *last;
    *last = a->nsw - 1;
    if (prev == UINT64_MAX) return 0;
    const d9f_switch *o = &a->sw[prev];
    if (ts < o->ts) {
        a->unordered = true;
        return 0;
    }
    uint64_t iw = d9m_switch_worker(o->worker, worker);
    if (o->out && !out && iw != D9_WORKER_NONE) return add_interval(a, o, ts, iw);
    return 0;
}

int d9f_attr_offcpu_sample(d9f_attr *a, uint64_t ts, uint64_t worker, uint32_t stack) {
    if (a->nsamples == a->samples_cap) {
        size_t c = a->samples_cap ? a->samples_cap * 2 : 256;
        d9f_offcpu_sample *p = realloc(a->samples, c * sizeof *p);
        if (!p) return -1;
        a->samples = p;
        a->samples_cap = c;
    }
    a->samples[a->nsamples] = (d9f_offcpu_sample){ts, worker, stack, (uint32_t)a->nsamples};
    a->nsamples++;
    return 0;
}

static int cmp_switch(const void *x, const void *y) {
    const d9f_switch *a = x, *b = y;
    if (a->tid != b->tid) return a->tid < b->tid ? -1 : 1;
    if (a->ts != b->ts) return a->ts < b->ts ? -1 : 1;
    return (a->seq > b->seq) - (a->seq < b->seq);
}

/* by worker and switch-out; ties by thread and record order, as a stable sort of the records
 * sorted by thread and time leaves them */
static int cmp_interval(const void *x, const void *y) {
    const d9f_interval *a = x, *b = y;
    if (a->worker != b->worker) return a->worker < b->worker ? -1 : 1;
    if (a->out != b->out) return a->out < b->out ? -1 : 1;
    if (a->tid != b->tid) return a->tid < b->tid ? -1 : 1;
    return (a->seq > b->seq) - (a->seq < b->seq);
}

/* a sample before a switch-out of the same time (switch_stack_match.h) */
static int cmp_sample(const void *x, const void *y) {
    const d9f_offcpu_sample *a = x, *b = y;
    if (a->worker != b->worker) return a->worker < b->worker ? -1 : 1;
    if (a->ts != b->ts) return a->ts < b->ts ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

/* The intervals in cmp_interval's order, a total order (seq is unique), so any sort gives the
 * same array. The pass adds each worker's intervals mostly in time order already, the
 * workers interleaved: a stable partition by worker (a runtime has few), then only a worker's
 * run that is out of order is sorted (a qsort of all took ~30 instructions an event). -1
 * out of memory. */
enum { FEW_WORKERS = 64 };

static int sort_intervals(d9f_attr *a) {
    uint64_t workers[FEW_WORKERS];
    size_t count[FEW_WORKERS] = {0}, nw = 0, last = 0;
    for (size_t j = 0; j < a->niv; j++) {
        uint64_t w = a->iv[j].worker;
        if (nw == 0 || workers[last] != w) {
            for (last = 0; last < nw && workers[last] != w; last++) {}
            if (last == nw) {
                if (nw == FEW_WORKERS) { /* many workers: the one sort */
                    qsort(a->iv, a->niv, sizeof *a->iv, cmp_interval);
                    return 0;
                }
                workers[nw++] = w;
            }
        }
        count[last]++;
    }
    /* the workers in order (insertion: a few), each its first index in the partition */
    size_t order[FEW_WORKERS], at[FEW_WORKERS];
    for (size_t i = 0; i < nw; i++) {
        size_t k = i;
        for (; k > 0 && workers[order[k - 1]] > workers[i]; k--) order[k] = order[k - 1];
        order[k] = i;
    }
    for (size_t i = 0, next = 0; i < nw; i++) {
        at[order[i]] = next;
        next += count[order[i]];
    }
    d9f_interval *sorted = malloc(a->niv * sizeof *sorted);
    if (!sorted) return -1;
    last = 0;
    for (size_t j = 0; j < a->niv; j++) {
        uint64_t w = a->iv[j].worker;
        if (workers[last] != w)
            for (last = 0; workers[last] != w; last++) {}
        sorted[at[last]++] = a->iv[j];
    }
    free(a->iv);
    a->iv = sorted;
    a->iv_cap = a->niv;
    for (size_t i = 0, from = 0; i < nw; i++) { /* each worker's run: sorted unless in order */
        size_t n = count[order[i]];
        for (size_t j = from + 1; j < from + n; j++)
            if (cmp_interval(&a->iv[j - 1], &a->iv[j]) > 0) {
                qsort(a->iv + from, n, sizeof *a->iv, cmp_interval);
                break;
            }
        from += n;
    }
    return 0;
}

/* A thread's switch-out and the switch-in after it: an off-CPU interval of the worker the
 * switch-out names (a thread of no worker holds no poll). */
static int pair_switches(d9f_attr *a) {
    if (a->unordered) { /* the pass's pairs are not these: from the sorted records */
        a->niv = 0;
        if (a->nsw) qsort(a->sw, a->nsw, sizeof *a->sw, cmp_switch);
        for (size_t i = 0; i + 1 < a->nsw; i++) {
            const d9f_switch *o = &a->sw[i], *n = &a->sw[i + 1];
            if (!o->out || n->out || n->tid != o->tid) continue;
            uint64_t iw = d9m_switch_worker(o->worker, n->worker);
            if (iw != D9_WORKER_NONE && add_interval(a, o, n->ts, iw) != 0) return -1;
            i++;
        }
    }
    return a->niv ? sort_intervals(a) : 0;
}

/* Per worker, its intervals and samples in time order through the model's rule. */
static void match_samples(d9f_attr *a) {
    if (a->nsamples) qsort(a->samples, a->nsamples, sizeof *a->samples, cmp_sample);
    size_t j = 0;
    for (size_t k = 0; k < a->nsamples;) {
        uint64_t w = a->samples[k].worker;
        while (j < a->niv && a->iv[j].worker < w) j++;
        d9m_switch_match sm = {0};
        for (; k < a->nsamples && a->samples[k].worker == w; k++) {
            for (; j < a->niv && a->iv[j].worker == w && a->iv[j].out < a->samples[k].ts; j++) {
                uint32_t got = d9m_switch_match_interval(&sm, a->iv[j].out, a->iv[j].in);
                if (got != D9M_SWITCH_NO_SAMPLE) a->iv[j].sample = got;
            }
            if (d9m_switch_match_sample(&sm, a->samples[k].ts, (uint32_t)k)) a->iv[j - 1].sample = (uint32_t)k;
        }
        for (; j < a->niv && a->iv[j].worker == w; j++) { /* the samples still waiting */
            uint32_t got = d9m_switch_match_interval(&sm, a->iv[j].out, a->iv[j].in);
            if (got != D9M_SWITCH_NO_SAMPLE) a->iv[j].sample = got;
        }
    }
}

int d9f_attr_prepare(d9f_attr *a, d9f_stack_cause_fn cause, void *ctx) {
    const d9m_coverage *c = &a->cov;
    a->covered = !(c->stated == D9M_SWITCH_INACTIVE || (c->stated == D9M_SWITCH_UNSTATED && !c->switch_seen));
    if (!a->covered) { /* every poll is unknown (d9m_coverage_gaps) */
        a->niv = 0;
        return 0;
    }
    if (pair_switches(a) != 0) return -1;
    match_samples(a);
    for (size_t j = 0; j < a->niv; j++) {
        d9f_interval *v = &a->iv[j];
        int k = D9M_PART_BLOCKED_OTHER;
        if (v->preempted) k = D9M_PART_RUNNABLE;
        else if (v->sample != D9M_SWITCH_NO_SAMPLE) k = cause(a->samples[v->sample].stack, ctx);
        if (k < 0) return -1;
        v->cause = (uint8_t)k;
    }
    return 0;
}

/* An interval that comes before the worker's first one at or after `start` */
static inline bool before(const d9f_interval *v, uint64_t worker, uint64_t start) {
    return v->worker < worker || (v->worker == worker && v->out < start);
}

/* The worker's first interval that starts at or after `start`: a binary search. */
static size_t first_interval(const d9f_attr *a, uint64_t worker, uint64_t start) {
    size_t lo = 0, hi = a->niv;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (before(&a->iv[mid], worker, start)) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

void d9f_attr_poll(const d9f_attr *a, uint64_t worker, uint64_t start, uint64_t end, d9m_poll_cpu cpu_event,
                   uint64_t cpu_ns, d9f_attr_from *from, d9m_parts *out) {
    d9m_attr_poll p;
    d9m_attr_begin(&p, start, end);
    d9m_coverage_gaps_from(&a->cov, worker, &p, &from->cov);
    d9m_attr_poll_cpu(&p, &a->cov, cpu_event, cpu_ns); /* after its gaps: the rule asks for them */
    size_t lo = from->iv;
    if (lo > a->niv || (lo > 0 && !before(&a->iv[lo - 1], worker, p.start))) {
        lo = first_interval(a, worker, p.start); /* the first poll, or one that starts earlier */
    } else {
        /* on from the previous poll's: the intervals before it come before this poll's too */
        while (lo < a->niv && before(&a->iv[lo], worker, p.start)) lo++;
    }
    from->iv = lo;
    for (; lo < a->niv && a->iv[lo].worker == worker && a->iv[lo].out < p.end; lo++)
        d9m_attr_offcpu(&p, a->iv[lo].out, a->iv[lo].in, (d9m_part)a->iv[lo].cause);
    d9m_attr_finish(&p, out);
}

void d9f_attr_free(d9f_attr *a) {
    d9m_coverage_free(&a->cov);
    free(a->sw);
    free(a->samples);
    free(a->iv);
    d9_u64_map_free(&a->last_of_tid);
    *a = (d9f_attr){0};
}
