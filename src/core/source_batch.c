/* d9_src_batch: the events sources hand to the collector in one drain, with their frames and
 * strings copied into chunks that never move (so pointers stay valid until the reset). */
#include "core/source_batch.h"

#include <stdlib.h>
#include <string.h>

typedef struct arena_chunk {
    struct arena_chunk *next;
    size_t used, cap;
    _Alignas(8) char data[];
} arena_chunk;

static void *arena_alloc(d9_src_batch *b, size_t n) {
    n = (n + 7) & ~(size_t)7;
    arena_chunk *c = b->cur;
    while (c && c->cap - c->used < n) c = c->next; /* reuse chunks kept from earlier drains */
    if (!c) {
        size_t cap = n > 65536 ? n : 65536;
        c = malloc(sizeof *c + cap);
        if (!c) return NULL;
        c->used = 0;
        c->cap = cap;
        c->next = b->chunks;
        b->chunks = c;
    }
    b->cur = c;
    void *p = c->data + c->used;
    c->used += n;
    return p;
}

static const char *copy_str(d9_src_batch *b, const char *s) {
    if (!s) return "";
    size_t n = strlen(s) + 1;
    char *p = arena_alloc(b, n);
    if (p) memcpy(p, s, n);
    return p;
}

/* Any event, the batch grown first when full; its frames and strings copied into the arena. */
static __attribute__((noinline)) bool add_slow(d9_src_batch *b, const d9_src_event *ev) {
    if (b->count == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 256;
        d9_src_event *e = realloc(b->events, cap * sizeof *e);
        if (!e) return false;
        b->events = e;
        b->cap = cap;
    }
    /* stored in place (a copy on the stack first cost a second pass over the event's words,
     * for the context switches that make most of a batch), pointers moved to the batch's own */
    d9_src_event *copy = &b->events[b->count];
    *copy = *ev;
    if (ev->kind == D9_SRC_CPU_SAMPLE && ev->sample.nframes) {
        uint64_t *f = arena_alloc(b, ev->sample.nframes * sizeof(uint64_t));
        if (!f) return false;
        memcpy(f, ev->sample.frames, ev->sample.nframes * sizeof(uint64_t));
        copy->sample.frames = f;
    } else if (ev->kind == D9_SRC_MMAP) {
        copy->map.path = copy_str(b, ev->map.path);
        copy->map.build_id = copy_str(b, ev->map.build_id);
        if (!copy->map.path || !copy->map.build_id) return false;
    }
    b->count++;
    return true;
}

/* A context switch (most of a batch: a record per switch) is the event alone, stored with no
 * stack frame around it; the rest, or a full batch, goes the slow way. */
bool d9_src_batch_add(d9_src_batch *b, const d9_src_event *ev) {
    if (__builtin_expect(ev->kind == D9_SRC_SWITCH && b->count < b->cap, 1)) {
        b->events[b->count++] = *ev;
        return true;
    }
    return add_slow(b, ev);
}

void d9_src_batch_reset(d9_src_batch *b) {
    b->count = 0;
    for (arena_chunk *c = b->chunks; c; c = c->next) c->used = 0;
    b->cur = b->chunks;
}

void d9_src_batch_free(d9_src_batch *b) {
    free(b->events);
    free(b->scratch);
    for (arena_chunk *c = b->chunks, *n; c; c = n) {
        n = c->next;
        free(c);
    }
    memset(b, 0, sizeof *b);
}

static int by_time(const void *a, const void *b) {
    const d9_src_event *x = a, *y = b;
    return x->ts_ns < y->ts_ns ? -1 : x->ts_ns > y->ts_ns;
}

/* Merge the sorted runs [lo, mid) and [mid, hi) of `from` into `to`. */
static void merge(const d9_src_event *from, d9_src_event *to, size_t lo, size_t mid, size_t hi) {
    size_t i = lo, j = mid, k = lo;
    while (i < mid && j < hi) to[k++] = from[j].ts_ns < from[i].ts_ns ? from[j++] : from[i++];
    while (i < mid) to[k++] = from[i++];
    while (j < hi) to[k++] = from[j++];
}

/* End of the sorted run that starts at `lo`. */
static size_t run_end(const d9_src_event *e, size_t lo, size_t n) {
    size_t i = lo + 1;
    while (i < n && e[i].ts_ns >= e[i - 1].ts_ns) i++;
    return i;
}

void d9_src_batch_sort(d9_src_batch *b) {
    /* Sources hand over one sorted run per ring (a CPU's records come in time order), so a
     * natural merge sort does a pass per doubling of runs: one pass for two CPUs, none when
     * the batch is sorted already. qsort only when the merge buffer cannot be had. */
    size_t n = b->count;
    if (n < 2 || run_end(b->events, 0, n) == n) return;
    if (b->scratch_cap < n) {
        d9_src_event *s = realloc(b->scratch, b->cap * sizeof *s);
        if (!s) {
            qsort(b->events, n, sizeof *b->events, by_time);
            return;
        }
        b->scratch = s;
        b->scratch_cap = b->cap;
    }
    d9_src_event *from = b->events, *to = b->scratch;
    for (;;) {
        size_t runs = 0;
        for (size_t lo = 0; lo < n; runs++) {
            size_t mid = run_end(from, lo, n);
            size_t hi = mid < n ? run_end(from, mid, n) : n;
            merge(from, to, lo, mid, hi);
            lo = hi;
        }
        d9_src_event *t = from;
        from = to;
        to = t;
        if (runs == 1) break;
    }
    if (from != b->events) { /* the sorted events are the scratch's: the two buffers trade places */
        size_t cap = b->cap;
        b->scratch = b->events;
        b->events = from;
        b->cap = b->scratch_cap;
        b->scratch_cap = cap;
    }
}
