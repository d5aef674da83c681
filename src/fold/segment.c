/* A segment into the fold's tables (segment.h). Polls and parks are paired by the model's
 * rule (model/pairing.h), per worker in stream order, as `dial9 analyze` pairs them, in a
 * slot per worker that keeps only the fields the rows take (worker_slot); poll
 * durations go into analyze's log-bucket histogram (analysis/hist.h) per spawn location,
 * worker and hour, handed as poll_hist's merged buckets (hist_rows.h) to the output, which
 * sums them with the other segments' of the hour (hist_merge.h); each poll's
 * attribution columns come from the model's (poll_attribution.h), after the segment's end. */
#include "fold/segment.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/hist.h"
#include "common/json_writer.h"
#include "common/u64_map.h"
#include "fold/hist_rows.h"
#include "fold/poll_attribution.h"
#include "fold/row_batch.h"
#include "format/decoder.h"
#include "format/schemas.h"
#include "model/offcpu_cause.h"
#include "model/pairing.h"
#include "model/schedstat_source.h"
#include "model/symtab.h"
#include "model/thread_worker.h"

/* The polls table's attribution columns are the model's parts, on_cpu .. off_cpu_uncaptured. */
#define FOLD_PARTS D9M_PARTS

#define NS_PER_HOUR (3600 * 1000000000ll)

typedef struct hist_group {
    uint32_t loc;
    uint64_t worker;
    int64_t hour;
    int64_t first_wall; /* wall time of its first poll: the row's wall_time */
    int64_t hour_lo, hour_hi; /* the walls of its hour (wall / NS_PER_HOUR): two compares, no division */
    d9a_hist h;
} hist_group;

/* A poll waiting for its row: polls end in another order than they start (workers run side
 * by side), and the rows go out in order of their start, so wall_time's deltas are the gaps
 * between starts, never a jump back (DELTA_BINARY_PACKED packs a miniblock of 32 deltas at
 * the width of its widest). */
typedef struct pending_poll {
    int64_t wall;
    uint64_t worker, task, start, dur;
    uint32_t loc;
    uint32_t pair; /* its worker's index in seg.slots */
    d9m_poll_cpu cpu_event; /* what its PollCpuEvent said, if it had one */
    uint64_t cpu_ns;        /* its exact CPU time, when it said so */
} pending_poll;

/* A worker's open poll and park, paired by the model's rule (model/pairing.h: a start opens
 * its kind, a second start drops the open one, an end closes the open one or pairs with
 * nothing) over the fields the fold keeps of a start: 48 bytes a worker, read and written
 * in place, where the model's state copies a whole mark (80 bytes) per start. And its latest
 * closed poll, for the PollCpuEvent written just after its end. */
typedef struct worker_slot {
    uint64_t poll_ts, poll_task, park_ts;
    uint64_t latest_start; /* the latest closed poll's start, when latest_valid */
    uint32_t poll_loc;
    bool in_poll, parked, latest_valid;
} worker_slot;

typedef struct stack_entry {
    uint64_t id;        /* hash of its addresses: the same stack has the same id in every segment */
    int64_t first_wall; /* its first sample */
    uint64_t *addrs;    /* leaf first */
    uint32_t n;
} stack_entry;

/* The writer of a table's last row in this segment, and its hour: the next row of the same
 * hour goes to the same writer, whose last row already holds this segment's identity. */
typedef struct row_cache {
    pq_writer *w;
    int64_t first_wall, last_wall; /* the walls of its partition hour: two compares, not a division */
    bool valid, skip;
} row_cache;

typedef struct seg {
    d9f_output *out;
    row_cache last[D9F_TABLES];
    d9f_row_batch batch[D9F_TABLES]; /* sched, wakes, samples: rows gathered column by column */
    const char *seg_id, *path;
    char *service, *instance, *boot, *run, *metadata_json;
    d9m_schedstat ss;
    bool have_clock;
    uint64_t clock_mono, clock_real;
    /* spawn locations: interned per segment; pool ids cached per stream */
    char **locs;
    uint32_t *loc_lens;
    uint32_t nlocs;
    d9_u64_map loc_by_hash, loc_by_pool;
    /* the latest pool ids' locations, by the id's low bits, before loc_by_pool: a runtime's
     * few spawn locations are found without hashing (pool id + 1, 0: empty) */
    struct {
        uint64_t id1;
        uint32_t loc;
    } loc_recent[64];
    uint32_t stream;
    bool stream_known;
    /* workers' pairing: small worker ids (all of a usual runtime's) by a table, no hashing */
    uint32_t small_worker[64]; /* index in slots + 1, 0: not seen yet */
    d9_u64_map worker_index;
    worker_slot *slots;
    size_t nslots;
    /* polls not yet written, in order of their start: all of the segment's, as their
     * attribution needs the switch records and symbols that follow them */
    pending_poll *pending;
    size_t npending, pending_cap;
    d9f_attr attr;
    d9m_thread_workers thread_workers; /* whose worker a switch record or sample is (the model's rule) */
    uint8_t *stack_cause; /* per stack: its cause + 1, 0 = not read yet */
    /* poll_hist */
    d9_u64_map group_index;
    uint32_t group_recent[256]; /* the latest groups (index + 1; 0: none) by location and worker, before group_index */
    hist_group *groups;
    size_t ngroups;
    /* samples and their stacks; the trace's symbols name the frames */
    d9_u64_map stack_index;
    stack_entry *stacks;
    size_t nstacks;
    d9m_symtab symtab;
    /* segments' summary */
    /* first_ts: UINT64_MAX until a timed event (a min and a max per event, no flag), 0 after
     * the pass when there was none */
    uint64_t events, polls, first_ts, last_ts, dropped, unmatched_starts, unmatched_ends;
    bool have_ts; /* after the pass */
    /* the first event whose pooled spawn location or stack was not defined when it was read */
    bool have_unresolved;
    uint64_t first_unresolved;
    FILE *sources, *drops;
    char *sources_buf, *drops_buf;
    size_t sources_len, drops_len;
    d9_json sources_j, drops_j;
    char *err;
    size_t errlen;
} seg;

static int64_t wall_of(const seg *s, uint64_t ts) {
    return (int64_t)s->clock_real + (int64_t)(ts - s->clock_mono);
}

/* the output's partition hour of a row at wall */
static int64_t partition_hour(int64_t wall) { return (wall >= 0 ? wall : 0) / NS_PER_HOUR; }

/* The cache of a table's writer w for the rows of partition hour `hour`. */
static row_cache row_cache_of(pq_writer *w, int64_t hour, bool skip) {
    int64_t first = hour * NS_PER_HOUR;
    int64_t last = first > INT64_MAX - (NS_PER_HOUR - 1) ? INT64_MAX : first + (NS_PER_HOUR - 1);
    return (row_cache){.w = w, .first_wall = hour == 0 ? INT64_MIN : first, .last_wall = last, .valid = true,
                       .skip = skip};
}

/* a row at wall goes where the cache's rows go (its partition hour is theirs) */
static inline bool same_hour(const row_cache *c, int64_t wall) {
    return c->valid && wall >= c->first_wall && wall <= c->last_wall;
}

static int oom(seg *s) {
    snprintf(s->err, s->errlen, "out of memory");
    return -1;
}

static char *dup_str(d9_dec_str v) {
    char *p = malloc(v.len + 1);
    if (p) {
        memcpy(p, v.ptr, v.len);
        p[v.len] = 0;
    }
    return p;
}

/* ---- the prelude: metadata and clock ---- */

static bool keep_prelude(const d9_dec_schema *sc, void *ctx) {
    (void)ctx;
    return sc->bind.role == D9_SCH_SEGMENT_METADATA || sc->bind.role == D9_SCH_CLOCK_SYNC;
}

static int take_metadata(seg *s, const d9_value *v) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return oom(s);
    d9_json j;
    d9_json_init(&j, f, false);
    d9_json_object_begin(&j);
    for (uint32_t i = 0; i < v->map.count; i++) {
        const d9_dec_kv *kv = &v->map.items[i];
        d9_json_key_n(&j, kv->key.ptr, kv->key.len);
        d9_json_string_n(&j, kv->value.ptr, kv->value.len);
        char **slot = NULL;
#define IS(k) (kv->key.len == sizeof k - 1 && memcmp(kv->key.ptr, k, sizeof k - 1) == 0)
        if (IS("service")) slot = &s->service;
        else if (IS("host")) slot = &s->instance;
        else if (IS("boot_id")) slot = &s->boot;
        else if (IS("run_id")) slot = &s->run;
#undef IS
        if (slot && !*slot && !(*slot = dup_str(kv->value))) {
            fclose(f);
            free(buf);
            return oom(s);
        }
        d9m_coverage_metadata(&s->attr.cov, kv->key.ptr, kv->key.len, kv->value.ptr, kv->value.len);
        int ss = d9m_schedstat_from_metadata(kv->key.ptr, kv->key.len, kv->value.ptr, kv->value.len);
        if (ss >= 0) s->ss = (d9m_schedstat)ss;
    }
    d9_json_object_end(&j);
    if (fclose(f) != 0) {
        free(buf);
        return oom(s);
    }
    s->metadata_json = buf;
    return 0;
}

/* Why the prelude found no clock sync: the decoder stopped first (the damage, error or cut it
 * names, with its offset, as `dial9 analyze` says it), the file is empty, or the segment has
 * none. */
static void no_clock_why(seg *s, const d9_decoder *d) {
    static const char unknown[] = "the wall-clock time of its events is unknown";
    d9_dec_status st = d9_dec_state(d);
    if (st == D9_DEC_END && d9_dec_get_stats(d)->input_bytes == 0)
        snprintf(s->err, s->errlen, "empty file: not a dial9 trace (no stream header)");
    else if (st == D9_DEC_ERROR || st == D9_DEC_DAMAGED) /* a failure whatever follows */
        snprintf(s->err, s->errlen, "%s", d9_dec_message(d));
    else if (st == D9_DEC_TRUNCATED) /* a torn tail is no failure, but nothing before it has a time */
        snprintf(s->err, s->errlen, "%s; no ClockSyncEvent before the cut: %s", d9_dec_message(d), unknown);
    else
        snprintf(s->err, s->errlen, "no ClockSyncEvent: %s", unknown);
}

static int read_prelude(seg *s) {
    char err[256];
    d9_decoder *d = d9_dec_open_path(s->path, NULL, err, sizeof err);
    if (!d) {
        snprintf(s->err, s->errlen, "%s", err);
        return -1;
    }
    d9_dec_set_scan(d, &(d9_dec_scan){.keep = keep_prelude, .skip_plans = true});
    d9_event ev;
    int rc = 0;
    while ((!s->metadata_json || !s->have_clock) && d9_dec_next(d, &ev) > 0) {
        const d9_dec_binding *b = &ev.schema->bind;
        if (b->role == D9_SCH_SEGMENT_METADATA && !s->metadata_json && b->field[D9_KF_ENTRIES] >= 0) {
            const d9_value *v = &ev.values[b->field[D9_KF_ENTRIES]];
            if (v->present && v->type == D9_FT_STRING_MAP && (rc = take_metadata(s, v)) != 0) break;
        } else if (b->role == D9_SCH_CLOCK_SYNC && !s->have_clock && ev.ts_ns != 0 &&
                   b->field[D9_KF_REALTIME_NS] >= 0 &&
                   d9_value_uint(&ev.values[b->field[D9_KF_REALTIME_NS]], &s->clock_real)) {
            s->have_clock = true; /* the first one, as analyze and serve take it */
            s->clock_mono = ev.ts_ns;
        }
    }
    if (rc == 0 && !s->have_clock) no_clock_why(s, d);
    d9_dec_close(d);
    if (rc) return rc;
    if (!s->have_clock) return -1;
    static const char none[] = "";
    if (!s->service && !(s->service = strdup("unknown"))) return oom(s);
    if (!s->instance && !(s->instance = strdup(none))) return oom(s);
    if (!s->boot && !(s->boot = strdup(none))) return oom(s);
    if (!s->run && !(s->run = strdup(none))) return oom(s);
    if (!s->metadata_json && !(s->metadata_json = strdup("{}"))) return oom(s);
    return 0;
}

/* ---- rows ---- */

/* The writer for a row at wall, with the identity columns put; NULL with *skip when the
 * partition holds this segment already, NULL on an error. Within an hour the output's answer
 * is the same for every row of the segment: asked once, and the identity strings are put as
 * "the previous row's again" (no hashing, no compare). */
static pq_writer *row(seg *s, d9f_table t, int64_t wall, bool *skip) {
    row_cache *c = &s->last[t];
    if (same_hour(c, wall)) {
        *skip = c->skip;
        if (!c->w) return NULL;
        pq_put_same(c->w, D9F_COL_INSTANCE);
        pq_put_same(c->w, D9F_COL_BOOT);
        pq_put_same(c->w, D9F_COL_RUN);
        pq_put_same(c->w, D9F_COL_SEGMENT);
        pq_put_i64(c->w, D9F_COL_WALL_TIME, wall);
        return c->w;
    }
    pq_writer *w = d9f_output_rows(s->out, t, s->service, wall, s->seg_id, skip, s->err, s->errlen);
    if (!w && !*skip) return NULL;
    *c = row_cache_of(w, partition_hour(wall), *skip);
    if (!w) return NULL;
    pq_put_str(w, D9F_COL_INSTANCE, s->instance, strlen(s->instance));
    pq_put_str(w, D9F_COL_BOOT, s->boot, strlen(s->boot));
    pq_put_str(w, D9F_COL_RUN, s->run, strlen(s->run));
    pq_put_str(w, D9F_COL_SEGMENT, s->seg_id, strlen(s->seg_id));
    pq_put_i64(w, D9F_COL_WALL_TIME, wall);
    return w;
}

static int end_row(seg *s, pq_writer *w) {
    if (pq_end_row(w) == 0) return 0;
    char err[256];
    pq_writer_close(w, err, sizeof err); /* never: a row of ours missing a column; says why */
    snprintf(s->err, s->errlen, "%s", err);
    return -1;
}

static uint32_t intern_loc(seg *s, const char *p, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 0x100000001b3ull;
    for (;; h++) { /* collisions: the next key */
        uint64_t *i = d9_u64_map_get(&s->loc_by_hash, h);
        if (!i) break;
        if (s->loc_lens[*i] == n && memcmp(s->locs[*i], p, n) == 0) return (uint32_t)*i;
    }
    if (n > UINT32_MAX) return UINT32_MAX;
    char **v = realloc(s->locs, (s->nlocs + 1) * sizeof *v);
    if (!v) return UINT32_MAX;
    s->locs = v;
    uint32_t *lens = realloc(s->loc_lens, (s->nlocs + 1) * sizeof *lens);
    if (!lens) return UINT32_MAX;
    s->loc_lens = lens;
    lens[s->nlocs] = (uint32_t)n;
    if (!(v[s->nlocs] = malloc(n + 1))) return UINT32_MAX; /* all n bytes, a NUL among them too */
    memcpy(v[s->nlocs], p, n);
    v[s->nlocs][n] = 0;
    if (d9_u64_map_put(&s->loc_by_hash, h, s->nlocs) != 0) return UINT32_MAX;
    return s->nlocs++;
}

static void note_unresolved(seg *s, const d9_event *ev) {
    if (s->have_unresolved) return;
    s->have_unresolved = true;
    s->first_unresolved = ev->offset;
}

/* analyze's rule (analysis/ingest.c): "<unknown>" without a spawn location, "<unresolved>"
 * for a pool id that was never defined. */
static uint32_t spawn_loc_slow(seg *s, const d9_event *ev, d9_decoder *d);

/* The usual case inline: a pooled location of the stream seen before (a call and its
 * register saves were most of a cached location's cost). */
static inline uint32_t spawn_loc(seg *s, const d9_event *ev, d9_decoder *d) {
    int idx = ev->schema->bind.field[D9_KF_SPAWN_LOC];
    if (__builtin_expect(idx >= 0, 1)) {
        const d9_value *v = &ev->values[idx];
        if (__builtin_expect(v->type == D9_FT_POOLED_STRING && v->present, 1) &&
            s->loc_recent[v->pool_id & 63].id1 == (uint64_t)v->pool_id + 1)
            return s->loc_recent[v->pool_id & 63].loc;
    }
    return spawn_loc_slow(s, ev, d);
}

static __attribute__((noinline)) uint32_t spawn_loc_slow(seg *s, const d9_event *ev, d9_decoder *d) {
    int idx = ev->schema->bind.field[D9_KF_SPAWN_LOC];
    if (idx < 0 || !ev->values[idx].present) return intern_loc(s, "<unknown>", 9);
    const d9_value *v = &ev->values[idx];
    if (v->type == D9_FT_POOLED_STRING) {
        uint32_t slot = v->pool_id & 63;
        if (s->loc_recent[slot].id1 == (uint64_t)v->pool_id + 1) return s->loc_recent[slot].loc;
        uint64_t *c = d9_u64_map_get(&s->loc_by_pool, v->pool_id);
        if (c) {
            s->loc_recent[slot].id1 = (uint64_t)v->pool_id + 1;
            s->loc_recent[slot].loc = (uint32_t)*c;
            return (uint32_t)*c;
        }
        d9_dec_str str = v->str;
        if (!v->resolved && !d9_dec_pool_string(d, v->pool_id, &str)) {
            note_unresolved(s, ev);
            return intern_loc(s, "<unresolved>", 12);
        }
        uint32_t id = intern_loc(s, str.ptr, str.len);
        if (id != UINT32_MAX && d9_u64_map_put(&s->loc_by_pool, v->pool_id, id) != 0) return UINT32_MAX;
        return id;
    }
    d9_dec_str str;
    if (!d9_value_str(v, &str)) return intern_loc(s, "<unknown>", 9);
    return intern_loc(s, str.ptr, str.len);
}

/* A worker's slot: a small worker seen before inline (most marks), the rest in slot_of_slow
 * (its realloc path made every call save and restore registers). */
static worker_slot *slot_of_slow(seg *s, uint64_t worker);

static inline worker_slot *slot_of(seg *s, uint64_t worker) {
    if (worker < sizeof s->small_worker / sizeof *s->small_worker && s->small_worker[worker])
        return &s->slots[s->small_worker[worker] - 1];
    return slot_of_slow(s, worker);
}

static __attribute__((noinline)) worker_slot *slot_of_slow(seg *s, uint64_t worker) {
    bool small = worker < sizeof s->small_worker / sizeof *s->small_worker;
    uint64_t *i = small ? NULL : d9_u64_map_get(&s->worker_index, worker);
    if (i) return &s->slots[*i];
    if (s->nslots >= UINT32_MAX - 1) return NULL;
    worker_slot *p = realloc(s->slots, (s->nslots + 1) * sizeof *p);
    if (!p) return NULL;
    s->slots = p;
    if (small) s->small_worker[worker] = (uint32_t)s->nslots + 1;
    else if (d9_u64_map_put(&s->worker_index, worker, s->nslots) != 0) return NULL;
    p[s->nslots] = (worker_slot){0};
    return &p[s->nslots++];
}

/* the walls w with w / NS_PER_HOUR == hour (C's division: hour 0 holds an hour either side) */
static void hour_walls(int64_t hour, int64_t *lo, int64_t *hi) {
    const int64_t ns = NS_PER_HOUR;
    if (hour > 0) {
        *lo = hour * ns;
        *hi = hour >= INT64_MAX / ns ? INT64_MAX : *lo + (ns - 1);
    } else if (hour < 0) {
        *hi = hour * ns;
        *lo = hour <= INT64_MIN / ns ? INT64_MIN : *hi - (ns - 1);
    } else {
        *lo = -(ns - 1);
        *hi = ns - 1;
    }
}

static hist_group *group_of_slow(seg *s, uint32_t loc, uint64_t worker, int64_t wall, uint32_t slot);

/* poll_hist's group of a poll: the latest one of its location and worker when the poll is in
 * its hour (most polls), else by the map */
static inline hist_group *group_of(seg *s, uint32_t loc, uint64_t worker, int64_t wall) {
    uint32_t slot = (uint32_t)((loc * 8 + worker) & 255);
    uint32_t recent = s->group_recent[slot];
    if (recent) {
        hist_group *g = &s->groups[recent - 1];
        if (g->loc == loc && g->worker == worker && wall >= g->hour_lo && wall <= g->hour_hi) return g;
    }
    return group_of_slow(s, loc, worker, wall, slot);
}

static __attribute__((noinline)) hist_group *group_of_slow(seg *s, uint32_t loc, uint64_t worker, int64_t wall,
                                                           uint32_t slot) {
    int64_t hour = wall / NS_PER_HOUR;
    int64_t first_hour = wall_of(s, s->first_ts) / NS_PER_HOUR;
    uint64_t rel = (uint64_t)(hour - first_hour) & 0xffff;
    uint64_t key = (uint64_t)loc << 40 | (worker & 0xffffff) << 16 | rel;
    uint64_t *i = d9_u64_map_get(&s->group_index, key);
    if (i && s->groups[*i].loc == loc && s->groups[*i].worker == worker && s->groups[*i].hour == hour) {
        s->group_recent[slot] = (uint32_t)*i + 1;
        return &s->groups[*i];
    }
    if (i) return NULL; /* more than 2^24 workers or a segment over 7 years: refused */
    if (s->ngroups >= UINT32_MAX - 1) return NULL;
    hist_group *g = realloc(s->groups, (s->ngroups + 1) * sizeof *g);
    if (!g) return NULL;
    s->groups = g;
    if (d9_u64_map_put(&s->group_index, key, s->ngroups) != 0) return NULL;
    g[s->ngroups] = (hist_group){.loc = loc, .worker = worker, .hour = hour, .first_wall = wall};
    hour_walls(hour, &g[s->ngroups].hour_lo, &g[s->ngroups].hour_hi);
    s->group_recent[slot] = (uint32_t)s->ngroups + 1;
    return &g[s->ngroups++];
}

/* One poll's row by row (the first of an hour's rows: its identity values are put there). */
static int put_poll_row(seg *s, pq_writer *w, const pending_poll *p, const d9m_parts *parts) {
    pq_put_i64(w, D9F_POLLS_WORKER, (int64_t)p->worker);
    pq_put_i64(w, D9F_POLLS_TASK, (int64_t)p->task);
    pq_put_str(w, D9F_POLLS_SPAWN_LOC, s->locs[p->loc], s->loc_lens[p->loc]);
    pq_put_i64(w, D9F_POLLS_DURATION, (int64_t)p->dur);
    for (int k = 0; k < FOLD_PARTS; k++) pq_put_i64(w, D9F_POLLS_ON_CPU + k, (int64_t)parts->ns[k]);
    return end_row(s, w);
}

/* The polls' columns of one batch of rows (poll_rows_batch), filled column by column. */
enum { POLL_BATCH = 4096 };
typedef struct poll_columns {
    int64_t wall[POLL_BATCH], worker[POLL_BATCH], task[POLL_BATCH], dur[POLL_BATCH];
    int64_t part[FOLD_PARTS][POLL_BATCH];
    uint32_t loc[POLL_BATCH];
} poll_columns;

/* Pending polls [i, i + n) of one hour into w, whose last row is this segment's: the writer
 * takes each column in one call. */
static int put_poll_batch(seg *s, pq_writer *w, size_t i, uint32_t n, d9f_attr_from *from, poll_columns *pc) {
    for (uint32_t r = 0; r < n; r++) {
        const pending_poll *p = &s->pending[i + r];
        pc->wall[r] = p->wall;
        pc->worker[r] = (int64_t)p->worker;
        pc->task[r] = (int64_t)p->task;
        pc->dur[r] = (int64_t)p->dur;
        pc->loc[r] = p->loc;
        d9m_parts parts;
        d9f_attr_poll(&s->attr, p->worker, p->start, p->start + p->dur, p->cpu_event, p->cpu_ns,
                      &from[p->pair], &parts);
#pragma GCC unroll 16 /* a load and a store each (a loop: ~6 per part, ~40 a poll more) */
        for (int k = 0; k < FOLD_PARTS; k++) pc->part[k][r] = (int64_t)parts.ns[k];
    }
    pq_begin_rows(w, n);
    for (int col = D9F_COL_INSTANCE; col <= D9F_COL_SEGMENT; col++) pq_put_same_n(w, col);
    pq_put_i64s(w, D9F_COL_WALL_TIME, pc->wall, NULL);
    pq_put_i64s(w, D9F_POLLS_WORKER, pc->worker, NULL);
    pq_put_i64s(w, D9F_POLLS_TASK, pc->task, NULL);
    pq_put_str_ids(w, D9F_POLLS_SPAWN_LOC, pc->loc, NULL, (const char *const *)s->locs, s->loc_lens, s->nlocs);
    pq_put_i64s(w, D9F_POLLS_DURATION, pc->dur, NULL);
    for (int k = 0; k < FOLD_PARTS; k++) pq_put_i64s(w, D9F_POLLS_ON_CPU + k, pc->part[k], NULL);
    if (pq_end_rows(w) == 0) return 0;
    char err[256];
    pq_writer_close(w, err, sizeof err); /* never: a batch of ours missing a column; says why */
    snprintf(s->err, s->errlen, "%s", err);
    return -1;
}

/* The segment's polls, in order of their start: each hour's first row by row() (which puts
 * the identity values), the rest in batches of columns. */
static int put_poll_rows(seg *s) {
    /* per worker, where its previous poll's search for off-CPU intervals ended */
    d9f_attr_from *from = malloc((s->nslots ? s->nslots : 1) * sizeof *from);
    poll_columns *pc = malloc(sizeof *pc);
    if (!from || !pc) {
        free(from);
        free(pc);
        return oom(s);
    }
    for (size_t k = 0; k < s->nslots; k++) from[k] = D9F_ATTR_FROM_START;
    int rc = 0;
    size_t i = 0;
    while (rc == 0 && i < s->npending) {
        const pending_poll *p = &s->pending[i];
        row_cache *c = &s->last[D9F_POLLS];
        if (!same_hour(c, p->wall)) {
            bool skip;
            pq_writer *w = row(s, D9F_POLLS, p->wall, &skip);
            if (w) {
                d9m_parts parts;
                d9f_attr_poll(&s->attr, p->worker, p->start, p->start + p->dur, p->cpu_event, p->cpu_ns,
                      &from[p->pair], &parts);
                rc = put_poll_row(s, w, p, &parts);
            } else if (!skip) {
                rc = -1;
            }
            i++;
            continue;
        }
        size_t j = i + 1;
        while (j < s->npending && j - i < POLL_BATCH && same_hour(c, s->pending[j].wall)) j++;
        if (c->skip) { /* the partition holds this segment already */
            i = j;
            continue;
        }
        uint32_t n = (uint32_t)(j - i), room = pq_rows_room(c->w);
        if (n > room) n = room;
        rc = put_poll_batch(s, c->w, i, n, from, pc);
        i += n;
    }
    free(from);
    free(pc);
    s->npending = 0;
    return rc;
}

/* The poll w held, closed at end_ts by its worker's PollEndEvent: poll_hist and a pending row.
 * Inline in the run's loop, as the handlers: its call was ~19 instructions a poll. */
static inline __attribute__((always_inline)) int on_poll(seg *s, uint64_t worker, worker_slot *w, uint64_t end_ts) {
    uint64_t start = w->poll_ts;
    uint64_t dur = end_ts > start ? end_ts - start : 0;
    int64_t wall = wall_of(s, start);
    s->polls++;
    hist_group *g = group_of(s, w->poll_loc, worker, wall);
    if (!g) {
        snprintf(s->err, s->errlen, "out of memory (or too many workers) for poll_hist");
        return -1;
    }
    d9a_hist_add(&g->h, dur);
    if (g->h.oom) return oom(s);
    if (s->npending == s->pending_cap) {
        size_t c = s->pending_cap ? s->pending_cap * 2 : 4096;
        pending_poll *p = realloc(s->pending, c * sizeof *p);
        if (!p) return oom(s);
        s->pending = p;
        s->pending_cap = c;
    }
    /* into place from the end: each worker's polls come in order, so a poll moves back only
     * past the later starts of other workers' polls that ended first (a few) */
    size_t i = s->npending;
    while (i > 0 && s->pending[i - 1].wall > wall) i--;
    if (i < s->npending) memmove(&s->pending[i + 1], &s->pending[i], (s->npending - i) * sizeof *s->pending);
    s->pending[i] = (pending_poll){.wall = wall, .worker = worker, .task = w->poll_task, .start = start,
                                   .dur = dur, .loc = w->poll_loc, .pair = (uint32_t)(w - s->slots)};
    s->npending++;
    w->latest_start = start;
    w->latest_valid = true;
    return 0;
}

/* A PollCpuEvent: written just after its poll's end on the same thread, so it is its worker's
 * latest closed poll's, once (as analyze's ingest reads it; also when the next poll began at
 * the same time). That poll is among the last pending ones. */
static int on_poll_cpu(seg *s, const d9_event *ev) {
    const int16_t *f = ev->schema->bind.field;
    uint64_t worker = d9m_uint_or(ev, f[D9_KF_WORKER_ID], D9_WORKER_NONE);
    if (worker == D9_WORKER_NONE) return 0;
    worker_slot *w = slot_of(s, worker);
    if (!w) return oom(s);
    uint32_t pair = (uint32_t)(w - s->slots);
    if (!w->latest_valid) return 0;
    w->latest_valid = false;
    bool exact = d9m_uint_or(ev, f[D9_KF_EXACT], 0) != 0;
    for (size_t i = s->npending; i-- > 0;) {
        pending_poll *p = &s->pending[i];
        if (p->pair != pair || p->start != w->latest_start) continue;
        /* "not exact" too: it tells the model's rule this poll had a switch (poll_attribution.h) */
        p->cpu_event = exact ? D9M_POLL_CPU_EXACT : D9M_POLL_CPU_NOT_EXACT;
        p->cpu_ns = exact ? d9m_uint_or(ev, f[D9_KF_CPU_TIME_NS], 0) : 0;
        break;
    }
    return 0;
}

static int flush_batch(seg *s, d9f_table t) {
    const char *identity[4] = {s->instance, s->boot, s->run, s->seg_id};
    return d9f_batch_flush(&s->batch[t], identity, s->err, s->errlen);
}

/* The batch a row of table t at wall goes into, and the row's index in it (*r); NULL when the
 * partition holds this segment already (*rc 0) or on an error (*rc -1). As row(): the output
 * is asked once per hour; a new hour's writer first gets the rows gathered for the last. */
static d9f_row_batch *batch_row_slow(seg *s, d9f_table t, int64_t wall, int64_t key, uint32_t *r, int *rc);

/* The usual row inline: the same hour's writer, a batch begun and not full; a new hour, a
 * first row, a full batch in batch_row_slow. key: the row's value of the batch's order_col. */
static inline d9f_row_batch *batch_row(seg *s, d9f_table t, int64_t wall, int64_t key, uint32_t *r, int *rc) {
    const row_cache *c = &s->last[t];
    d9f_row_batch *b = &s->batch[t];
    if (!c->skip && b->n != 0 && !d9f_batch_full(b) && same_hour(c, wall)) {
        *rc = 0;
        *r = d9f_batch_next(b, key);
        b->v[D9F_COL_WALL_TIME][*r] = wall;
        return b;
    }
    return batch_row_slow(s, t, wall, key, r, rc);
}

static __attribute__((noinline)) d9f_row_batch *batch_row_slow(seg *s, d9f_table t, int64_t wall, int64_t key,
                                                               uint32_t *r, int *rc) {
    row_cache *c = &s->last[t];
    d9f_row_batch *b = &s->batch[t];
    *rc = 0;
    if (!same_hour(c, wall)) {
        if (flush_batch(s, t) != 0) {
            *rc = -1;
            return NULL;
        }
        bool skip;
        pq_writer *w = d9f_output_rows(s->out, t, s->service, wall, s->seg_id, &skip, s->err, s->errlen);
        if (!w && !skip) {
            *rc = -1;
            return NULL;
        }
        *c = row_cache_of(w, partition_hour(wall), skip);
        b->fresh = true;
    }
    if (c->skip) return NULL;
    if (d9f_batch_full(b) && flush_batch(s, t) != 0) {
        *rc = -1;
        return NULL;
    }
    *r = d9f_batch_row(b, c->w, key);
    b->v[D9F_COL_WALL_TIME][*r] = wall;
    return b;
}

static const char *const k_sched_kinds[] = {"park", "unpark"};
static const uint32_t k_sched_kind_lens[] = {4, 6};
static const char *const k_sample_sources[] = {"cpu", "offcpu"};
static const uint32_t k_sample_source_lens[] = {3, 6};

/* A park's or unpark's row of sched (the values the model's mark reader takes,
 * model/pairing.h: d9m_mark_read). */
typedef struct sched_fields {
    uint64_t ts, worker, tid, cpu_ns, parked_ns, delay_ns;
    bool unpark, closed, delay; /* closed: an unpark that closed its worker's park */
} sched_fields;

static inline __attribute__((always_inline)) int sched_row(seg *s, const sched_fields *k) {
    uint32_t r;
    int rc;
    d9f_row_batch *b = batch_row(s, D9F_SCHED, wall_of(s, k->ts), (int64_t)k->worker, &r, &rc); /* its worker's stripe */
    if (!b) return rc;
    b->v[D9F_SCHED_KIND][r] = k->unpark;
    b->v[D9F_SCHED_TID][r] = (int64_t)k->tid;
    b->present[D9F_SCHED_TID][r] = k->tid != 0;
    b->v[D9F_SCHED_PARKED][r] = (int64_t)k->parked_ns;
    b->present[D9F_SCHED_PARKED][r] = k->closed;
    b->v[D9F_SCHED_DELAY][r] = (int64_t)k->delay_ns;
    b->present[D9F_SCHED_DELAY][r] = k->delay;
    b->v[D9F_SCHED_CPU_TIME][r] = (int64_t)k->cpu_ns;
    b->present[D9F_SCHED_CPU_TIME][r] = k->cpu_ns != 0;
    return 0;
}

/* Whether the event's schema holds every field of `need` (D9_KF_BIT) as a required integer
 * (d9_dec_binding.uint_fields): then a handler reads each value's u straight (field_u), with
 * no test of its index and type per value. Ours always do. */
static inline bool typed_fields(const d9_event *ev, uint64_t need) {
    return __builtin_expect((ev->schema->bind.uint_fields & need) == need, 1);
}

/* Field k as an unsigned integer, dflt when the schema has none or another type (the model's
 * d9m_uint_or); typed: typed_fields said it is a required integer. */
static inline __attribute__((always_inline)) uint64_t field_u(const d9_event *ev, bool typed, d9_known_field k,
                                                              uint64_t dflt) {
    int idx = ev->schema->bind.field[k];
    return typed ? ev->values[idx].u : d9m_uint_or(ev, idx, dflt);
}

/* The marks, each of its own kind (no mark struct, no dispatch on its kind again): a worker's
 * id D9_WORKER_NONE is no worker's, ignored, as the model reads it. */
static inline uint64_t mark_worker(const d9_event *ev, bool typed) {
    return field_u(ev, typed, D9_KF_WORKER_ID, D9_WORKER_NONE);
}

static inline __attribute__((always_inline)) int on_poll_start(seg *s, const d9_event *ev, d9_decoder *d) {
    bool typed = typed_fields(ev, D9_KF_BIT(D9_KF_WORKER_ID) | D9_KF_BIT(D9_KF_TASK_ID));
    uint64_t worker = mark_worker(ev, typed);
    if (worker == D9_WORKER_NONE) return 0;
    uint64_t task = field_u(ev, typed, D9_KF_TASK_ID, 0);
    worker_slot *w = slot_of(s, worker);
    if (!w) return oom(s);
    uint32_t loc = spawn_loc(s, ev, d);
    if (loc == UINT32_MAX) return oom(s);
    if (w->in_poll) s->unmatched_starts++; /* reopened: the open one loses its end */
    w->in_poll = true;
    w->poll_ts = ev->ts_ns;
    w->poll_task = task;
    w->poll_loc = loc;
    return 0;
}

static inline __attribute__((always_inline)) int on_poll_end(seg *s, const d9_event *ev) {
    uint64_t worker = mark_worker(ev, typed_fields(ev, D9_KF_BIT(D9_KF_WORKER_ID)));
    if (worker == D9_WORKER_NONE) return 0;
    worker_slot *w = slot_of(s, worker);
    if (!w) return oom(s);
    if (!w->in_poll) { /* a stray end */
        s->unmatched_ends++;
        return 0;
    }
    w->in_poll = false;
    return on_poll(s, worker, w, ev->ts_ns);
}

/* A park (unpark false) or an unpark: its thread names its worker (model/thread_worker.h), the
 * park opens, the unpark closes the open park; a row of sched each. */
static inline __attribute__((always_inline)) int on_park_mark(seg *s, const d9_event *ev, bool unpark) {
    const int16_t *f = ev->schema->bind.field;
    const uint64_t need = D9_KF_BIT(D9_KF_WORKER_ID) | D9_KF_BIT(D9_KF_TID) | D9_KF_BIT(D9_KF_CPU_TIME_NS) |
                          (unpark ? D9_KF_BIT(D9_KF_SCHED_WAIT_NS) : 0);
    bool typed = typed_fields(ev, need);
    sched_fields k = {.ts = ev->ts_ns, .worker = mark_worker(ev, typed), .unpark = unpark};
    if (k.worker == D9_WORKER_NONE) return 0;
    k.tid = field_u(ev, typed, D9_KF_TID, 0);
    k.cpu_ns = field_u(ev, typed, D9_KF_CPU_TIME_NS, 0);
    uint64_t wait = 0;
    bool has_wait = unpark && (typed ? (wait = ev->values[f[D9_KF_SCHED_WAIT_NS]].u, true)
                                     : f[D9_KF_SCHED_WAIT_NS] >= 0 &&
                                           d9_value_uint(&ev->values[f[D9_KF_SCHED_WAIT_NS]], &wait));
    if (has_wait && d9m_sched_wait_measured(s->ss, wait, k.cpu_ns != 0)) {
        k.delay = true;
        k.delay_ns = wait;
    }
    uint64_t ignored;
    if (k.tid && d9m_thread_worker_note(&s->thread_workers, k.tid, k.worker, &ignored) != 0) return oom(s);
    worker_slot *w = slot_of(s, k.worker);
    if (!w) return oom(s);
    if (!unpark) {
        w->parked = true;
        w->park_ts = k.ts;
    } else if (w->parked) {
        w->parked = false;
        k.closed = true;
        k.parked_ns = k.ts > w->park_ts ? k.ts - w->park_ts : 0;
    }
    return sched_row(s, &k);
}

static inline __attribute__((always_inline)) int on_wake(seg *s, const d9_event *ev) {
    bool typed = typed_fields(ev, D9_KF_BIT(D9_KF_WAKER_TASK_ID) | D9_KF_BIT(D9_KF_WOKEN_TASK_ID) |
                                      D9_KF_BIT(D9_KF_TARGET_WORKER));
    /* read before the row's stores, which may alias the values */
    uint64_t waker = field_u(ev, typed, D9_KF_WAKER_TASK_ID, 0), woken = field_u(ev, typed, D9_KF_WOKEN_TASK_ID, 0);
    uint64_t target = field_u(ev, typed, D9_KF_TARGET_WORKER, D9_WORKER_NONE);
    uint32_t r;
    int rc;
    d9f_row_batch *b = batch_row(s, D9F_WAKES, wall_of(s, ev->ts_ns), 0, &r, &rc);
    if (!b) return rc;
    b->v[D9F_WAKE_WAKER][r] = (int64_t)waker;
    b->v[D9F_WAKE_WOKEN][r] = (int64_t)woken;
    b->v[D9F_WAKE_TARGET][r] = (int64_t)target;
    b->present[D9F_WAKE_TARGET][r] = target < D9_WORKER_NONE;
    return 0;
}

/* The stack of a sample: its id (a hash of its addresses), kept once per segment. */
static int sample_stack(seg *s, const d9_event *ev, d9_decoder *d, int64_t wall, uint64_t *id, uint32_t *index) {
    int idx = ev->schema->bind.field[D9_KF_CALLCHAIN];
    const uint64_t *addrs = NULL;
    uint32_t n = 0;
    if (idx >= 0 && ev->values[idx].present) {
        const d9_value *v = &ev->values[idx];
        if (v->type == D9_FT_POOLED_STACK || v->type == D9_FT_STACK) {
            addrs = v->stack.addrs;
            n = v->stack.count;
            if (v->type == D9_FT_POOLED_STACK && !v->resolved && !d9_dec_pool_stack(d, v->pool_id, &addrs, &n)) {
                n = 0;
                note_unresolved(s, ev);
            }
        }
    }
    uint64_t h = 0x84222325cbf29ce4ull ^ n;
    for (uint32_t i = 0; i < n; i++) h = d9_mix64(h ^ addrs[i]) + i;
    *id = h & INT64_MAX; /* a BIGINT every engine reads as positive */
    uint64_t *known = d9_u64_map_get(&s->stack_index, *id);
    if (known) {
        *index = (uint32_t)*known;
        return 0;
    }
    *index = (uint32_t)s->nstacks;
    stack_entry *p = realloc(s->stacks, (s->nstacks + 1) * sizeof *p);
    if (!p) return oom(s);
    s->stacks = p;
    stack_entry *e = &p[s->nstacks];
    *e = (stack_entry){.id = *id, .first_wall = wall, .n = n};
    if (n && !(e->addrs = malloc(n * sizeof *addrs))) return oom(s);
    if (n) memcpy(e->addrs, addrs, n * sizeof *addrs);
    if (d9_u64_map_put(&s->stack_index, *id, s->nstacks) != 0) return oom(s);
    s->nstacks++;
    return 0;
}

static int on_sample(seg *s, const d9_event *ev, d9_decoder *d) {
    const int16_t *f = ev->schema->bind.field;
    int64_t wall = wall_of(s, ev->ts_ns);
    uint64_t stack;
    uint32_t stack_index;
    if (sample_stack(s, ev, d, wall, &stack, &stack_index) != 0) return -1;
    uint64_t source = d9m_uint_or(ev, f[D9_KF_SOURCE], 0);
    /* its own worker, else its thread's (model/thread_worker.h), a timer sample's too: the
     * `samples` table's worker_id is the worker sampled, as analyze counts it */
    uint64_t sample_worker = d9m_record_worker(
        d9m_thread_worker_of(&s->thread_workers, d9m_uint_or(ev, f[D9_KF_TID], 0)),
        d9m_uint_or(ev, f[D9_KF_WORKER_ID], D9_WORKER_NONE));
    if (source == 1 && sample_worker != D9_WORKER_NONE &&
        d9f_attr_offcpu_sample(&s->attr, ev->ts_ns, sample_worker, stack_index) != 0)
        return oom(s);
    uint32_t r;
    int rc;
    d9f_row_batch *b = batch_row(s, D9F_SAMPLES, wall, 0, &r, &rc);
    if (!b) return rc;
    b->v[D9F_SAMPLE_SOURCE][r] = source != 0;
    b->v[D9F_SAMPLE_WORKER][r] = (int64_t)sample_worker;
    b->present[D9F_SAMPLE_WORKER][r] = sample_worker < D9_WORKER_NONE;
    b->v[D9F_SAMPLE_TID][r] = (int64_t)d9m_uint_or(ev, f[D9_KF_TID], 0);
    uint64_t v = 0;
    bool cpu = f[D9_KF_CPU] >= 0 && d9_value_uint(&ev->values[f[D9_KF_CPU]], &v);
    b->v[D9F_SAMPLE_CPU][r] = (int64_t)v;
    b->present[D9F_SAMPLE_CPU][r] = cpu;
    b->v[D9F_SAMPLE_STACK][r] = (int64_t)stack;
    b->v[D9F_SAMPLE_WEIGHT][r] = 1;
    return 0;
}

static int on_symbol(seg *s, const d9_event *ev) {
    d9m_symbol_event e;
    if (!d9m_symbol_read(ev, &e)) return 0;
    uint32_t name = intern_loc(s, e.name.ptr, e.name.len);
    uint32_t file = intern_loc(s, e.file.ptr, e.file.len);
    if (name == UINT32_MAX || file == UINT32_MAX) return oom(s);
    return d9m_symtab_add(&s->symtab, e.addr, e.size, name, file, e.line, e.depth) == 0 ? 0 : oom(s);
}

/* The cause of an off-CPU interval whose switch-out stack is s->stacks[stack]: the model's,
 * from its frames' names (each address's function and the functions inlined there). */
static int stack_cause(uint32_t stack, void *ctx) {
    seg *s = ctx;
    if (!s->stack_cause && !(s->stack_cause = calloc(s->nstacks + 1, 1))) return -1;
    if (s->stack_cause[stack]) return s->stack_cause[stack] - 1;
    const stack_entry *e = &s->stacks[stack];
    size_t cap = (size_t)e->n * 8 + 1, n = 0;
    const char **names = malloc(cap * sizeof *names);
    if (!names) return -1;
    for (uint32_t k = 0; k < e->n; k++) {
        const d9m_sym *syms[8];
        uint32_t m = d9m_symtab_lookup(&s->symtab, e->addrs[k], syms, 8);
        if (!m) names[n++] = NULL;
        for (uint32_t i = 0; i < m; i++) names[n++] = s->locs[syms[i]->name];
    }
    d9m_part c = d9m_offcpu_cause(false, names, n);
    free(names);
    s->stack_cause[stack] = (uint8_t)(c + 1);
    return c;
}

/* One row per distinct stack: its frames leaf first, each its address and, when the trace
 * has symbols for it, the function that holds it and the functions inlined there. */
static int put_stack_rows(seg *s) {
    for (size_t i = 0; i < s->nstacks; i++) {
        const stack_entry *e = &s->stacks[i];
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        if (!f) return oom(s);
        d9_json j;
        d9_json_init(&j, f, false);
        d9_json_array_begin(&j);
        for (uint32_t k = 0; k < e->n; k++) {
            char addr[24];
            snprintf(addr, sizeof addr, "0x%" PRIx64, e->addrs[k]);
            d9_json_object_begin(&j);
            d9_json_key(&j, "addr");
            d9_json_string(&j, addr);
            const d9m_sym *syms[8];
            uint32_t n = d9m_symtab_lookup(&s->symtab, e->addrs[k], syms, 8);
            if (n) {
                d9_json_key(&j, "function");
                d9_json_string(&j, s->locs[syms[n - 1]->name]);
                if (n > 1) {
                    d9_json_key(&j, "inlined");
                    d9_json_array_begin(&j);
                    for (uint32_t m = 0; m + 1 < n; m++) d9_json_string(&j, s->locs[syms[m]->name]);
                    d9_json_array_end(&j);
                }
            }
            d9_json_object_end(&j);
        }
        d9_json_array_end(&j);
        if (fclose(f) != 0) {
            free(buf);
            return oom(s);
        }
        bool skip;
        pq_writer *w = row(s, D9F_STACKS, e->first_wall, &skip);
        if (w) {
            pq_put_i64(w, D9F_STACK_ID, (int64_t)e->id);
            pq_put_i32(w, D9F_STACK_DEPTH, (int32_t)e->n);
            pq_put_str(w, D9F_STACK_FRAMES, buf, len);
        }
        free(buf);
        if (!w) {
            if (skip) continue;
            return -1;
        }
        if (end_row(s, w) != 0) return -1;
    }
    return 0;
}

static void note_source(seg *s, const d9_event *ev) {
    const int16_t *f = ev->schema->bind.field;
    d9_dec_str src, mode;
    if (f[D9_KF_SOURCE] < 0 || f[D9_KF_MODE] < 0 || !d9_value_str(&ev->values[f[D9_KF_SOURCE]], &src) ||
        !d9_value_str(&ev->values[f[D9_KF_MODE]], &mode))
        return;
    d9m_coverage_change(&s->attr.cov, ev->ts_ns, src.ptr, src.len, mode.ptr, mode.len);
    uint64_t one_in = f[D9_KF_ONE_IN] >= 0 ? d9m_uint_or(ev, f[D9_KF_ONE_IN], 0) : 0;
    d9_json *j = &s->sources_j;
    d9_json_object_begin(j);
    d9_json_key(j, "wall_time_ns");
    d9_json_i64(j, wall_of(s, ev->ts_ns));
    d9_json_key(j, "source");
    d9_json_string_n(j, src.ptr, src.len);
    d9_json_key(j, "mode");
    d9_json_string_n(j, mode.ptr, mode.len);
    d9_json_key(j, "one_in");
    d9_json_u64(j, one_in);
    d9_json_object_end(j);
}

/* A switch record: its worker by the model's rule (model/thread_worker.h), so the switch-in's
 * is the interval's. */
static int on_switch(seg *s, const d9_event *ev) {
    const int16_t *f = ev->schema->bind.field;
    uint64_t tid = d9m_uint_or(ev, f[D9_KF_TID], 0), worker;
    if (d9m_thread_worker_note(&s->thread_workers, tid, d9m_uint_or(ev, f[D9_KF_WORKER_ID], D9_WORKER_NONE),
                               &worker) != 0)
        return oom(s);
    int rc = d9f_attr_switch(&s->attr, ev->ts_ns, worker, tid, d9m_uint_or(ev, f[D9_KF_SWITCH_OUT], 0) != 0,
                             d9m_uint_or(ev, f[D9_KF_PREEMPTED], 0) != 0);
    return rc == 0 ? 0 : oom(s);
}

/* A worker's registration names its thread (as analyze reads it). */
static int on_registered(seg *s, const d9_event *ev) {
    const int16_t *f = ev->schema->bind.field;
    uint64_t tid = d9m_uint_or(ev, f[D9_KF_TID], 0), ignored;
    if (!tid) return 0;
    return d9m_thread_worker_note(&s->thread_workers, tid, d9m_uint_or(ev, f[D9_KF_WORKER_ID], D9_WORKER_NONE),
                                  &ignored) == 0 ? 0 : oom(s);
}

static void note_drops(seg *s, const d9_event *ev) {
    const int16_t *f = ev->schema->bind.field;
    d9_dec_str reason = {"unknown", 7};
    if (f[D9_KF_REASON] >= 0) d9_value_str(&ev->values[f[D9_KF_REASON]], &reason);
    uint64_t n = d9m_uint_or(ev, f[D9_KF_COUNT_FIELD], 0);
    s->dropped += n;
    d9_json *j = &s->drops_j;
    d9_json_object_begin(j);
    d9_json_key(j, "reason");
    d9_json_string_n(j, reason.ptr, reason.len);
    d9_json_key(j, "count");
    d9_json_u64(j, n);
    d9_json_object_end(j);
}

/* The stream of the next events (a run's are all of one): pool ids are per stream. */
static inline void enter_stream(seg *s, uint32_t stream) {
    if (s->stream_known && stream == s->stream) return;
    d9_u64_map_clear(&s->loc_by_pool);
    memset(s->loc_recent, 0, sizeof s->loc_recent);
    s->stream = stream;
    s->stream_known = true;
}

/* The segment's first and last times over n events (a run's, or one): ts - 1 wraps an untimed
 * event's 0 to the largest, so that one min and one max need no test per event. */
static inline void note_times(seg *s, const d9_event *e, int n) {
    uint64_t first1 = s->first_ts - 1, last = s->last_ts;
    for (int i = 0; i < n; i++) {
        uint64_t ts = e[i].ts_ns;
        first1 = ts - 1 < first1 ? ts - 1 : first1;
        last = ts > last ? ts : last;
    }
    s->first_ts = first1 + 1;
    s->last_ts = last;
    s->events += (uint64_t)n;
}

/* One event of the segment, of the stream entered, into the fold's state and rows (its time
 * noted before, note_times): symbols and drops timed or not, the rest only with a time. The
 * handlers of the common events (polls, parks, wakes) are inline in the run's loop: a call
 * and its register saves cost ~15 instructions an event. */
static inline __attribute__((always_inline)) int on_event(seg *s, const d9_event *e, d9_decoder *d) {
    uint8_t role = e->schema->bind.role;
    if (e->ts_ns == 0 && role != D9_SCH_SYMBOL_TABLE_ENTRY && role != D9_SCH_DROPPED_EVENTS) return 0;
    switch (role) {
    case D9_SCH_POLL_START: return on_poll_start(s, e, d);
    case D9_SCH_POLL_END: return on_poll_end(s, e);
    case D9_SCH_WAKE: return on_wake(s, e);
    case D9_SCH_WORKER_PARK: return on_park_mark(s, e, false);
    case D9_SCH_WORKER_UNPARK: return on_park_mark(s, e, true);
    case D9_SCH_SYMBOL_TABLE_ENTRY: return on_symbol(s, e);
    case D9_SCH_COVERAGE: note_source(s, e); return 0;
    case D9_SCH_SCHED_SWITCH: return on_switch(s, e);
    case D9_SCH_WORKER_REGISTERED: return on_registered(s, e);
    case D9_SCH_POLL_CPU: return on_poll_cpu(s, e);
    case D9_SCH_CPU_SAMPLE: return on_sample(s, e, d);
    case D9_SCH_DROPPED_EVENTS:
        note_drops(s, e);
        if (e->ts_ns)
            d9m_coverage_drop(&s->attr.cov, e->ts_ns,
                              d9m_uint_or(e, e->schema->bind.field[D9_KF_WORKER_ID], D9_WORKER_NONE),
                              d9m_uint_or(e, e->schema->bind.field[D9_KF_TID], 0));
        return 0;
    default: return 0;
    }
}

/* Events a run at a time (d9_dec_next_run: the bounded events the buffer holds, read in one
 * call), and one by d9_dec_next where a run cannot go on: that one call refills the buffer,
 * reads every other frame and names damage and errors, as before. */
enum { RUN_EVENTS = 64, RUN_VALUES = 64 * 12 };

static int read_events(seg *s, const char **status) {
    char err[256];
    d9_decoder *d = d9_dec_open_path(s->path, NULL, err, sizeof err);
    if (!d) {
        snprintf(s->err, s->errlen, "%s", err);
        return -1;
    }
    d9_event ev, run[RUN_EVENTS];
    d9_value vals[RUN_VALUES];
    int rc = 0;
    for (;;) {
        int n = d9_dec_next_run(d, run, RUN_EVENTS, vals, RUN_VALUES);
        if (n > 0) {
            enter_stream(s, run[0].stream); /* a run is of one stream */
            note_times(s, run, n);
        }
        for (int i = 0; i < n && rc == 0; i++) rc = on_event(s, &run[i], d);
        if (rc != 0) break;
        if (n > 0) continue;
        if (d9_dec_next(d, &ev) <= 0) break;
        enter_stream(s, ev.stream);
        note_times(s, &ev, 1);
        if ((rc = on_event(s, &ev, d)) != 0) break;
    }
    s->have_ts = s->first_ts != UINT64_MAX;
    if (!s->have_ts) s->first_ts = 0;
    d9_dec_status st = d9_dec_state(d);
    const d9_dec_stats *ds = d9_dec_get_stats(d);
    if (rc == 0 && st != D9_DEC_END && st != D9_DEC_TRUNCATED) {
        snprintf(s->err, s->errlen, "%s", d9_dec_message(d));
        rc = -1;
    } else if (rc == 0 && ds->undefined_pool_ids > 0) {
        /* damage the frames do not show (a flipped id): analyze fails the file too; rows with
         * "<unresolved>" for a name the segment lost would be folded as if they were whole */
        int n = snprintf(s->err, s->errlen, "%" PRIu64 " pool id(s) referenced but never defined in their stream",
                         ds->undefined_pool_ids);
        /* without late definitions, the first reference unresolved when read is one of them */
        if (s->have_unresolved && ds->late_definitions == 0 && n > 0 && (size_t)n < s->errlen)
            snprintf(s->err + n, s->errlen - (size_t)n, " (the first: the event at offset %" PRIu64 ")",
                     s->first_unresolved);
        rc = -1;
    }
    *status = st == D9_DEC_TRUNCATED ? "truncated" : "complete";
    d9_dec_close(d);
    return rc;
}

typedef struct hist_put {
    seg *s;
    d9f_hist_merge *m;
    const hist_group *g;
} hist_put;

/* A row of the group's histogram into its partition's merge; -1 out of memory. */
static int put_hist_row(const d9f_hist_row *r, void *ctx) {
    hist_put *hp = ctx;
    const hist_group *g = hp->g;
    return d9f_hist_merge_add(hp->m, hp->s->locs[g->loc], hp->s->loc_lens[g->loc], g->worker, g->first_wall, r);
}

/* poll_hist's rows, into each hour's merge with the other segments' rows of that hour
 * (hist_merge.h: the output writes them, summed per key, at its commit). */
static int put_hist_rows(seg *s) {
    d9f_hist_merge *m = NULL;
    int64_t hour = -1;
    bool skip = false;
    for (size_t i = 0; i < s->ngroups; i++) {
        const hist_group *g = &s->groups[i];
        if (partition_hour(g->first_wall) != hour) {
            hour = partition_hour(g->first_wall);
            m = d9f_output_hist(s->out, s->service, g->first_wall, s->seg_id, &skip, s->err, s->errlen);
            if (!m && !skip) return -1;
            if (m && d9f_hist_merge_segment(m, s->instance, s->boot, s->run, s->seg_id) != 0) return oom(s);
        }
        if (!m) continue; /* the partition holds this segment already */
        hist_put hp = {s, m, g};
        if (d9f_hist_rows(&g->h, put_hist_row, &hp) != 0) return oom(s);
    }
    return 0;
}

static int put_segment_row(seg *s, uint64_t file_bytes, const char *status) {
    bool skip;
    int64_t first = s->have_ts ? wall_of(s, s->first_ts) : (int64_t)s->clock_real;
    pq_writer *w = row(s, D9F_SEGMENTS, first, &skip);
    if (!w) return skip ? 0 : -1;
    const char *base = strrchr(s->path, '/');
    base = base ? base + 1 : s->path;
    pq_put_i64(w, D9F_SEG_END_TIME, s->have_ts ? wall_of(s, s->last_ts) : first);
    pq_put_str(w, D9F_SEG_FILE, base, strlen(base));
    pq_put_i64(w, D9F_SEG_BYTES, (int64_t)file_bytes);
    pq_put_i64(w, D9F_SEG_EVENTS, (int64_t)s->events);
    pq_put_i64(w, D9F_SEG_POLLS, (int64_t)s->polls);
    pq_put_i64(w, D9F_SEG_FIRST_NS, (int64_t)s->first_ts);
    pq_put_i64(w, D9F_SEG_LAST_NS, (int64_t)s->last_ts);
    pq_put_str(w, D9F_SEG_STATUS, status, strlen(status));
    pq_put_str(w, D9F_SEG_METADATA, s->metadata_json, strlen(s->metadata_json));
    pq_put_str(w, D9F_SEG_SOURCES, s->sources_buf, s->sources_len);
    pq_put_i64(w, D9F_SEG_DROPPED, (int64_t)s->dropped);
    pq_put_str(w, D9F_SEG_DROPS, s->drops_buf, s->drops_len);
    pq_put_i64(w, D9F_SEG_UNMATCHED_STARTS, (int64_t)s->unmatched_starts);
    pq_put_i64(w, D9F_SEG_UNMATCHED_ENDS, (int64_t)s->unmatched_ends);
    return end_row(s, w);
}

static void seg_free(seg *s) {
    for (int t = 0; t < D9F_TABLES; t++) d9f_batch_free(&s->batch[t]);
    free(s->service);
    free(s->instance);
    free(s->boot);
    free(s->run);
    free(s->metadata_json);
    for (uint32_t i = 0; i < s->nlocs; i++) free(s->locs[i]);
    free(s->locs);
    d9_u64_map_free(&s->loc_by_hash);
    d9_u64_map_free(&s->loc_by_pool);
    d9_u64_map_free(&s->worker_index);
    d9m_thread_workers_free(&s->thread_workers);
    free(s->slots);
    free(s->pending);
    d9f_attr_free(&s->attr);
    free(s->stack_cause);
    free(s->loc_lens);
    d9_u64_map_free(&s->group_index);
    for (size_t i = 0; i < s->ngroups; i++) d9a_hist_free(&s->groups[i].h);
    free(s->groups);
    for (size_t i = 0; i < s->nstacks; i++) free(s->stacks[i].addrs);
    free(s->stacks);
    d9_u64_map_free(&s->stack_index);
    d9m_symtab_free(&s->symtab);
    if (s->sources) fclose(s->sources);
    if (s->drops) fclose(s->drops);
    free(s->sources_buf);
    free(s->drops_buf);
}

int d9f_fold_segment(d9f_output *out, const char *path, const char *seg_id, uint64_t file_bytes,
                     d9f_segment_stats *st, char *err, size_t errlen) {
    seg s = {.out = out, .path = path, .seg_id = seg_id, .err = err, .errlen = errlen, .first_ts = UINT64_MAX};
    *st = (d9f_segment_stats){0};
    int rc = read_prelude(&s);
    static const d9f_table batched[] = {D9F_SCHED, D9F_WAKES, D9F_SAMPLES};
    /* sched: a worker's rows together, its thread's cpu_time_ns rises through them (DELTA) */
    static const int order_col[] = {D9F_SCHED_WORKER, 0, 0};
    for (size_t i = 0; rc == 0 && i < sizeof batched / sizeof *batched; i++)
        if (d9f_batch_init(&s.batch[batched[i]], batched[i], order_col[i]) != 0) rc = oom(&s);
    if (rc == 0) {
        s.batch[D9F_SCHED].strings[D9F_SCHED_KIND] = (d9f_batch_strings){k_sched_kinds, k_sched_kind_lens, 2};
        s.batch[D9F_SAMPLES].strings[D9F_SAMPLE_SOURCE] = (d9f_batch_strings){k_sample_sources, k_sample_source_lens, 2};
    }
    const char *status = "complete";
    if (rc == 0) {
        s.sources = open_memstream(&s.sources_buf, &s.sources_len);
        s.drops = open_memstream(&s.drops_buf, &s.drops_len);
        if (!s.sources || !s.drops) rc = oom(&s);
    }
    if (rc == 0) {
        d9_json_init(&s.sources_j, s.sources, false);
        d9_json_array_begin(&s.sources_j);
        d9_json_init(&s.drops_j, s.drops, false);
        d9_json_array_begin(&s.drops_j);
        rc = read_events(&s, &status);
    }
    if (rc == 0) {
        d9_json_array_end(&s.sources_j);
        d9_json_array_end(&s.drops_j);
        int a = fclose(s.sources), b = fclose(s.drops);
        s.sources = s.drops = NULL;
        if (a || b) rc = oom(&s);
    }
    for (size_t i = 0; rc == 0 && i < sizeof batched / sizeof *batched; i++) rc = flush_batch(&s, batched[i]);
    if (rc == 0 && d9f_attr_prepare(&s.attr, stack_cause, &s) != 0) rc = oom(&s);
    if (rc == 0) rc = put_poll_rows(&s);
    if (rc == 0) rc = put_hist_rows(&s);
    if (rc == 0) rc = put_stack_rows(&s);
    if (rc == 0) rc = put_segment_row(&s, file_bytes, status);
    st->events = s.events;
    st->polls = s.polls;
    st->truncated = strcmp(status, "truncated") == 0;
    seg_free(&s);
    return rc;
}
