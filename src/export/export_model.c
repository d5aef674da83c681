/* Building the export model from decoded events (see export_model.h). Adding keeps compact
 * raw records of the events that matter; finishing sorts them, pairs starts with ends, clips
 * to the window and resolves call stacks into frames. */
#include "export/export_model.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/u64_set.h"
#include "export/export_attribution.h"
#include "export/export_symbols.h"
#include "format/schemas.h"
#include "model/pairing.h"
#include "model/thread_worker.h"
#include "model/wake_link.h"
#include "format/wire.h"

/* ------------------------------------------------------------------------------------------
 * Raw records, kept while adding
 * ---------------------------------------------------------------------------------------- */

/* Polls and parks are paired by the model's rule (model/pairing.h) once they are sorted by
 * (worker, time, arrival); d9m_mark.seq holds the arrival order. */
typedef d9m_mark mark;

typedef struct raw_sample {
    uint64_t ts, worker_id;
    uint32_t tid, stack, thread_name;
    uint8_t source;
} raw_sample;

typedef struct raw_wake {
    uint64_t ts, waker, woken, from_worker_id;
} raw_wake;

typedef struct raw_registration {
    uint64_t worker_id;
    uint32_t tid, runtime, thread_name;
} raw_registration;

typedef struct worker_runtime {
    uint64_t worker_id;
    uint32_t runtime;
} worker_runtime;

typedef struct raw_queue {
    uint64_t ts, value;
} raw_queue;

/* A PollCpuEvent: its worker's latest closed poll's exact CPU time, or that none was had. */
typedef struct raw_poll_cpu {
    uint64_t ts, worker_id, cpu_ns;
    uint32_t seq; /* arrival order, as a mark's: ties in time keep it */
    bool exact;
} raw_poll_cpu;

#define VEC(type, name) type *name; size_t name##_n, name##_cap


struct d9_xbuild {
    VEC(mark, marks);
    VEC(raw_sample, samples);
    VEC(raw_wake, wakes);
    VEC(raw_queue, queues);
    VEC(raw_registration, regs);
    VEC(worker_runtime, runtimes);
    VEC(d9_xswitch, switches);
    VEC(raw_poll_cpu, poll_cpus);
    d9m_coverage coverage; /* what the switch records cover (model/attribution.h) */
    d9m_thread_workers thread_workers; /* whose worker a switch record or sample is */
    d9m_symtab symbols; /* the trace's symbols and mappings (model/symtab.h) */
    d9_stack_table stack_table;
    d9_u64_set truncated; /* stack indexes a StackOriginEvent said were truncated */
    d9_stack_entry **stack_by_index;
    size_t stacks_n, stacks_cap;
    uint64_t seq;
    bool have_ts, have_meta, have_clock;
    d9m_schedstat schedstat; /* as the first metadata states it */
    uint64_t clock_mono, clock_real;
};

/* Grow *arr (of *cap elements of `size` bytes) to hold n + 1; false when out of memory. */
static bool vec_reserve(void **arr, size_t *cap, size_t n, size_t size) {
    if (n < *cap) return true;
    size_t c = *cap ? *cap * 2 : 256;
    void *p = realloc(*arr, c * size);
    if (!p) return false;
    *arr = p;
    *cap = c;
    return true;
}
#define VEC_PUSH(b, name, value)                                                           \
    (vec_reserve((void **)&(b)->name, &(b)->name##_cap, (b)->name##_n, sizeof *(b)->name)   \
         ? ((b)->name[(b)->name##_n++] = (value), true)                                    \
         : false)

/* ------------------------------------------------------------------------------------------
 * Schemas: what each one means for the export, resolved once per schema
 * ---------------------------------------------------------------------------------------- */

/* A field of the event's schema by name, bound once by the decoder (format/dec_bindings.h). */
#define F(name) (in->field[D9_KF_##name])

/* ------------------------------------------------------------------------------------------
 * Adding events
 * ---------------------------------------------------------------------------------------- */

d9_xmodel *d9_xmodel_new(void) {
    d9_xmodel *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->build = calloc(1, sizeof *m->build);
    if (!m->build || !d9_xstr_init(&m->strings)) {
        d9_xmodel_free(m);
        return NULL;
    }
    return m;
}

static void build_free(struct d9_xbuild *b) {
    if (!b) return;
    free(b->marks);
    free(b->samples);
    free(b->wakes);
    free(b->queues);
    free(b->regs);
    free(b->runtimes);
    free(b->switches);
    free(b->poll_cpus);
    d9m_thread_workers_free(&b->thread_workers);
    d9m_coverage_free(&b->coverage);
    d9m_symtab_free(&b->symbols);
    d9_stack_table_free(&b->stack_table);
    d9_u64_set_free(&b->truncated);
    free(b->stack_by_index);
    free(b);
}

void d9_xmodel_free(d9_xmodel *m) {
    if (!m) return;
    build_free(m->build);
    d9m_heap_free(&m->heap);
    d9_xstr_free(&m->strings);
    free(m->workers);
    free(m->polls);
    free(m->worker_polls);
    free(m->parks);
    free(m->wakes);
    free(m->wake_order);
    free(m->samples);
    free(m->local_queue);
    free(m->global_queue);
    free(m->sched_delay);
    free(m->mappings);
    free(m->frames);
    free(m->locs);
    free(m->stacks);
    free(m->stack_locs);
    free(m->spans);
    free(m->span_names);
    free(m->span_name_lanes);
    free(m->span_marks);
    free(m->poll_parts);
    free(m->sample_cause);
    free(m->poll_pieces);
    free(m->poll_piece_first);
    free(m);
}

static const d9_value *field(const d9_event *ev, int index) {
    return index >= 0 && index < ev->schema->field_count ? &ev->values[index] : NULL;
}

static uint64_t uint_or(const d9_event *ev, int index, uint64_t dflt) {
    uint64_t v;
    return d9_value_uint(field(ev, index), &v) ? v : dflt;
}

/* A string field interned; 0 ("") when absent. Unresolved pool references are counted. */
static uint32_t str_of(d9_xmodel *m, const d9_event *ev, int index) {
    const d9_value *v = field(ev, index);
    if (!v || !v->present) return 0;
    if (!v->resolved) {
        m->unresolved_strings++;
        return 0;
    }
    d9_dec_str s;
    if (!d9_value_str(v, &s)) return 0;
    uint32_t i = d9_xstr_intern(&m->strings, s.ptr, s.len);
    if (i == D9_XSTR_FAILED) {
        m->failed = true;
        return 0;
    }
    return i;
}

/* A string interned; 0 for "" (the pool's first string). */
static uint32_t intern(d9_xmodel *m, d9_dec_str s) {
    if (s.len == 0) return 0;
    uint32_t i = d9_xstr_intern(&m->strings, s.ptr, s.len);
    if (i == D9_XSTR_FAILED) {
        m->failed = true;
        return 0;
    }
    return i;
}

static uint32_t saturate32(uint64_t v) { return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v; }

static int add_mark(d9_xmodel *m, const d9_event *ev) {
    struct d9_xbuild *b = m->build;
    mark k;
    if (!d9m_mark_read(ev, b->schedstat, &k)) return 0; /* not a poll or park mark */
    k.seq = (uint32_t)b->seq;
    if (k.kind == D9M_POLL_START) k.loc = str_of(m, ev, ev->schema->bind.field[D9_KF_SPAWN_LOC]);
    uint64_t ignored;
    if ((k.kind == D9M_PARK || k.kind == D9M_UNPARK) && k.tid &&
        d9m_thread_worker_note(&b->thread_workers, k.tid, k.worker_id, &ignored) != 0)
        return -1;
    return VEC_PUSH(b, marks, k) ? 0 : -1;
}

static int add_stack(d9_xmodel *m, const d9_value *v, uint32_t *index) {
    struct d9_xbuild *b = m->build;
    if (!v || !v->present || !v->resolved ||
        (v->type != D9_FT_POOLED_STACK && v->type != D9_FT_STACK))
        return 1; /* no usable stack */
    d9_stack_entry *e = d9_stack_table_get(&b->stack_table, v->stack.addrs, v->stack.count);
    if (!e) return -1;
    if (e->index == b->stacks_n) {
        if (!vec_reserve((void **)&b->stack_by_index, &b->stacks_cap, b->stacks_n,
                         sizeof *b->stack_by_index))
            return -1;
        b->stack_by_index[b->stacks_n++] = e;
    }
    *index = e->index;
    return 0;
}

/* "0,1,2" of a runtime.<name> metadata entry: each worker id gets the runtime's name */
static int add_runtime_workers(d9_xmodel *m, const d9_dec_kv *kv) {
    struct d9_xbuild *b = m->build;
    uint32_t name = d9_xstr_intern(&m->strings, kv->key.ptr + 8, kv->key.len - 8);
    if (name == D9_XSTR_FAILED) return -1;
    const char *p = kv->value.ptr, *end = p + kv->value.len;
    while (p < end) {
        uint64_t id = 0;
        bool digits = false;
        while (p < end && *p >= '0' && *p <= '9') {
            id = id * 10 + (uint64_t)(*p++ - '0');
            digits = true;
        }
        if (digits && !VEC_PUSH(b, runtimes, ((worker_runtime){id, name}))) return -1;
        while (p < end && (*p < '0' || *p > '9')) p++;
    }
    return 0;
}

static int add_metadata(d9_xmodel *m, const d9_event *ev, const d9_dec_binding *in) {
    const d9_value *v = field(ev, F(ENTRIES));
    if (!v || !v->present || v->type != D9_FT_STRING_MAP) return 0;
    /* The first segment's metadata describes the run; later ones (each segment's, and those
     * the recorder adds when a worker registers) may name more runtime workers. */
    bool first = !m->build->have_meta;
    m->build->have_meta = true;
    for (uint32_t i = 0; i < v->map.count; i++) {
        const d9_dec_kv *kv = &v->map.items[i];
        if (!first && (kv->key.len <= 8 || memcmp(kv->key.ptr, "runtime.", 8) != 0)) continue;
        int ss = d9m_schedstat_from_metadata(kv->key.ptr, kv->key.len, kv->value.ptr, kv->value.len);
        if (ss >= 0) m->build->schedstat = (d9m_schedstat)ss;
        if (first) d9m_coverage_metadata(&m->build->coverage, kv->key.ptr, kv->key.len, kv->value.ptr, kv->value.len);
        if (kv->key.len == sizeof D9M_HEAP_RATE_KEY - 1 && !memcmp(kv->key.ptr, D9M_HEAP_RATE_KEY, kv->key.len))
            d9m_heap_note_rate(&m->heap, kv->value.ptr, kv->value.len);
        if (kv->key.len == 7 && !memcmp(kv->key.ptr, "service", 7)) {
            m->service = d9_xstr_intern(&m->strings, kv->value.ptr, kv->value.len);
            if (m->service == D9_XSTR_FAILED) return -1;
        } else if (kv->key.len == 3 && !memcmp(kv->key.ptr, "pid", 3)) {
            char num[24];
            size_t n = kv->value.len < sizeof num - 1 ? kv->value.len : sizeof num - 1;
            memcpy(num, kv->value.ptr, n);
            num[n] = '\0';
            unsigned long long pid = strtoull(num, NULL, 10);
            m->pid = pid < INT32_MAX ? (uint32_t)pid : 0;
        } else if (kv->key.len > 8 && !memcmp(kv->key.ptr, "runtime.", 8)) {
            if (add_runtime_workers(m, kv) != 0) return -1;
        }
    }
    return 0;
}

int d9_xmodel_add(d9_xmodel *m, const d9_event *ev) {
    struct d9_xbuild *b = m->build;
    if (!b) return -1; /* already finished */
    const d9_dec_binding *in = &ev->schema->bind;
    m->events++;
    b->seq++;
    if (ev->schema->has_timestamp && ev->ts_ns != 0 && in->role != D9_SCH_SYMBOL_TABLE_ENTRY) {
        /* SymbolTableEntry carries timestamp 0 by convention: not a point in time (and no
         * real CLOCK_MONOTONIC reading is 0) */
        if (!b->have_ts || ev->ts_ns < m->first_ts) m->first_ts = ev->ts_ns;
        if (!b->have_ts || ev->ts_ns > m->last_ts) m->last_ts = ev->ts_ns;
        b->have_ts = true;
    }
    switch (in->role) {
    case D9_SCH_POLL_START: case D9_SCH_POLL_END: case D9_SCH_WORKER_PARK: case D9_SCH_WORKER_UNPARK:
        if (add_mark(m, ev) != 0) goto oom;
        break;
    case D9_SCH_WAKE: {
        raw_wake w = {ev->ts_ns, uint_or(ev, F(WAKER_TASK_ID), 0), uint_or(ev, F(WOKEN_TASK_ID), 0),
                      uint_or(ev, F(TARGET_WORKER), D9_WORKER_NONE)};
        if (!VEC_PUSH(b, wakes, w)) goto oom;
        break;
    }
    case D9_SCH_CPU_SAMPLE: {
        raw_sample s = {.ts = ev->ts_ns, .worker_id = uint_or(ev, F(WORKER_ID), D9_WORKER_NONE),
                        .tid = saturate32(uint_or(ev, F(TID), 0)),
                        .source = uint_or(ev, F(SOURCE), 0) ? D9_XSAMPLE_OFFCPU : D9_XSAMPLE_CPU};
        int rc = add_stack(m, field(ev, F(CALLCHAIN)), &s.stack);
        if (rc < 0) goto oom;
        if (rc > 0) break; /* a sample without a stack says nothing to a profile */
        /* its own worker, else its thread's (model/thread_worker.h): a timer sample's as much as a
         * context-switch sample's, the thread was running as that worker */
        s.worker_id = d9m_record_worker(d9m_thread_worker_of(&b->thread_workers, s.tid), s.worker_id);
        s.thread_name = str_of(m, ev, F(THREAD_NAME));
        if (!VEC_PUSH(b, samples, s)) goto oom;
        break;
    }
    case D9_SCH_SPAN_ENTER:
    case D9_SCH_SPAN_EXIT:
        if (d9_xspans_add(m, ev, str_of(m, ev, F(SPAN_NAME))) != 0) goto oom;
        break;
    case D9_SCH_ALLOC: { /* the whole trace, whatever the window: in-use needs every free */
        uint32_t stack;
        int rc = add_stack(m, field(ev, F(CALLCHAIN)), &stack);
        if (rc < 0) goto oom;
        if (rc == 0 && d9m_heap_alloc(&m->heap, ev->ts_ns, stack, uint_or(ev, F(ADDR), 0), uint_or(ev, F(SIZE), 0)) != 0)
            goto oom;
        break;
    }
    case D9_SCH_FREE:
        if (d9m_heap_free_event(&m->heap, ev->ts_ns, uint_or(ev, F(ADDR), 0)) != 0) goto oom;
        break;
    case D9_SCH_STACK_ORIGIN: /* only "truncated" (method 3) matters to a profile */
        if (uint_or(ev, F(METHOD), 0) == D9_ORIGIN_TRUNCATED) {
            uint32_t stack;
            int rc = add_stack(m, field(ev, F(CALLCHAIN)), &stack);
            if (rc < 0 || (rc == 0 && d9_u64_set_add(&b->truncated, stack) < 0)) goto oom;
        }
        break;
    case D9_SCH_QUEUE_SAMPLE:
        if (!VEC_PUSH(b, queues, ((raw_queue){ev->ts_ns, uint_or(ev, F(GLOBAL_QUEUE), 0)}))) goto oom;
        break;
    case D9_SCH_SYMBOL_TABLE_ENTRY: {
        d9m_symbol_event e;
        bool ok = d9m_symbol_read(ev, &e);
        m->unresolved_strings += e.unresolved;
        if (!ok) break;
        uint32_t name = intern(m, e.name), file = intern(m, e.file);
        if (m->failed || d9m_symtab_add(&b->symbols, e.addr, e.size, name, file, e.line, e.depth) != 0)
            goto oom;
        break;
    }
    case D9_SCH_SEGMENT_METADATA:
        if (add_metadata(m, ev, in) != 0) goto oom;
        break;
    case D9_SCH_CLOCK_SYNC: {
        uint64_t real;
        if (!b->have_clock && d9_value_uint(field(ev, F(REALTIME_NS)), &real)) {
            b->have_clock = true;
            b->clock_mono = ev->ts_ns;
            b->clock_real = real;
        }
        break;
    }
    case D9_SCH_WORKER_REGISTERED: {
        raw_registration r = {.worker_id = uint_or(ev, F(WORKER_ID), D9_WORKER_NONE),
                              .tid = saturate32(uint_or(ev, F(TID), 0)),
                              .runtime = str_of(m, ev, F(RUNTIME)),
                              .thread_name = str_of(m, ev, F(THREAD_NAME))};
        uint64_t ignored;
        if (r.tid && d9m_thread_worker_note(&b->thread_workers, r.tid, r.worker_id, &ignored) != 0) goto oom;
        if (!VEC_PUSH(b, regs, r)) goto oom;
        break;
    }
    case D9_SCH_MEMORY_MAP: {
        d9m_mapping_event e;
        bool ok = d9m_mapping_read(ev, &e);
        m->unresolved_strings += e.unresolved;
        if (!ok) break;
        uint32_t path = intern(m, e.path), build_id = intern(m, e.build_id);
        if (m->failed ||
            d9m_symtab_add_mapping(&b->symbols, e.start, e.end, e.file_offset, path, build_id) != 0)
            goto oom;
        break;
    }
    case D9_SCH_SCHED_SWITCH: {
        d9_xswitch x = {ev->ts_ns, D9_WORKER_NONE, b->seq,
                        saturate32(uint_or(ev, F(TID), 0)), uint_or(ev, F(SWITCH_OUT), 0) != 0,
                        uint_or(ev, F(PREEMPTED), 0) != 0};
        /* its worker by the model's rule (model/thread_worker.h) */
        if (d9m_thread_worker_note(&b->thread_workers, x.tid, uint_or(ev, F(WORKER_ID), D9_WORKER_NONE),
                                   &x.worker_id) != 0)
            goto oom;
        b->coverage.switch_seen = true;
        if (!VEC_PUSH(b, switches, x)) goto oom;
        break;
    }
    case D9_SCH_POLL_CPU: /* timed, as analyze reads it */
        if (ev->ts_ns) {
            raw_poll_cpu c = {ev->ts_ns, uint_or(ev, F(WORKER_ID), D9_WORKER_NONE),
                              uint_or(ev, F(CPU_TIME_NS), 0), (uint32_t)b->seq, uint_or(ev, F(EXACT), 0) != 0};
            if (!VEC_PUSH(b, poll_cpus, c)) goto oom;
        }
        break;
    case D9_SCH_COVERAGE: {
        d9_dec_str src, mode;
        if (d9_value_str(field(ev, F(SOURCE)), &src) && d9_value_str(field(ev, F(MODE)), &mode))
            d9m_coverage_change(&b->coverage, ev->ts_ns, src.ptr, src.len, mode.ptr, mode.len);
        break;
    }
    case D9_SCH_DROPPED_EVENTS:
        if (ev->ts_ns)
            d9m_coverage_drop(&b->coverage, ev->ts_ns, uint_or(ev, F(WORKER_ID), D9_WORKER_NONE),
                              uint_or(ev, F(TID), 0));
        break;
    default: break; /* the export needs nothing else */
    }
    if (m->failed) return -1;
    return 0;
oom:
    m->failed = true;
    return -1;
}

/* ------------------------------------------------------------------------------------------
 * Finishing: workers
 * ---------------------------------------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* index of worker `id` or D9_XNONE */
static uint32_t worker_index(const d9_xmodel *m, uint64_t id) {
    size_t lo = 0, hi = m->worker_count;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (m->workers[mid].id < id) lo = mid + 1;
        else hi = mid;
    }
    return lo < m->worker_count && m->workers[lo].id == id ? (uint32_t)lo : D9_XNONE;
}

typedef struct tid_vote {
    uint64_t worker_id;
    uint32_t tid;
} tid_vote;

static int cmp_vote(const void *a, const void *b) {
    const tid_vote *x = a, *y = b;
    if (x->worker_id != y->worker_id) return x->worker_id < y->worker_id ? -1 : 1;
    return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* Each worker's thread: its registration, else the tid its park/unpark events and samples
 * name most often. A tid already taken by another worker is not reused (one thread track
 * per tid). */
static int assign_tids(d9_xmodel *m) {
    struct d9_xbuild *b = m->build;
    size_t n = 0;
    tid_vote *votes = malloc((b->marks_n + b->samples_n + 1) * sizeof *votes);
    if (!votes) return -1;
    for (size_t i = 0; i < b->marks_n; i++)
        if (b->marks[i].tid) /* parks and unparks name their thread */
            votes[n++] = (tid_vote){b->marks[i].worker_id, saturate32(b->marks[i].tid)};
    for (size_t i = 0; i < b->samples_n; i++)
        if (b->samples[i].tid) votes[n++] = (tid_vote){b->samples[i].worker_id, b->samples[i].tid};
    qsort(votes, n, sizeof *votes, cmp_vote);
    for (size_t i = 0; i < n;) {
        size_t best_count = 0, j = i;
        uint32_t best = 0;
        while (j < n && votes[j].worker_id == votes[i].worker_id) {
            size_t k = j;
            while (k < n && votes[k].worker_id == votes[j].worker_id && votes[k].tid == votes[j].tid) k++;
            if (k - j > best_count) {
                best_count = k - j;
                best = votes[j].tid;
            }
            j = k;
        }
        uint32_t w = worker_index(m, votes[i].worker_id);
        if (w != D9_XNONE && !m->workers[w].tid_known) {
            m->workers[w].tid = best;
            m->workers[w].tid_known = true;
        }
        i = j;
    }
    free(votes);
    /* registrations win */
    for (size_t i = 0; i < b->regs_n; i++) {
        uint32_t w = worker_index(m, b->regs[i].worker_id);
        if (w != D9_XNONE && b->regs[i].tid) {
            m->workers[w].tid = b->regs[i].tid;
            m->workers[w].tid_known = true;
        }
    }
    /* one worker per tid */
    for (size_t i = 0; i < m->worker_count; i++)
        for (size_t j = 0; j < i; j++)
            if (m->workers[i].tid_known && m->workers[j].tid_known &&
                m->workers[i].tid == m->workers[j].tid)
                m->workers[i].tid_known = false;
    return 0;
}

static int name_workers(d9_xmodel *m) {
    struct d9_xbuild *b = m->build;
    for (size_t i = 0; i < b->runtimes_n; i++) {
        uint32_t w = worker_index(m, b->runtimes[i].worker_id);
        if (w != D9_XNONE) m->workers[w].runtime = b->runtimes[i].runtime;
    }
    uint32_t *thread_names = calloc(m->worker_count + 1, sizeof *thread_names);
    if (!thread_names) return -1;
    for (size_t i = 0; i < b->regs_n; i++) {
        uint32_t w = worker_index(m, b->regs[i].worker_id);
        if (w == D9_XNONE) continue;
        if (b->regs[i].runtime) m->workers[w].runtime = b->regs[i].runtime;
        if (b->regs[i].thread_name) thread_names[w] = b->regs[i].thread_name;
    }
    int rc = 0;
    for (size_t w = 0; w < m->worker_count && rc == 0; w++) {
        d9_xworker *wk = &m->workers[w];
        char name[512];
        if (wk->id == D9_WORKER_NONE) snprintf(name, sizeof name, "not a worker");
        else if (wk->id == D9_WORKER_BLOCKING) snprintf(name, sizeof name, "blocking pool");
        else snprintf(name, sizeof name, "worker %" PRIu64, wk->id);
        size_t len = strlen(name);
        const char *rt = wk->runtime ? d9_xm_str(m, wk->runtime) : NULL;
        const char *tn = thread_names[w] ? d9_xm_str(m, thread_names[w]) : NULL;
        if (rt && tn) snprintf(name + len, sizeof name - len, " (runtime %s, %s)", rt, tn);
        else if (rt) snprintf(name + len, sizeof name - len, " (runtime %s)", rt);
        else if (tn) snprintf(name + len, sizeof name - len, " (%s)", tn);
        wk->name = d9_xstr_intern(&m->strings, name, strlen(name));
        if (wk->name == D9_XSTR_FAILED) rc = -1;
    }
    free(thread_names);
    return rc;
}

static int collect_workers(d9_xmodel *m) {
    struct d9_xbuild *b = m->build;
    size_t n = 0;
    uint64_t *ids = malloc((b->marks_n + b->samples_n + b->regs_n + 1) * sizeof *ids);
    if (!ids) return -1;
    for (size_t i = 0; i < b->marks_n; i++) ids[n++] = b->marks[i].worker_id;
    for (size_t i = 0; i < b->regs_n; i++) ids[n++] = b->regs[i].worker_id;
    for (size_t i = 0; i < b->samples_n; i++)
        if (b->samples[i].worker_id != D9_WORKER_NONE) ids[n++] = b->samples[i].worker_id;
    qsort(ids, n, sizeof *ids, cmp_u64);
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (u == 0 || ids[u - 1] != ids[i]) ids[u++] = ids[i];
    m->workers = calloc(u + 1, sizeof *m->workers);
    if (!m->workers) {
        free(ids);
        return -1;
    }
    for (size_t i = 0; i < u; i++) m->workers[i].id = ids[i];
    m->worker_count = u;
    free(ids);
    if (assign_tids(m) != 0) return -1;
    return name_workers(m);
}

/* ------------------------------------------------------------------------------------------
 * Finishing: slices
 * ---------------------------------------------------------------------------------------- */

static int cmp_mark(const void *a, const void *b) {
    const mark *x = a, *y = b;
    if (x->worker_id != y->worker_id) return x->worker_id < y->worker_id ? -1 : 1;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int cmp_poll_cpu(const void *a, const void *b) {
    const raw_poll_cpu *x = a, *y = b;
    if (x->worker_id != y->worker_id) return x->worker_id < y->worker_id ? -1 : 1;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* A PollCpuEvent is written just after its poll's end on the same thread: it is its worker's
 * latest closed poll's, once (as analyze's ingest reads it; also when the next poll began at
 * the same time). *latest: that poll's index in m->polls, or SIZE_MAX. */
static void take_poll_cpu(d9_xmodel *m, const raw_poll_cpu *c, size_t *latest) {
    if (*latest == SIZE_MAX) return;
    m->polls[*latest].cpu_event = c->exact ? D9M_POLL_CPU_EXACT : D9M_POLL_CPU_NOT_EXACT;
    m->polls[*latest].cpu_ns = c->exact ? c->cpu_ns : 0;
    *latest = SIZE_MAX;
}

/* The window's rule (common/time_arg.h): instants by their time, slices by their start. */
static bool in_window(const d9_xmodel *m, uint64_t ts) { return d9_time_window_holds(&m->window, ts); }

/* A slice in the window, drawn cut at its end (--to); false when it is not in the window. */
static bool clip(const d9_xmodel *m, uint64_t start, uint64_t *end) {
    if (!in_window(m, start)) return false;
    if (*end > m->to) *end = m->to;
    return true;
}

/* On one worker, make polls and parks (each sorted by start) never overlap: a slice that
 * runs past the start of the next one (of either kind) ends there. */
static void cut_overlaps(d9_xmodel *m, d9_xpoll *polls, size_t np, d9_xpark *parks, size_t nk) {
    size_t i = 0, j = 0;
    uint64_t *prev_end = NULL;
    d9_xpoll *prev_poll = NULL;
    while (i < np || j < nk) {
        uint64_t *start, *end;
        d9_xpoll *poll = NULL;
        if (j >= nk || (i < np && polls[i].start <= parks[j].start)) {
            poll = &polls[i];
            start = &polls[i].start;
            end = &polls[i].end;
            i++;
        } else {
            start = &parks[j].start;
            end = &parks[j].end;
            j++;
        }
        if (prev_end && *prev_end > *start) {
            *prev_end = *start;
            m->cut_slices++;
            if (prev_poll) prev_poll->cpu_event = D9M_POLL_CPU_NOT_EXACT; /* its CPU time is the uncut poll's */
        }
        prev_end = end;
        prev_poll = poll;
    }
}

static int pair_marks(d9_xmodel *m) {
    struct d9_xbuild *b = m->build;
    if (b->marks_n) qsort(b->marks, b->marks_n, sizeof *b->marks, cmp_mark); /* NULL when none */
    if (b->poll_cpus_n) qsort(b->poll_cpus, b->poll_cpus_n, sizeof *b->poll_cpus, cmp_poll_cpu);
    size_t ic = 0; /* the next PollCpuEvent */
    size_t np = 0, nk = 0, nq = 0, ns = 0;
    for (size_t i = 0; i < b->marks_n; i++) {
        if (b->marks[i].kind == D9M_POLL_END) np++;
        if (b->marks[i].kind == D9M_UNPARK) nk++, ns++;
        if (b->marks[i].kind != D9M_POLL_END) nq++;
    }
    m->polls = malloc((np + 1) * sizeof *m->polls);
    m->parks = malloc((nk + 1) * sizeof *m->parks);
    m->local_queue = malloc((nq + 1) * sizeof *m->local_queue);
    m->sched_delay = malloc((ns + 1) * sizeof *m->sched_delay);
    m->worker_polls = calloc(m->worker_count + 1, sizeof *m->worker_polls);
    if (!m->polls || !m->parks || !m->local_queue || !m->sched_delay || !m->worker_polls)
        return -1;
    np = nk = nq = ns = 0;
    for (size_t i = 0; i < b->marks_n;) {
        uint64_t wid = b->marks[i].worker_id;
        uint32_t w = worker_index(m, wid);
        d9m_pair_state pair = {0};
        size_t poll0 = np, park0 = nk;
        size_t latest = SIZE_MAX; /* the worker's latest closed poll, for its PollCpuEvent */
        m->worker_polls[w] = (uint32_t)np;
        while (ic < b->poll_cpus_n && b->poll_cpus[ic].worker_id < wid) ic++;
        for (; i < b->marks_n && b->marks[i].worker_id == wid; i++) {
            const mark *k = &b->marks[i];
            const mark *s;
            for (; ic < b->poll_cpus_n && b->poll_cpus[ic].worker_id == wid &&
                   (b->poll_cpus[ic].ts < k->ts || (b->poll_cpus[ic].ts == k->ts && b->poll_cpus[ic].seq < k->seq));
                 ic++)
                take_poll_cpu(m, &b->poll_cpus[ic], &latest);
            d9m_pair_result r = d9m_pair(&pair, k, &s);
            if (r == D9M_PAIR_REOPENED || r == D9M_PAIR_STRAY_END) {
                if (k->kind == D9M_POLL_START || k->kind == D9M_POLL_END) m->unmatched_polls++;
                else m->unmatched_parks++;
            } else if (r == D9M_PAIR_CLOSED && k->kind == D9M_POLL_END) {
                latest = np;
                m->polls[np++] = (d9_xpoll){.start = s->ts, .end = k->ts, .task = s->task,
                                            .worker = w, .loc = s->loc, .queue = s->queue};
            } else if (r == D9M_PAIR_CLOSED) {
                bool has_cpu = s->has_cpu && k->has_cpu && k->cpu_ns >= s->cpu_ns;
                m->parks[nk++] = (d9_xpark){
                    .start = s->ts, .end = k->ts, .worker = w,
                    .has_sched_wait = k->has_sched_wait,
                    .sched_wait_ns = k->has_sched_wait ? k->sched_wait_ns : 0,
                    .has_cpu = has_cpu, .cpu_ns = has_cpu ? k->cpu_ns - s->cpu_ns : 0};
                if (k->has_sched_wait && in_window(m, k->ts))
                    m->sched_delay[ns++] = (d9_xcounter){k->ts, k->sched_wait_ns, w};
            }
            if (k->kind != D9M_POLL_END && in_window(m, k->ts))
                m->local_queue[nq++] = (d9_xcounter){k->ts, k->queue, w};
        }
        for (; ic < b->poll_cpus_n && b->poll_cpus[ic].worker_id == wid; ic++)
            take_poll_cpu(m, &b->poll_cpus[ic], &latest);
        if (pair.in_poll) m->unmatched_polls++;
        if (pair.parked) m->unmatched_parks++;
        cut_overlaps(m, m->polls + poll0, np - poll0, m->parks + park0, nk - park0);
        /* keep what starts in the window, cut at its end */
        size_t kept = poll0;
        for (size_t p = poll0; p < np; p++) {
            uint64_t end = m->polls[p].end;
            if (!clip(m, m->polls[p].start, &m->polls[p].end)) continue;
            if (m->polls[p].end != end) m->polls[p].cpu_event = D9M_POLL_CPU_NOT_EXACT; /* cut at --to */
            m->polls[kept++] = m->polls[p];
        }
        np = kept;
        kept = park0;
        for (size_t p = park0; p < nk; p++)
            if (clip(m, m->parks[p].start, &m->parks[p].end)) m->parks[kept++] = m->parks[p];
        nk = kept;
        m->workers[w].polls = np - poll0;
        m->workers[w].parks = nk - park0;
    }
    /* workers without marks still need a valid (empty) range: fill from the right */
    m->worker_polls[m->worker_count] = (uint32_t)np;
    for (size_t w = m->worker_count; w-- > 0;)
        if (m->workers[w].polls == 0) m->worker_polls[w] = m->worker_polls[w + 1];
    m->poll_count = np;
    m->park_count = nk;
    m->local_queue_count = nq;
    m->sched_delay_count = ns;
    return 0;
}

/* ------------------------------------------------------------------------------------------
 * Finishing: wakes, samples, counters
 * ---------------------------------------------------------------------------------------- */

static const d9_xpoll *sort_polls_base; /* qsort has no context argument */

static int cmp_poll_by_task(const void *a, const void *b) {
    const d9_xpoll *x = &sort_polls_base[*(const uint32_t *)a];
    const d9_xpoll *y = &sort_polls_base[*(const uint32_t *)b];
    if (x->task != y->task) return x->task < y->task ? -1 : 1;
    return x->start < y->start ? -1 : x->start > y->start;
}

static int cmp_wake_ts(const void *a, const void *b) {
    const d9_xwake *x = a, *y = b;
    return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static const d9_xwake *sort_wakes_base;

static int cmp_wake_by_task(const void *a, const void *b) {
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    const d9_xwake *x = &sort_wakes_base[i], *y = &sort_wakes_base[j];
    if (x->woken_task != y->woken_task) return x->woken_task < y->woken_task ? -1 : 1;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    return i < j ? -1 : i > j;
}

static int cmp_wake_by_target(const void *a, const void *b) {
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    uint32_t x = sort_wakes_base[i].target, y = sort_wakes_base[j].target;
    if (x != y) return x < y ? -1 : 1;
    return i < j ? -1 : i > j;
}

/* Each wake's target by the model's rule (model/wake_link.h): per task, its wakes and polls
 * in time order (a wake before a poll of the same start), each poll taking the wakes pending
 * before it. by_wake and by_poll are the wake and poll indexes sorted by task, then time. */
static void target_wakes(d9_xmodel *m, const uint32_t *by_wake, size_t n, const uint32_t *by_poll) {
    size_t np = m->poll_count, j = 0;
    for (size_t i = 0; i < n;) {
        uint64_t task = m->wakes[by_wake[i]].woken_task;
        while (j < np && m->polls[by_poll[j]].task < task) j++;
        d9m_wake_state st = {0};
        size_t pending = i; /* by_wake[pending..i): the wakes waiting for a poll */
        for (;;) {
            bool wake = i < n && m->wakes[by_wake[i]].woken_task == task;
            bool poll = j < np && m->polls[by_poll[j]].task == task;
            if (!wake && (!poll || pending == i)) break;
            if (wake && (!poll || m->wakes[by_wake[i]].ts <= m->polls[by_poll[j]].start)) {
                d9m_wake_note(&st, m->wakes[by_wake[i++]].ts);
                continue;
            }
            const d9_xpoll *p = &m->polls[by_poll[j]];
            d9m_wake_link link;
            if (d9m_wake_poll(&st, p->start, p->end, &link))
                for (; pending < i; pending++) m->wakes[by_wake[pending]].target = by_poll[j];
            j++;
        }
    }
}

static int link_wakes(d9_xmodel *m) {
    struct d9_xbuild *b = m->build;
    m->wakes = malloc((b->wakes_n + 1) * sizeof *m->wakes);
    m->wake_order = malloc((b->wakes_n + 1) * sizeof *m->wake_order);
    uint32_t *by_poll = malloc((m->poll_count + 1) * sizeof *by_poll);
    if (!m->wakes || !m->wake_order || !by_poll) {
        free(by_poll);
        return -1;
    }
    size_t n = 0;
    for (size_t i = 0; i < b->wakes_n; i++) {
        const raw_wake *r = &b->wakes[i];
        if (!in_window(m, r->ts)) continue;
        uint32_t from = r->from_worker_id == D9_WORKER_NONE ? D9_XNONE
                                                           : worker_index(m, r->from_worker_id);
        m->wakes[n++] = (d9_xwake){r->ts, r->waker, r->woken, from, D9_XNONE};
    }
    qsort(m->wakes, n, sizeof *m->wakes, cmp_wake_ts);
    m->wake_count = n;
    for (size_t i = 0; i < m->poll_count; i++) by_poll[i] = (uint32_t)i;
    sort_polls_base = m->polls;
    qsort(by_poll, m->poll_count, sizeof *by_poll, cmp_poll_by_task);
    /* wake_order, sorted by task first, then regrouped by target poll */
    for (size_t i = 0; i < n; i++) m->wake_order[i] = (uint32_t)i;
    sort_wakes_base = m->wakes;
    qsort(m->wake_order, n, sizeof *m->wake_order, cmp_wake_by_task);
    target_wakes(m, m->wake_order, n, by_poll);
    free(by_poll);
    for (size_t i = 0; i < n; i++) m->wake_order[i] = (uint32_t)i;
    qsort(m->wake_order, n, sizeof *m->wake_order, cmp_wake_by_target);
    for (size_t i = 0; i < m->poll_count; i++) m->polls[i].wakes_first = m->polls[i].wakes_count = 0;
    for (size_t i = 0; i < n;) {
        uint32_t t = m->wakes[m->wake_order[i]].target;
        size_t j = i;
        while (j < n && m->wakes[m->wake_order[j]].target == t) j++;
        if (t != D9_XNONE) {
            m->polls[t].wakes_first = (uint32_t)i;
            m->polls[t].wakes_count = (uint32_t)(j - i);
        }
        i = j;
    }
    return 0;
}

/* Index of the last slice of [base, base+n) (sorted by start, `stride` bytes apart) that
 * starts at or before ts, or n when none. Polls and parks both begin with start, end. */
static size_t last_started(const void *base, size_t n, size_t stride, uint64_t ts) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const uint64_t *start = (const uint64_t *)((const char *)base + mid * stride);
        if (*start <= ts) lo = mid + 1;
        else hi = mid;
    }
    return lo == 0 ? n : lo - 1;
}

static int cmp_sample_ts(const void *a, const void *b) {
    const d9_xsample *x = a, *y = b;
    return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static int place_samples(d9_xmodel *m) {
    struct d9_xbuild *b = m->build;
    m->samples = malloc((b->samples_n + 1) * sizeof *m->samples);
    if (!m->samples) return -1;
    /* parks per worker: they are sorted by (worker, start) */
    uint32_t *worker_parks = calloc(m->worker_count + 1, sizeof *worker_parks);
    if (!worker_parks) return -1;
    for (size_t i = 0, w = 0; w <= m->worker_count; w++) {
        while (i < m->park_count && m->parks[i].worker < w) i++;
        worker_parks[w] = (uint32_t)i;
    }
    size_t n = 0;
    for (size_t i = 0; i < b->samples_n; i++) {
        const raw_sample *r = &b->samples[i];
        if (!in_window(m, r->ts)) continue;
        d9_xsample s = {.ts = r->ts, .tid = r->tid, .stack = r->stack, .poll = D9_XNONE,
                        .thread_name = r->thread_name, .source = r->source,
                        .worker = r->worker_id == D9_WORKER_NONE ? D9_XNONE
                                                                 : worker_index(m, r->worker_id)};
        if (s.worker != D9_XNONE) {
            uint32_t w = s.worker;
            const d9_xpoll *polls = m->polls + m->worker_polls[w];
            size_t np = m->worker_polls[w + 1] - m->worker_polls[w];
            size_t p = last_started(polls, np, sizeof *polls, s.ts);
            if (p < np && s.ts <= polls[p].end) s.poll = (uint32_t)(m->worker_polls[w] + p);
            const d9_xpark *parks = m->parks + worker_parks[w];
            size_t nk = worker_parks[w + 1] - worker_parks[w];
            size_t k = last_started(parks, nk, sizeof *parks, s.ts);
            s.parked = s.poll == D9_XNONE && k < nk && s.ts <= parks[k].end;
            m->workers[w].samples++;
        }
        m->samples[n++] = s;
    }
    free(worker_parks);
    qsort(m->samples, n, sizeof *m->samples, cmp_sample_ts);
    m->sample_count = n;
    return 0;
}

static int cmp_counter(const void *a, const void *b) {
    const d9_xcounter *x = a, *y = b;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    return x->worker < y->worker ? -1 : x->worker > y->worker;
}

static int collect_counters(d9_xmodel *m) {
    struct d9_xbuild *b = m->build;
    m->global_queue = malloc((b->queues_n + 1) * sizeof *m->global_queue);
    if (!m->global_queue) return -1;
    size_t n = 0;
    for (size_t i = 0; i < b->queues_n; i++)
        if (in_window(m, b->queues[i].ts))
            m->global_queue[n++] = (d9_xcounter){b->queues[i].ts, b->queues[i].value, D9_XNONE};
    m->global_queue_count = n;
    qsort(m->global_queue, n, sizeof *m->global_queue, cmp_counter);
    qsort(m->local_queue, m->local_queue_count, sizeof *m->local_queue, cmp_counter);
    qsort(m->sched_delay, m->sched_delay_count, sizeof *m->sched_delay, cmp_counter);
    return 0;
}

/* ------------------------------------------------------------------------------------------
 * Finishing: the window and everything together
 * ---------------------------------------------------------------------------------------- */

static int resolve_window(d9_xmodel *m, const d9_xwindow *w, char *err, size_t errlen) {
    static const d9_time_arg unset;
    if (d9_time_window_resolve(w ? &w->from : &unset, w ? &w->to : &unset, m->first_ts,
                               m->last_ts, &m->window, err, errlen) != 0)
        return -1;
    /* what the exports draw: the window, up to the trace's end without --to */
    m->from = m->window.from;
    m->to = w && w->to.set ? m->window.to : m->last_ts;
    return 0;
}

int d9_xmodel_finish(d9_xmodel *m, const d9_xwindow *w, char *err, size_t errlen) {
    struct d9_xbuild *b = m->build;
    if (!b) {
        snprintf(err, errlen, "export model finished twice");
        return -1;
    }
    if (m->failed) goto oom;
    if (resolve_window(m, w, err, errlen) != 0) return -1;
    if (b->have_clock) {
        int64_t delta = (int64_t)(m->from - b->clock_mono);
        m->have_realtime = true;
        m->realtime_at_from = (uint64_t)((int64_t)b->clock_real + delta);
    }
    if (collect_workers(m) != 0 || pair_marks(m) != 0 || link_wakes(m) != 0 ||
        place_samples(m) != 0 || collect_counters(m) != 0)
        goto oom;
    /* call stacks of the samples in the window, resolved into locations and frames */
    bool *used = calloc(b->stacks_n + 1, sizeof *used);
    if (!used) goto oom;
    for (size_t i = 0; i < m->sample_count; i++) used[m->samples[i].stack] = true;
    for (size_t i = 0; i < m->heap.nsites; i++) used[m->heap.sites[i].stack] = true;
    int rc = d9_xsymbols_resolve(&b->symbols, m, (const d9_stack_entry *const *)b->stack_by_index,
                                 b->stacks_n, used, &b->truncated);
    free(used);
    if (rc != 0) goto oom;
    if (d9_xattribute(m, b->switches, b->switches_n, &b->coverage) != 0) goto oom;
    if (d9_xspans_build(m, &b->coverage) != 0) goto oom; /* after the polls' attribution */
    build_free(b);
    m->build = NULL;
    return 0;
oom:
    m->failed = true;
    snprintf(err, errlen, "out of memory while building the export");
    return -1;
}
