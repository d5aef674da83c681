/* Draining: every thread's ring read from its tail to the head published when the drain
 * began, through the chain of rings it grew, each record decoded with the thread's state
 * (current task, worker, last schedstat reading) and merged in time order with the sources'
 * events; each goes straight on to the inline encoder. */
#include "core/collector_encode.h"

#include <stdlib.h>
#include <string.h>

#include "core/event_types.h"
#include "core/collector_switch_stack.h"
#include "core/flight_rule_check.h"
#include "core/records.h"
#include "core/workers.h"

static inline __attribute__((always_inline)) uint64_t ticks_to_ns(d9_collector *c, uint64_t w0) {
    return d9_clock_map_to_ns_fast(&c->clock, d9_ticks_unwrap56(D9_REC_TICKS56(w0), c->now_ticks));
}

/* Point the cursor at the ring that holds its position. A ring added after the drain read the
 * thread's head starts at or after that head, so the chain seen now covers [pos, end). */
static void cursor_set_ring(cursor *k, d9_ring *from) {
    d9_ring *r = d9_ring_for(from, k->pos);
    d9_ring *n = atomic_load_explicit(&r->newer, memory_order_acquire);
    k->ring = r;
    k->base = r->words;
    k->mask = r->mask;
    k->next_start = n ? n->start : UINT64_MAX;
    if (!r->words) k->next_start = 0; /* keeps the check below on the rare path */
}

/* Skip PAD records; false when the cursor is exhausted. */
static inline bool cursor_peek(d9_collector *c, cursor *k) {
    while (k->pos < k->end) {
        if (__builtin_expect(k->pos >= k->next_start, 0)) {
            cursor_set_ring(k, k->ring);
            if (!k->base) break; /* records in a ring that has no memory: a corrupt head */
        }
        const uint64_t *r = k->base + (k->pos & k->mask);
        if (D9_REC_KIND(r[0]) == D9_REC_PAD) {
            k->pos = (k->pos & ~k->mask) + k->mask + 1;
            continue;
        }
        uint64_t n = d9_record_words(r);
        if (n == 0 || k->pos + n > k->end || (k->pos & k->mask) + n > k->mask + 1) {
            k->pos = k->end; /* a corrupt ring (the application wrote over it): stop here */
            return false;
        }
        k->next_ts = ticks_to_ns(c, r[0]);
        k->words = n;
        return true;
    }
    return false;
}

/* Each kind emits in its own case, so the inlined encoder specialises to it. Records are
 * counted per drain, not with a locked add per event. */
#define break_emit                \
    t->c_events++;                \
    c->recorded_in_drain++;       \
    emit(c, &e);                  \
    break

static void decode_record(d9_collector *c, d9_thread *t, const uint64_t *r, uint64_t ts) {
    out_event e; /* not zeroed: each kind sets what its encoding reads (this runs per event) */
    e.ts = ts;
    uint64_t tid = (uint64_t)t->tid;
    switch (D9_REC_KIND(r[0])) {
    case D9_REC_POLL_BEGIN:
        t->c_task = r[1];
        if (__builtin_expect(d9_rule_check_on(), 0)) d9_rule_check_poll_begin(t, ts);
        e.schema = D9_SCH_POLL_START;
        e.v[0] = t->c_worker; e.v[1] = r[2] >> 32; e.v[2] = r[1]; e.v[3] = r[2] & 0xffffffffu;
        break_emit;
    case D9_REC_POLL_END:
        t->c_task = 0;
        if (__builtin_expect(d9_rule_check_on(), 0)) d9_rule_check_poll_end(t, ts, t->c_worker);
        e.schema = D9_SCH_POLL_END;
        e.v[0] = t->c_worker;
        break_emit;
    case D9_REC_POLL_END_PARK: /* the poll's end, then the park at the same tick */
        t->c_task = 0;
        if (__builtin_expect(d9_rule_check_on(), 0)) d9_rule_check_poll_end(t, ts, t->c_worker);
        e.schema = D9_SCH_POLL_END;
        e.v[0] = t->c_worker;
        t->c_events++;
        c->recorded_in_drain++;
        emit(c, &e);
        /* fall through */
    case D9_REC_PARK:
    case D9_REC_UNPARK:
    case D9_REC_UNPARK_WAKE: {
        bool park = D9_REC_KIND(r[0]) == D9_REC_PARK || D9_REC_KIND(r[0]) == D9_REC_POLL_END_PARK;
        /* The CPU time as the hook wrote it (thread_cpu_time.h). The run-queue wait since the
         * thread's previous schedstat reading: that reading is at most the resolution older than
         * the park (see d9_schedstat_min_ticks). Not read (the park was shorter than the
         * resolution) or no schedstat: 0, as dial9 writes it (a required u64 to its viewer). */
        uint64_t cpu = r[1], delay = 0;
        if (r[2] != D9_NS_NOT_READ) {
            if (!park && r[2] != D9_NS_UNKNOWN && t->c_ss_wait != D9_NS_UNKNOWN && r[2] >= t->c_ss_wait)
                delay = r[2] - t->c_ss_wait;
            t->c_ss_wait = r[2];
        }
        if (!park && __builtin_expect(d9_rule_check_on(), 0)) d9_rule_check_unpark(ts, delay, t->c_worker);
        e.schema = park ? D9_SCH_WORKER_PARK : D9_SCH_WORKER_UNPARK;
        e.v[0] = t->c_worker; e.v[1] = r[3]; e.v[2] = cpu; e.v[3] = delay; e.v[4] = tid;
        if (D9_REC_KIND(r[0]) == D9_REC_UNPARK_WAKE) { /* then its ready wake, at the same tick */
            t->c_events++;
            c->recorded_in_drain++;
            emit(c, &e);
            e.schema = D9_SCH_WAKE;
            e.v[0] = 0; e.v[1] = r[4]; e.v[2] = t->c_worker;
        }
        break_emit;
    }
    case D9_REC_WAKE:
    case D9_REC_WAKE_READY:
        e.schema = D9_SCH_WAKE;
        e.v[0] = D9_REC_KIND(r[0]) == D9_REC_WAKE ? t->c_task : 0;
        e.v[1] = r[1]; e.v[2] = t->c_worker;
        break_emit;
    case D9_REC_SPAWN:
        e.schema = D9_SCH_TASK_SPAWN;
        e.v[0] = r[1]; e.v[1] = r[2];
        if (r[3]) { /* the object the task stands for, right after its spawn */
            t->c_events++;
            c->recorded_in_drain++;
            emit(c, &e);
            e.schema = D9_SCH_TASK_OBJECT;
            e.v[1] = r[3];
        }
        break_emit;
    case D9_REC_TERMINATE:
        e.schema = D9_SCH_TASK_TERMINATE;
        e.v[0] = r[1];
        break_emit;
    case D9_REC_WORKER_BEGIN: {
        t->c_worker = (uint32_t)r[1];
        uint32_t index = 0;
        const char *rt = d9_workers_describe(t->c_worker, &index);
        e.schema = D9_SCH_WORKER_REGISTERED;
        e.v[0] = t->c_worker; e.v[1] = tid; e.v[2] = index;
        e.s[0] = rt ? rt : "?"; e.s[1] = t->name;
        break_emit;
    }
    case D9_REC_WORKER_END:
        t->c_worker = 255;
        return;
    case D9_REC_DROPPED:
        d9_col_report_ring_drops(c, t, r[1], ts);
        return;
    case D9_REC_TASK_DUMP:
        e.schema = D9_SCH_TASK_DUMP;
        e.v[0] = r[1];
        { /* unwound here, by the source that wrote it: the stack copy rides in the record */
            uint8_t method = 0;
            e.nframes = c->dump_unwind ? c->dump_unwind(r + 3, r[2], c->dump_frames, DUMP_MAX_FRAMES, &method) : 0;
            e.v[1] = method;
        }
        e.payload = c->dump_frames;
        break_emit;
    case D9_REC_SPAN_BEGIN:
    case D9_REC_SPAN_END: /* with what the model needs: the worker, the task polled, the thread */
        e.schema = D9_REC_KIND(r[0]) == D9_REC_SPAN_BEGIN ? D9_SCH_SPAN_ENTER : D9_SCH_SPAN_EXIT;
        e.v[0] = t->c_worker; e.v[1] = r[1]; e.v[2] = r[2]; e.v[3] = t->c_task; e.v[4] = tid;
        break_emit;
    case D9_REC_ALLOC: /* a sampled heap block: its stack rides in the record, as a dump's */
        e.schema = D9_SCH_ALLOC;
        e.v[0] = tid; e.v[1] = r[1]; e.v[2] = r[2];
        {
            uint8_t method = 0;
            e.nframes = c->dump_unwind ? c->dump_unwind(r + 4, r[3], c->dump_frames, DUMP_MAX_FRAMES, &method) : 0;
            e.v[3] = method;
        }
        e.payload = c->dump_frames;
        break_emit;
    case D9_REC_FREE:
        e.schema = D9_SCH_FREE;
        e.v[0] = tid; e.v[1] = r[1]; e.v[2] = r[2];
        e.v[3] = r[3] ? d9_clock_map_to_ns_fast(&c->clock, r[3]) : 0;
        break_emit;
    case D9_REC_CUSTOM:
        e.custom = d9_event_type_at((uint32_t)r[1]);
        if (!e.custom) return;
        if (__builtin_expect(d9_rule_check_on(), 0)) d9_rule_check_event(e.custom, ts);
        e.schema = UINT16_MAX;
        e.payload = r + 2;
        break_emit;
    default:
        return;
    }
#undef break_emit
}

/* ---------------------------------------------------------------- the hooks' records, fast */

/* Length of the records the fast path below takes itself (0: any other kind). */
static const uint8_t hook_words[256] = {
    [D9_REC_POLL_BEGIN] = D9_REC_WORDS_POLL_BEGIN, [D9_REC_POLL_END] = D9_REC_WORDS_POLL_END,
    [D9_REC_PARK] = D9_REC_WORDS_PARK,             [D9_REC_UNPARK] = D9_REC_WORDS_PARK,
    [D9_REC_WAKE] = D9_REC_WORDS_WAKE,             [D9_REC_WAKE_READY] = D9_REC_WORDS_WAKE,
    [D9_REC_TERMINATE] = D9_REC_WORDS_TERMINATE, [D9_REC_SPAWN] = D9_REC_WORDS_SPAWN,
    [D9_REC_SPAN_BEGIN] = D9_REC_WORDS_SPAN,     [D9_REC_SPAN_END] = D9_REC_WORDS_SPAN,
    [D9_REC_UNPARK_WAKE] = D9_REC_WORDS_UNPARK_WAKE, [D9_REC_POLL_END_PARK] = D9_REC_WORDS_PARK,
};

/* d9_raw_event's bytes (a timestamp reset first when the delta does not fit in 24 bits or goes
 * back), the frame's five header bytes in one 8-byte store: the bytes after them are the
 * fields', written next, inside the room reserved for the event. `delta` is ts less the
 * stream's timestamp base (the event before), which the loop has as it reads the record: no
 * base is kept per event, the stream's is ts - delta when the run ends. */
static inline __attribute__((always_inline)) uint8_t *hook_event_header(uint8_t *p, uint16_t type_id, uint64_t ts,
                                                                         uint64_t delta) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (__builtin_expect(delta > D9_TS_DELTA_MAX, 0)) { /* going back wraps above it: one test */
        d9_stream_state st = {ts - delta};
        return d9_raw_event(p, &st, type_id, ts);
    }
    uint64_t h = D9_FRAME_EVENT | (uint64_t)type_id << 8 | delta << 24;
    memcpy(p, &h, sizeof h);
    return p + 6;
#else
    d9_stream_state st = {ts - delta};
    return d9_raw_event(p, &st, type_id, ts);
#endif
}

/* Eight bytes at p, little-endian (the bytes past the field's length are overwritten next). */
static inline __attribute__((always_inline)) void put_le64(uint8_t *p, uint64_t v) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(p, &v, sizeof v);
#else
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
#endif
}

/* A u32 field at p in one store (d9_raw_u32's bytes: its four byte stores, after a varint,
 * were merged by the compiler with the varint's last byte through shifts and ors). */
static inline __attribute__((always_inline)) uint8_t *put_u32(uint8_t *p, uint32_t v) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(p, &v, sizeof v);
    return p + 4;
#else
    return d9_raw_u32(p, v);
#endif
}

#define HOOK_WORDS_MAX D9_REC_WORDS_UNPARK_WAKE
_Static_assert(HOOK_WORDS_MAX <= 1 << 3, "a record's words in 2^HOOK_WORDS_SHIFT");
_Static_assert(D9_REC_WORDS_POLL_BEGIN <= HOOK_WORDS_MAX && D9_REC_WORDS_WAKE <= HOOK_WORDS_MAX &&
                   D9_REC_WORDS_PARK <= HOOK_WORDS_MAX &&
                   D9_REC_WORDS_TERMINATE <= HOOK_WORDS_MAX && D9_REC_WORDS_SPAWN <= HOOK_WORDS_MAX &&
                   D9_REC_WORDS_SPAN <= HOOK_WORDS_MAX,
               "the longest record the fast path takes");

/* A span's enter or exit in the fast path, the bytes d9_col_encode_other writes: the worker,
 * the span id, no parent (an enter's optional field, absent), the name's pool id, the task the
 * thread is polling, the thread. Taken here, a span no longer ends the thread's run: through
 * decode_record and emit it cost a run's exit and re-entry besides the generic encoder's
 * out-of-line stores (bench/README.md, "Spans and spawns in the fast path"). */
_Static_assert(D9_RAW_EVENT_MAX + 2 + 10 + 1 + 4 + 10 + 4 <= HOOK_EVENT_MAX, "a span fits an event's room");
static inline __attribute__((always_inline)) uint8_t *fast_span(uint8_t *p, uint64_t delta, uint16_t schema,
                                                                uint64_t ts, uint64_t worker_bytes,
                                                                unsigned worker_len, uint64_t span_id,
                                                                uint32_t name, uint64_t task, uint32_t tid) {
    p = hook_event_header(p, schema, ts, delta);
    put_le64(p, worker_bytes);
    p = d9_raw_varint(p + worker_len, span_id);
    if (schema == D9_SCH_SPAN_ENTER) *p++ = 0; /* parent_span_id: none */
    p = put_u32(p, name);
    p = d9_raw_varint(p, task);
    return put_u32(p, tid);
}

/* cpu_time_ns, a varint of 4-6 bytes (~33 instructions a byte at a time): written from the
 * thread's previous one, whose high bytes it shares nearly always (collector_cpu_varint.h):
 * with the task-clock page every park and unpark has a value of its own, and by system call an
 * unpark carries its park's, whose bytes it copies (cpu_time_again). The room for the 16-byte
 * copies past the event's header, worker varint and local_queue is reserved with the event. */
#define CPU_FIELD_AT_MOST (D9_RAW_EVENT_MAX + 10 + 1) /* header, worker varint, local_queue */
_Static_assert(CPU_FIELD_AT_MOST + 16 <= HOOK_EVENT_MAX, "the 16-byte copies stay in the event's room");
/* An unpark that carries its park's value (by system call): the park's bytes, 16 at once. */
static inline __attribute__((always_inline)) uint8_t *cpu_time_again(d9_thread *t, uint8_t *p) {
    memcpy(p, t->c_cpu.bytes, 16);
    return p + t->c_cpu.len_m1 + 1;
}

/* How many records the fast loop may take, the next one included, before it tests room and
 * ring end exactly again: a record writes at most two events (a spawn and its object, an
 * unpark and its wake: 2 HOOK_EVENT_MAX bytes) and reads at most HOOK_WORDS_MAX words, each
 * rounded up to a power of two so the count is two shifts. One test of a counter per record
 * instead of two, and a run no longer stops HOOK_WORDS_MAX words before the head read: its
 * last records are tested one by one. The caller knows the next record fits (its words
 * before lim, p <= p_stop, or the first record of a run: taken, then the exact tests). */
#define HOOK_RECORD_BYTES_SHIFT 7
#define HOOK_WORDS_SHIFT 3
_Static_assert(2 * HOOK_EVENT_MAX <= 1 << HOOK_RECORD_BYTES_SHIFT, "a record's two events in 2^shift bytes");
static inline __attribute__((always_inline)) uint64_t records_unchecked(const uint8_t *p, const uint8_t *p_stop,
                                                                        const uint64_t *r, const uint64_t *r_lim) {
    uint64_t room = p <= p_stop ? (uint64_t)(p_stop - p) >> HOOK_RECORD_BYTES_SHIFT : 0;
    uint64_t words = (uint64_t)(r_lim - r); /* the caller's record is whole there: r < r_lim */
    uint64_t ring = words >= HOOK_WORDS_MAX ? (words - HOOK_WORDS_MAX) >> HOOK_WORDS_SHIFT : 0;
    return 1 + (room < ring ? room : ring);
}

/* ---------------------------------------------------------------- context switches, fast */

/* A thread of this drain's list by its id. The index of the last one found is tried first: a
 * source's events come from few threads (a worker's switch-out, then its switch-in). */
static d9_thread *thread_by_tid(d9_collector *c, uint32_t tid) {
    size_t last = c->tid_last;
    if (last < c->thread_count && (uint32_t)c->threads[last]->tid == tid) return c->threads[last];
    for (size_t i = 0; i < c->thread_count; i++)
        if ((uint32_t)c->threads[i]->tid == tid) {
            c->tid_last = i;
            return c->threads[i];
        }
    return NULL;
}

/* The bytes d9_col_encode_other writes for a SchedSwitchEvent (tid, worker, out, preempted,
 * the CPU an optional varint), stored straight into the output: a context switch is the
 * sources' most frequent event (two a request of a server whose poller sleeps between them),
 * and through an out_event and the generic encoder's calls per field it cost ~4 times this.
 * False when emit must take it: the stream to open or the schema to declare in it, less than
 * an event's worst case before the buffer's or the segment's end. */
_Static_assert(D9_RAW_EVENT_MAX + 4 + 2 + 3 + 10 <= HOOK_EVENT_MAX, "a switch fits an event's room");
static inline __attribute__((always_inline)) uint8_t *switch_fields(uint8_t *p, const d9_src_event *se,
                                                                     const d9_thread *t) {
    p = put_u32(p, se->tid);
    p = d9_raw_varint(p, t ? t->c_worker : 255);
    p[0] = se->sw.out;
    p[1] = se->sw.preempted;
    return d9_raw_opt_varint(p + 2, se->cpu >= 0 ? (uint64_t)se->cpu : D9_ABSENT);
}

static bool fast_switch(d9_collector *c, const d9_src_event *se, const d9_thread *t) {
    size_t avail = c->out.cap < c->room ? c->out.cap : (size_t)c->room;
    if (!c->stream_open || c->out.failed || avail < HOOK_EVENT_MAX + c->out.len ||
        c->schema_mark[D9_SCH_SCHED_SWITCH] != c->stream_no)
        return false;
    uint8_t *p = d9_raw_event(c->out.data + c->out.len, &c->st, D9_SCH_SCHED_SWITCH, se->ts_ns);
    p = switch_fields(p, se, t);
    c->out.len = (size_t)(p - c->out.data);
    c->out_events++;
    if (__builtin_expect(c->out.len >= FLUSH_BYTES, 0)) d9_col_flush_out(c);
    return true;
}

/* A source event of a thread that registered after this drain listed the threads (the
 * sources read the registry later, after marking their rings): its thread's records are not
 * merged yet, and it would go out before them with no thread to name it (no worker, no name,
 * no unwinding in a poll: the first switch of a new worker lost its stack). It waits for the
 * next drain, which lists the thread and merges them in time order. Its events from before
 * the listing came before the thread's first record, and go out now. */
static bool of_newer_thread(const d9_collector *c, const d9_src_event *se, const d9_thread *t) {
    return !t && se->tid && c->hold_new_threads && se->ts_ns >= c->threads_ns;
}


/* The time of the sources' next event (UINT64_MAX: none left in this drain), kept in c->src_ts:
 * the merge and a thread's run compare it per record taken and per switch written. */
static inline uint64_t next_src_ts(const d9_collector *c) { return c->src_ts; }
static inline void src_advance(d9_collector *c) {
    size_t i = ++c->next_src;
    c->src_ts = i < c->batch.count ? c->batch.events[i].ts_ns : UINT64_MAX;
}

/* The sources' next event, when it is a context switch due before the record a thread's run
 * has read ahead (and before every other thread's), written by the run itself at p (the
 * stream's base, the event before, at `base`): its bytes, or NULL when the merge must take it
 * (another kind, the schema not yet in this stream, less than an event's room before p_stop,
 * a thread newer than this drain's list). Left to the merge, each switch ended the run, and the
 * record after it paid the run's entry again (~80 instructions: bench/README.md). */
static inline __attribute__((always_inline)) uint8_t *run_switch(d9_collector *c, uint8_t *p, const uint8_t *p_stop,
                                                                 uint64_t base) {
    const d9_src_event *se = &c->batch.events[c->next_src];
    if (se->kind != D9_SRC_SWITCH || p + HOOK_EVENT_MAX > p_stop ||
        c->schema_mark[D9_SCH_SCHED_SWITCH] != c->stream_no)
        return NULL;
    d9_thread *t = se->tid ? thread_by_tid(c, se->tid) : NULL;
    if (of_newer_thread(c, se, t)) return NULL;
    src_advance(c);
    c->out_events++;
    return switch_fields(hook_event_header(p, D9_SCH_SCHED_SWITCH, se->ts_ns, se->ts_ns - base), se, t);
}


/* The schemas of the records every loop makes (polls, wakes, parks): once all are written in the
 * stream and the thread's worker id is one varint byte (below 128), a run takes the copy of the
 * loop where those tests are constants (`steady`): ~10 instructions fewer a request. */
#define STEADY_SCHEMAS                                                                            \
    (1u << D9_SCH_POLL_START | 1u << D9_SCH_POLL_END | 1u << D9_SCH_WAKE | 1u << D9_SCH_WORKER_PARK | \
     1u << D9_SCH_WORKER_UNPARK)
_Static_assert(D9_SCH_POLL_START < 32 && D9_SCH_POLL_END < 32 && D9_SCH_WORKER_PARK < 32 && D9_SCH_WORKER_UNPARK < 32,
               "a bit per steady schema");
static inline bool steady_run(const d9_collector *c, const d9_thread *t) {
    return c->fast_ready_stream == c->stream_no && (c->fast_ready & STEADY_SCHEMAS) == STEADY_SCHEMAS &&
           t->c_worker < 0x80;
}

typedef enum fast_stop {
    FAST_GENERAL, /* the record at the cursor is the next to take, by decode_record */
    FAST_FLUSH,   /* the output reached FLUSH_BYTES; the cursor is past the records taken */
    FAST_PEEK,    /* the next record needs cursor_peek (another kind, a ring's end, PAD) */
    FAST_YIELD,   /* the next record (peeked) comes after another thread's or a source's */
} fast_stop;

/* The records every hook makes (polls, parks, wakes, spawns, terminations, spans), decoded and encoded
 * straight from the ring into the output buffer: cursor, output pointer, timestamp base and
 * task in registers, room checked once against the worst case, counts added once per run.
 * The same bytes as decode_record + emit, which take over for anything else: another kind, a
 * schema or location not yet written in this stream, less than an event's worst case before
 * the buffer's or the segment's end (where emit grows or rotates). Enters with the record at
 * k->pos peeked and due (its ts before every other candidate's). */
static inline __attribute__((always_inline)) fast_stop take_fast_with(d9_collector *c, cursor *k, uint64_t others,
                                                                       uint64_t src_ts, const bool rules_on,
                                                                       const bool ticks_are_ns, const bool steady) {
    size_t avail = c->out.cap < c->room ? c->out.cap : (size_t)c->room;
    if (!c->stream_open || c->out.failed || avail < HOOK_EVENT_MAX + c->out.len) return FAST_GENERAL;
    d9_thread *t = k->t;
    uint8_t *const data = c->out.data;
    /* Past p_stop after an event: the next may not fit (emit grows or rotates) or the buffer is
     * due to be written (emit flushes at FLUSH_BYTES). */
    const uint8_t *const p_flush = data + FLUSH_BYTES;
    const uint8_t *p_stop = data + (avail - HOOK_EVENT_MAX);
    if (p_stop > p_flush - 1) p_stop = p_flush - 1;
    uint8_t *p = data + c->out.len;
    const uint64_t mask = k->mask, stream = c->stream_no;
    uint64_t lim = (k->pos & ~mask) + mask + 1; /* records in one ring, none past the wrap point */
    if (k->end < lim) lim = k->end;
    if (k->next_start < lim) lim = k->next_start;
    /* The next record is taken while ts <= bound (before every other thread's, not after the
     * next source event); none when another thread's is at 0. */
    uint64_t bound = others - 1 < src_ts ? others - 1 : src_ts;
    c->run_others_m1 = others - 1; /* for the sources' switches the run writes (run_switch) */
    if (others == 0) lim = k->pos; /* the record entered with, then none */
    uint64_t n = k->words, ts = k->next_ts, task = t->c_task;
    /* Events written: a record each, counted by the batch's counter (records taken = those of
     * the batches before, `done`, plus this batch's less `left`), and a twin's second event. */
    uint64_t done = 0, twins = 0;
    /* the record's ts less the event before it in the stream: the delta its header takes */
    uint64_t delta = ts - c->st.ts_base;
    /* The records are walked by pointer: none crosses the wrap point, so the run's records
     * are contiguous words up to r_lim (the position is the entry's plus the words walked). */
    const uint64_t *const r0 = k->base + (k->pos & mask), *const r_lim = r0 + (lim - k->pos);
    const uint64_t worker = t->c_worker;
    /* The bytes every event of this run repeats, made once per run and stored whole per event:
     * the worker's varint (one byte below 128, two up to 255) and the thread id (u32). */
    const uint64_t worker_bytes = steady || worker < 0x80 ? worker : ((worker & 0x7f) | 0x80) | (worker >> 7) << 8;
    const unsigned worker_len = steady || worker < 0x80 ? 1 : 2;
    const uint32_t tid = (uint32_t)t->tid;
    /* schemas seen written in this stream (bit per id), kept across runs: a run is often a
     * poll's two events (a server with a request a poll), each run testing them again cost */
    uint32_t ready = c->fast_ready_stream == stream ? c->fast_ready : 0;
    const uint32_t loc_prefix = c->loc_prefix_stream == stream ? c->loc_prefix : 0; /* collector_encode.c */
    fast_stop stop;
    /* Records the loop takes before its exact room and ring-end tests (records_unchecked). */
    uint64_t batch = records_unchecked(p, p_stop, r0, r_lim), left = batch;
#define SCHEMA_READY(id) \
    ((steady && (STEADY_SCHEMAS >> (id) & 1)) || __builtin_expect((ready >> (id)) & 1, 1) || \
     (c->schema_mark[id] == stream && (ready |= 1u << (id))))
    /* a location string already written in this stream (nearly always inside the prefix) */
#define LOC_READY(loc) \
    (__builtin_expect((uint32_t)(loc) - 1u < loc_prefix, 1) || ((loc) < c->loc_mark_len && c->loc_mark[loc] == stream))
    _Static_assert(D9_SCH_TASK_TERMINATE < 32 && D9_SCH_WAKE < 32 && D9_SCH_TASK_SPAWN < 32 &&
                       D9_SCH_TASK_OBJECT < 32 && D9_SCH_SPAN_ENTER < 32 && D9_SCH_SPAN_EXIT < 32,
                   "ready has a bit per hook schema");
    /* The record at pos is dispatched once, by this switch: its length is the case's constant
     * (no table read, no second test of the kind per record). A record of another kind read
     * ahead (its ts then unwrapped from whatever its first word holds) is left to cursor_peek:
     * FAST_PEEK, unless it is the one the run entered with (FAST_GENERAL: decode_record's). */
    const uint64_t *r = r0;
    for (;;) {
        switch (D9_REC_KIND(r[0])) {
        case D9_REC_POLL_BEGIN: {
            uint32_t loc = (uint32_t)r[2];
            if (!SCHEMA_READY(D9_SCH_POLL_START) || !LOC_READY(loc)) goto general;
            task = r[1];
            if (rules_on) d9_rule_check_poll_begin(t, ts);
            p = hook_event_header(p, D9_SCH_POLL_START, ts, delta);
            /* worker varint and local queue u8, in one store */
            put_le64(p, worker_bytes | (uint64_t)sat8(r[2] >> 32) << (8 * worker_len));
            p = d9_raw_varint(p + worker_len + 1, task);
            p = put_u32(p, loc);
            r += D9_REC_WORDS_POLL_BEGIN;
            break;
        }
        case D9_REC_POLL_END:
            if (!SCHEMA_READY(D9_SCH_POLL_END)) goto general;
            task = 0;
            if (rules_on) d9_rule_check_poll_end(t, ts, worker);
            p = hook_event_header(p, D9_SCH_POLL_END, ts, delta);
            put_le64(p, worker_bytes);
            p += worker_len;
            r += D9_REC_WORDS_POLL_END;
            break;
        case D9_REC_SPAWN: {
            /* with its object: two events, so room for a second one after the first */
            uint32_t loc = (uint32_t)r[2];
            if (!SCHEMA_READY(D9_SCH_TASK_SPAWN) || !LOC_READY(loc) ||
                (r[3] && (!SCHEMA_READY(D9_SCH_TASK_OBJECT) || p + HOOK_EVENT_MAX > p_stop)))
                goto general;
            p = hook_event_header(p, D9_SCH_TASK_SPAWN, ts, delta);
            p = d9_raw_varint(p, r[1]);
            p = put_u32(p, loc);
            p = d9_raw_u8(p, 1); /* instrumented */
            if (r[3]) {
                p = hook_event_header(p, D9_SCH_TASK_OBJECT, ts, 0);
                p = d9_raw_varint(p, r[1]);
                p = d9_raw_varint(p, r[3]);
                twins++;
            }
            r += D9_REC_WORDS_SPAWN;
            break;
        }
        case D9_REC_TERMINATE:
            if (!SCHEMA_READY(D9_SCH_TASK_TERMINATE)) goto general;
            p = hook_event_header(p, D9_SCH_TASK_TERMINATE, ts, delta);
            p = d9_raw_varint(p, r[1]);
            r += D9_REC_WORDS_TERMINATE;
            break;
        /* A case each, so that the schema is a constant in each. */
#define SPAN_CASE(schema)                                                                       \
            if (!SCHEMA_READY(schema) || !LOC_READY((uint32_t)r[2])) goto general;              \
            p = fast_span(p, delta, (schema), ts, worker_bytes, worker_len, r[1], (uint32_t)r[2], task, tid); \
            r += D9_REC_WORDS_SPAN
        case D9_REC_SPAN_BEGIN:
            SPAN_CASE(D9_SCH_SPAN_ENTER);
            break;
        case D9_REC_SPAN_END:
            SPAN_CASE(D9_SCH_SPAN_EXIT);
            break;
#undef SPAN_CASE
        case D9_REC_WAKE:
        case D9_REC_WAKE_READY:
            if (!SCHEMA_READY(D9_SCH_WAKE)) goto general;
            p = hook_event_header(p, D9_SCH_WAKE, ts, delta);
            p = d9_raw_varint(p, D9_REC_KIND(r[0]) == D9_REC_WAKE ? task : 0);
            p = d9_raw_varint(p, r[1]);
            p = d9_raw_u8(p, sat8(worker));
            r += D9_REC_WORDS_WAKE;
            break;
        /* A case each, so that `park` is a constant in each and no test of it runs per event. */
#define PARK_CASE(park, schema)                                                                 \
            if (!SCHEMA_READY(schema)) goto general;                                            \
            uint64_t delay = 0; /* as decode_record says why */                                 \
            if (r[2] != D9_NS_NOT_READ) {                                                       \
                if (!(park) && r[2] != D9_NS_UNKNOWN && t->c_ss_wait != D9_NS_UNKNOWN &&       \
                    r[2] >= t->c_ss_wait)                                                       \
                    delay = r[2] - t->c_ss_wait;                                                \
                t->c_ss_wait = r[2];                                                            \
            }                                                                                   \
            if (!(park) && rules_on) d9_rule_check_unpark(ts, delay, worker);                   \
            p = hook_event_header(p, (schema), ts, delta);                                   \
            put_le64(p, worker_bytes | (uint64_t)sat8(r[3]) << (8 * worker_len));              \
            p += worker_len + 1;                                                                \
            p = !(park) && r[1] == t->c_cpu.value ? cpu_time_again(t, p) : d9_cpu_varint(&t->c_cpu, p, r[1]); \
            if (!(park)) p = d9_raw_varint(p, delay);                                           \
            p = put_u32(p, tid)
        case D9_REC_PARK: {
            PARK_CASE(true, D9_SCH_WORKER_PARK);
            r += D9_REC_WORDS_PARK;
            break;
        }
        case D9_REC_UNPARK: {
            PARK_CASE(false, D9_SCH_WORKER_UNPARK);
            r += D9_REC_WORDS_PARK;
            break;
        }
        case D9_REC_UNPARK_WAKE: {
            /* two events (the unpark, then its ready wake at the same ts): both schemas written
             * and room for the second, tested before the unpark's state moves (as a spawn's) */
            if (!SCHEMA_READY(D9_SCH_WAKE) || p + HOOK_EVENT_MAX > p_stop) goto general;
            PARK_CASE(false, D9_SCH_WORKER_UNPARK);
            p = hook_event_header(p, D9_SCH_WAKE, ts, 0);
            /* waker 0 (the poller), the woken task, the worker (a u8: sat8 as a wake's) */
            p = d9_raw_varint(p, 0);
            p = d9_raw_varint(p, r[4]);
            p = d9_raw_u8(p, sat8(worker));
            twins++;
            r += D9_REC_WORDS_UNPARK_WAKE;
            break;
        }
        case D9_REC_POLL_END_PARK: {
            /* two events (the poll's end, then the park at the same ts): both schemas written and
             * room for the second, tested before the end's bytes (as an unpark's with its wake) */
            if (!SCHEMA_READY(D9_SCH_POLL_END) || !SCHEMA_READY(D9_SCH_WORKER_PARK) ||
                p + HOOK_EVENT_MAX > p_stop)
                goto general;
            task = 0;
            if (rules_on) d9_rule_check_poll_end(t, ts, worker);
            p = hook_event_header(p, D9_SCH_POLL_END, ts, delta);
            put_le64(p, worker_bytes);
            p += worker_len;
            twins++;
            delta = 0; /* the park at the same ts: the end is the stream's base now */
            PARK_CASE(true, D9_SCH_WORKER_PARK);
            r += D9_REC_WORDS_PARK; /* the general path's length of it, too */
            break;
        }
#undef PARK_CASE
        default:
            /* the run's first record is peeked (cursor_peek): decode_record takes it */
            if (r == r0) goto general;
            stop = FAST_PEEK;
            goto out;
        }
        /* each case stepped r over its record: the length is the case's constant, and the
         * general path's is d9_record_words' (no length kept per record) */
        if (__builtin_expect(--left == 0, 0)) {
            /* the batch is spent: the exact tests, then the next batch */
            delta = 0; /* ts is the last event's: the stream's base */
            if (p > p_stop) {
                stop = p >= p_flush ? FAST_FLUSH : FAST_PEEK;
                break;
            }
            /* The next record only when it is whole before lim (never a word at or past the
             * head read: the producer may be writing it); another kind goes by cursor_peek. */
            if (r >= r_lim || !hook_words[D9_REC_KIND(r[0])] || hook_words[D9_REC_KIND(r[0])] > r_lim - r) {
                stop = FAST_PEEK;
                break;
            }
            done += batch;
            left = batch = records_unchecked(p, p_stop, r, r_lim);
        }
        /* The next record's ts and its header's delta. CLOCK_MONOTONIC ticks are the time once
         * unwrapped (ticks_are_ns, a constant in each of take_fast_plain's two copies: a map
         * has a fast span only on the TSC): the tick nearest the event before (ts, the
         * stream's base now) with the record's low 56 bits, as d9_ticks_unwrap56 gives it
         * against now_ticks (both within 2^55 ns of it), and the difference is the delta: the
         * kind in the low byte falls out of the arithmetic shift. On the TSC the tick is
         * unwrapped against now_ticks and mapped (the TSC's inputs are left in c: as locals
         * they cost spills). Another kind's first word is no tick (a PAD's is 0): mapped only
         * on the monotonic clock, where that is arithmetic, and left to the switch above or to
         * the test below. */
        if (ticks_are_ns) {
            delta = (uint64_t)((int64_t)(r[0] - (ts << 8)) >> 8);
            ts += delta;
        } else {
            const uint64_t ticks = c->now_ticks + (uint64_t)((int64_t)(r[0] - (c->now_ticks << 8)) >> 8);
            const uint64_t next = hook_words[D9_REC_KIND(r[0])] ? d9_clock_map_to_ns_fast(&c->clock, ticks) : 0;
            delta = next - ts;
            ts = next;
        }
        if (__builtin_expect(ts > bound, 0)) {
            /* The sources' context switches due before this record (and every other thread's:
             * the bound is the source's time) are written here, and the run goes on
             * (run_switch); the batch's room is counted again from p after them. What this
             * needs is read from c: the loop keeps no more values in registers. */
            n = hook_words[D9_REC_KIND(r[0])];
            if (n && bound == next_src_ts(c)) {
                uint64_t base = ts - delta, src_ts_now;
                uint8_t *q;
                bool wrote = false;
                while ((src_ts_now = next_src_ts(c)) < ts && (q = run_switch(c, p, p_stop, base)) != NULL) {
                    p = q;
                    base = src_ts_now;
                    wrote = true;
                }
                if (wrote) {
                    delta = ts - base;
                    bound = c->run_others_m1 < src_ts_now ? c->run_others_m1 : src_ts_now;
                    done += batch - left;
                    left = batch = records_unchecked(p, p_stop, r, r_lim);
                    if (ts <= bound) continue;
                }
            }
            /* due after another candidate: the merge needs its length too, or cursor_peek */
            stop = n ? FAST_YIELD : FAST_PEEK;
            break;
        }
    }
    goto out;
general:
    stop = FAST_GENERAL;
    n = d9_record_words(r); /* a case's record, not taken: decode_record takes it */
out:
#undef SCHEMA_READY
#undef LOC_READY
    k->pos += (uint64_t)(r - r0);
    k->next_ts = ts; /* for FAST_GENERAL and FAST_YIELD: the record at pos */
    k->words = n;
    c->out.len = (size_t)(p - data);
    c->st.ts_base = ts - delta;
    c->fast_ready = ready;
    c->fast_ready_stream = stream;
    t->c_task = task;
    const uint64_t events = done + batch - left + twins;
    t->c_events += events;
    c->recorded_in_drain += events;
    c->out_events += events;
    return stop;
}

/* take_fast_with twice, the trigger rules' flag a constant in each: without rules, the loop has
 * no test of it at all (the choice is made once per run of a thread's records). Not inlined:
 * test_collector_instructions counts the instructions inside it per event (a call per run). */
static __attribute__((noinline)) fast_stop take_fast_plain(d9_collector *c, cursor *k, uint64_t others, uint64_t src_ts) {
    const bool tsc = __atomic_load_n(&d9_clock_use_tsc, __ATOMIC_RELAXED);
    if (steady_run(c, k->t)) {
        if (tsc) return take_fast_with(c, k, others, src_ts, false, false, true);
        return take_fast_with(c, k, others, src_ts, false, true, true);
    }
    if (tsc) return take_fast_with(c, k, others, src_ts, false, false, false);
    return take_fast_with(c, k, others, src_ts, false, true, false);
}
static __attribute__((noinline)) fast_stop take_fast_rules(d9_collector *c, cursor *k, uint64_t others,
                                                           uint64_t src_ts) {
    if (__atomic_load_n(&d9_clock_use_tsc, __ATOMIC_RELAXED)) return take_fast_with(c, k, others, src_ts, true, false, false);
    return take_fast_with(c, k, others, src_ts, true, true, false);
}

/* One thread's records while they stay before every other candidate (ties go back to the
 * merge's full comparison). False when the thread has none left in this drain. */
static bool take_run(d9_collector *c, cursor *k, uint64_t others, uint64_t src_ts) {
    for (;;) {
        fast_stop stop = __builtin_expect(d9_rule_check_on(), 0) ? take_fast_rules(c, k, others, src_ts)
                                                                 : take_fast_plain(c, k, others, src_ts);
        switch (stop) {
        case FAST_YIELD:
            return true;
        case FAST_GENERAL:
            decode_record(c, k->t, k->base + (k->pos & k->mask), k->next_ts);
            k->pos += k->words;
            break;
        case FAST_FLUSH:
            d9_col_flush_out(c);
            break;
        case FAST_PEEK:
            break;
        }
        if (!cursor_peek(c, k)) return false;
        src_ts = next_src_ts(c); /* the run may have written switches */
        if (!(k->next_ts < others && k->next_ts <= src_ts)) return true;
    }
}

/* ---------------------------------------------------------------- source events */

static void source_event_to_out(d9_collector *c, const d9_src_event *se, d9_thread *t, out_event *e) {
    memset(e, 0, sizeof *e);
    e->ts = se->ts_ns;
    uint64_t worker = t ? t->c_worker : 255;
    uint64_t cpu = se->cpu >= 0 ? (uint64_t)se->cpu : UINT64_MAX;
    switch (se->kind) {
    case D9_SRC_CPU_SAMPLE:
        e->schema = D9_SCH_CPU_SAMPLE;
        e->v[0] = worker; e->v[1] = se->tid; e->v[2] = se->sample.source; e->v[3] = cpu;
        e->v[4] = se->sample.method;
        e->s[0] = t ? t->name : NULL;
        e->payload = se->sample.frames;
        e->nframes = se->sample.nframes;
        if (se->sample.deferred_words) d9_col_switch_stack(c, t, se, e);
        break;
    case D9_SRC_SWITCH:
        e->schema = D9_SCH_SCHED_SWITCH;
        e->v[0] = se->tid; e->v[1] = worker; e->v[2] = se->sw.out; e->v[3] = se->sw.preempted; e->v[4] = cpu;
        break;
    case D9_SRC_MMAP:
        e->schema = D9_SCH_MEMORY_MAP;
        e->v[0] = se->map.start; e->v[1] = se->map.end; e->v[2] = se->map.file_offset;
        e->s[0] = se->map.path; e->s[1] = se->map.build_id;
        break;
    case D9_SRC_COVERAGE:
        e->schema = D9_SCH_COVERAGE;
        e->s[0] = se->coverage.source; e->s[1] = se->coverage.mode; e->s[2] = se->coverage.previous;
        e->v[0] = se->coverage.previous_since_ns; e->v[1] = se->coverage.one_in;
        e->v[2] = se->coverage.rate_per_s; e->v[3] = se->coverage.cost_ppm; e->v[4] = se->coverage.budget_ppm;
        break;
    default: /* D9_SRC_LOST */
        e->schema = D9_SCH_DROPPED_EVENTS;
        e->v[0] = se->lost.count; e->v[1] = se->tid; e->v[2] = worker;
        e->s[0] = se->lost.reason;
        if (d9_rule_check_on()) d9_rule_check_drops(e->ts, se->lost.count);
        atomic_fetch_add(&c->st_ring_dropped, se->lost.count);
        c->src_lost_in_out += se->lost.count; /* converted only to be emitted at once */
        break;
    }
}

void d9_col_source_event_to_out(d9_collector *c, const d9_src_event *se, out_event *e) {
    source_event_to_out(c, se, se->tid ? thread_by_tid(c, se->tid) : NULL, e);
}

bool d9_col_refresh_threads(d9_collector *c) {
    free(c->threads);
    c->threads_ns = d9_mono_ns();
    c->threads = d9_threads_snapshot(&c->thread_count);
    if (!c->threads) {
        c->thread_count = 0;
        return false;
    }
    if (c->cursor_cap < c->thread_count) {
        cursor *k = realloc(c->cursors, c->thread_count * sizeof *k);
        if (!k) return false;
        c->cursors = k;
        c->cursor_cap = c->thread_count;
    }
    return true;
}

double d9_col_merge(d9_collector *c) {
    double fullest = 0;
    size_t live = 0;
    uint64_t now_ns = d9_mono_ns();
    c->merge_heads_ns = now_ns;
    for (size_t i = 0; i < c->thread_count; i++) {
        d9_thread *t = c->threads[i];
        cursor *k = &c->cursors[live];
        k->t = t;
        k->pos = atomic_load_explicit(&t->tail, memory_order_relaxed);
        k->end = atomic_load_explicit(&t->head_pub, memory_order_acquire);
        t->c_end = k->end;
        cursor_set_ring(k, t->c_ring);
        d9_ring *newest = d9_ring_for(k->ring, k->end);
        double fill = newest->words ? (double)(k->end - k->pos) / (double)(newest->mask + 1) : 0;
        if (fill > fullest) fullest = fill;
        d9_thread_note_fill(t, fill, newest->mask + 1, now_ns);
        if (cursor_peek(c, k)) live++;
    }

    d9_src_batch_reset(&c->batch);
    for (size_t i = 0; i < c->held.count; i++) d9_src_batch_add(&c->batch, &c->held.events[i]);
    d9_src_batch_reset(&c->held);
    for (size_t i = 0; i < c->source_count; i++) c->sources[i]->collect(c->sources[i], &c->batch);
    d9_src_batch_sort(&c->batch);
    c->next_src = (size_t)-1;
    src_advance(c);

    /* Merge: always take the earliest pending record among the threads and the sources. The
     * earliest thread then goes on alone while it stays before every other candidate (ties go
     * back to the full comparison, which prefers the lower index and then the thread). */
    while (live > 0 || c->next_src < c->batch.count) {
        size_t best = 0;
        uint64_t others = UINT64_MAX; /* the earliest of the other threads */
        for (size_t i = 1; i < live; i++) {
            if (c->cursors[i].next_ts < c->cursors[best].next_ts) {
                others = c->cursors[best].next_ts;
                best = i;
            } else if (c->cursors[i].next_ts < others) {
                others = c->cursors[i].next_ts;
            }
        }
        uint64_t src_ts = next_src_ts(c);
        if (c->next_src < c->batch.count && (live == 0 || src_ts < c->cursors[best].next_ts)) {
            const d9_src_event *se = &c->batch.events[c->next_src];
            src_advance(c);
            d9_thread *t = se->tid ? thread_by_tid(c, se->tid) : NULL;
            if (of_newer_thread(c, se, t) && d9_src_batch_add(&c->held, se)) continue;
            if (se->kind == D9_SRC_SWITCH && fast_switch(c, se, t)) continue;
            out_event e;
            source_event_to_out(c, se, t, &e);
            emit(c, &e);
            continue;
        }
        if (!take_run(c, &c->cursors[best], others, src_ts)) c->cursors[best] = c->cursors[--live];
    }
    return fullest;
}
