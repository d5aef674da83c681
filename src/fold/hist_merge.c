/* poll_hist's rows of one file merged per key (hist_merge.h). */
#include "fold/hist_merge.h"

#include <stdlib.h>
#include <string.h>

#include "common/u64_map.h"
#include "fold/tables.h"

enum { ID_INSTANCE, ID_BOOT, ID_RUN, ID_SEGMENT, IDS };

typedef struct hrow {
    uint32_t id[IDS], loc;
    int32_t bucket;
    uint64_t worker;
    int64_t wall;
    uint64_t low, high, mid, count, min, max;
} hrow;

struct d9f_hist_merge {
    char **strs; /* interned: identities and spawn locations */
    uint32_t *lens;
    uint32_t nstrs, cap_strs;
    d9_u64_map by_hash;
    uint32_t cur[IDS];
    hrow *rows;
    size_t n, cap;
    size_t step, next; /* rows are summed in place once `next` are held, then `step` more */
};

d9f_hist_merge *d9f_hist_merge_new_at(size_t merge_at) {
    d9f_hist_merge *m = calloc(1, sizeof *m);
    if (m) m->step = m->next = merge_at ? merge_at : 1;
    return m;
}

d9f_hist_merge *d9f_hist_merge_new(void) { return d9f_hist_merge_new_at(D9F_HIST_MERGE_AT); }

static int merge(d9f_hist_merge *m);

void d9f_hist_merge_free(d9f_hist_merge *m) {
    if (!m) return;
    for (uint32_t i = 0; i < m->nstrs; i++) free(m->strs[i]);
    free(m->strs);
    free(m->lens);
    d9_u64_map_free(&m->by_hash);
    free(m->rows);
    free(m);
}

/* The string's id; UINT32_MAX out of memory. */
static uint32_t intern(d9f_hist_merge *m, const char *p, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 0x100000001b3ull;
    for (;; h++) { /* collisions: the next key */
        uint64_t *i = d9_u64_map_get(&m->by_hash, h);
        if (!i) break;
        if (m->lens[*i] == n && memcmp(m->strs[*i], p, n) == 0) return (uint32_t)*i;
    }
    if (n > UINT32_MAX || m->nstrs == UINT32_MAX - 1) return UINT32_MAX;
    if (m->nstrs == m->cap_strs) {
        uint32_t cap = m->cap_strs ? m->cap_strs * 2 : 64;
        char **s = realloc(m->strs, cap * sizeof *s);
        if (!s) return UINT32_MAX;
        m->strs = s;
        uint32_t *l = realloc(m->lens, cap * sizeof *l);
        if (!l) return UINT32_MAX;
        m->lens = l;
        m->cap_strs = cap;
    }
    char *c = malloc(n + 1);
    if (!c) return UINT32_MAX;
    memcpy(c, p, n);
    c[n] = 0;
    if (d9_u64_map_put(&m->by_hash, h, m->nstrs) != 0) {
        free(c);
        return UINT32_MAX;
    }
    m->strs[m->nstrs] = c;
    m->lens[m->nstrs] = (uint32_t)n;
    return m->nstrs++;
}

int d9f_hist_merge_segment(d9f_hist_merge *m, const char *instance, const char *boot, const char *run,
                           const char *segment) {
    const char *v[IDS] = {instance, boot, run, segment};
    for (int k = 0; k < IDS; k++)
        if ((m->cur[k] = intern(m, v[k], strlen(v[k]))) == UINT32_MAX) return -1;
    return 0;
}

int d9f_hist_merge_add(d9f_hist_merge *m, const char *loc, size_t loc_len, uint64_t worker, int64_t wall,
                       const d9f_hist_row *r) {
    uint32_t l = intern(m, loc, loc_len);
    if (l == UINT32_MAX) return -1;
    if (m->n == m->cap && m->n >= m->next) { /* summed so far: memory follows the keys, not the rows */
        if (merge(m) != 0) return -1;
        m->next = m->n + m->step;
    }
    if (m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 256;
        hrow *p = realloc(m->rows, cap * sizeof *p);
        if (!p) return -1;
        m->rows = p;
        m->cap = cap;
    }
    hrow *h = &m->rows[m->n++];
    *h = (hrow){.loc = l, .bucket = r->bucket, .worker = worker, .wall = wall, .low = r->low,
                .high = r->high, .mid = r->mid, .count = r->count, .min = r->min, .max = r->max};
    memcpy(h->id, m->cur, sizeof h->id);
    return 0;
}

static int cmp_u64(uint64_t a, uint64_t b) { return (a > b) - (a < b); }

/* ranks: the strings' order by content, so rows sort the same whatever order they came in */
static int cmp_group(const hrow *a, const hrow *b, const uint32_t *rank) {
    int c;
    for (int k = ID_INSTANCE; k <= ID_RUN; k++)
        if ((c = cmp_u64(rank[a->id[k]], rank[b->id[k]])) != 0) return c;
    if ((c = cmp_u64(rank[a->loc], rank[b->loc])) != 0) return c;
    return cmp_u64(a->worker, b->worker);
}

static int cmp_rows(const void *pa, const void *pb, void *ctx) {
    const hrow *a = pa, *b = pb;
    int c = cmp_group(a, b, ctx);
    return c ? c : (a->bucket > b->bucket) - (a->bucket < b->bucket);
}

static int cmp_strs(const void *pa, const void *pb, void *ctx) {
    const d9f_hist_merge *m = ctx;
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    size_t n = m->lens[a] < m->lens[b] ? m->lens[a] : m->lens[b];
    int c = memcmp(m->strs[a], m->strs[b], n);
    return c ? c : cmp_u64(m->lens[a], m->lens[b]);
}

/* Sorts and sums the rows in place: one per key, each group (run, location, worker) as one
 * histogram of all its polls would give it. Summed rows summed again with more give the same:
 * a bucket's min set to its bound was not its group's lowest then, so it is not at the end
 * (and the max likewise); a segment '' stays ''. */
static int merge(d9f_hist_merge *m) {
    uint32_t empty = intern(m, "", 0);
    if (empty == UINT32_MAX) return -1;
    uint32_t *order = malloc((m->nstrs ? m->nstrs : 1) * sizeof *order);
    uint32_t *rank = malloc((m->nstrs ? m->nstrs : 1) * sizeof *rank);
    if (!order || !rank) {
        free(order);
        free(rank);
        return -1;
    }
    for (uint32_t i = 0; i < m->nstrs; i++) order[i] = i;
    qsort_r(order, m->nstrs, sizeof *order, cmp_strs, m);
    for (uint32_t i = 0; i < m->nstrs; i++) rank[order[i]] = i;
    free(order);
    qsort_r(m->rows, m->n, sizeof *m->rows, cmp_rows, rank);
    size_t out = 0;
    for (size_t g = 0; g < m->n;) { /* a group: its rows by bucket */
        size_t end = g + 1;
        while (end < m->n && cmp_group(&m->rows[g], &m->rows[end], rank) == 0) end++;
        int64_t wall = m->rows[g].wall;
        uint32_t seg = m->rows[g].id[ID_SEGMENT];
        size_t first = out;
        for (size_t i = g; i < end; i++) {
            const hrow *r = &m->rows[i];
            if (r->wall < wall) wall = r->wall;
            if (r->id[ID_SEGMENT] != seg) seg = empty;
            if (out > first && m->rows[out - 1].bucket == r->bucket) {
                hrow *o = &m->rows[out - 1];
                o->count += r->count;
                if (r->min < o->min) o->min = r->min;
                if (r->max > o->max) o->max = r->max;
            } else {
                m->rows[out++] = *r;
            }
        }
        /* the exact min and max in the group's lowest and highest buckets, bounds between */
        for (size_t i = first; i < out; i++) {
            hrow *o = &m->rows[i];
            o->wall = wall;
            o->id[ID_SEGMENT] = seg;
            if (i > first) o->min = o->low;
            if (i + 1 < out) o->max = o->high - 1;
        }
        g = end;
    }
    m->n = out;
    free(rank);
    return 0;
}

enum { BATCH = 4096 };

typedef struct columns {
    uint32_t id[IDS][BATCH], loc[BATCH];
    int64_t wall[BATCH], worker[BATCH], low[BATCH], high[BATCH], mid[BATCH], count[BATCH], min[BATCH],
        max[BATCH];
    int32_t bucket[BATCH];
} columns;

int d9f_hist_merge_write(d9f_hist_merge *m, pq_writer *w, char *err, size_t errlen) {
    columns *c = malloc(sizeof *c);
    if (!c || merge(m) != 0) {
        free(c);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < m->n;) {
        uint32_t n = pq_rows_room(w);
        if (n > BATCH) n = BATCH;
        if (n > m->n - i) n = (uint32_t)(m->n - i);
        for (uint32_t r = 0; r < n; r++) {
            const hrow *h = &m->rows[i + r];
            for (int k = 0; k < IDS; k++) c->id[k][r] = h->id[k];
            c->loc[r] = h->loc;
            c->wall[r] = h->wall;
            c->worker[r] = (int64_t)h->worker;
            c->bucket[r] = h->bucket;
            c->low[r] = (int64_t)h->low;
            c->high[r] = (int64_t)h->high;
            c->mid[r] = (int64_t)h->mid;
            c->count[r] = (int64_t)h->count;
            c->min[r] = (int64_t)h->min;
            c->max[r] = (int64_t)h->max;
        }
        const char *const *strs = (const char *const *)m->strs;
        pq_begin_rows(w, n);
        for (int k = 0; k < IDS; k++) pq_put_str_ids(w, D9F_COL_INSTANCE + k, c->id[k], NULL, strs, m->lens, m->nstrs);
        pq_put_i64s(w, D9F_COL_WALL_TIME, c->wall, NULL);
        pq_put_str_ids(w, D9F_HIST_SPAWN_LOC, c->loc, NULL, strs, m->lens, m->nstrs);
        pq_put_i64s(w, D9F_HIST_WORKER, c->worker, NULL);
        pq_put_i32s(w, D9F_HIST_BUCKET, c->bucket, NULL);
        pq_put_i64s(w, D9F_HIST_LOW, c->low, NULL);
        pq_put_i64s(w, D9F_HIST_HIGH, c->high, NULL);
        pq_put_i64s(w, D9F_HIST_MID, c->mid, NULL);
        pq_put_i64s(w, D9F_HIST_COUNT, c->count, NULL);
        pq_put_i64s(w, D9F_HIST_MIN, c->min, NULL);
        pq_put_i64s(w, D9F_HIST_MAX, c->max, NULL);
        if (pq_end_rows(w) != 0) {
            snprintf(err, errlen, "poll_hist: the writer refused a batch"); /* close says why */
            rc = -1;
        }
        i += n;
    }
    free(c);
    return rc;
}
