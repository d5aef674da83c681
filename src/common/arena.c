/* Chunked bump allocator (see arena.h). */
#include "common/arena.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct d9_arena_chunk {
    d9_arena_chunk *next;
    size_t cap;
    size_t off;
    _Alignas(16) unsigned char data[];
};

#define FIRST_CHUNK 2048

void d9_arena_init(d9_arena *a, size_t max_chunk, size_t limit) {
    memset(a, 0, sizeof *a);
    if (!max_chunk) max_chunk = D9_ARENA_DEFAULT_MAX_CHUNK;
    a->max_chunk = max_chunk > FIRST_CHUNK ? max_chunk : FIRST_CHUNK;
    a->chunk_size = FIRST_CHUNK;
    a->limit = limit;
}

static d9_arena_chunk *new_chunk(d9_arena *a, size_t min) {
    if (!a->chunk_size) d9_arena_init(a, 0, a->limit); /* a zeroed arena */
    size_t cap = a->chunk_size;
    if (cap < min) cap = min;
    if (a->chunk_size < a->max_chunk) a->chunk_size *= 2;
    if (a->limit && (cap > a->limit || a->held > a->limit - cap)) return NULL;
    d9_arena_chunk *c = malloc(sizeof *c + cap);
    if (!c) return NULL;
    c->next = NULL;
    c->cap = cap;
    c->off = 0;
    a->held += cap;
    return c;
}

void *d9_arena_alloc(d9_arena *a, size_t n, size_t align) {
    if (n > SIZE_MAX / 2) return NULL;
    for (;;) {
        d9_arena_chunk *c = a->cur;
        if (c) {
            size_t off = (c->off + (align - 1)) & ~(align - 1);
            if (off <= c->cap && c->cap - off >= n) {
                c->off = off + n;
                a->used += n;
                return c->data + off;
            }
            if (c->next) { /* a kept chunk after a reset */
                a->cur = c->next;
                a->cur->off = 0;
                continue;
            }
        }
        d9_arena_chunk *nc = new_chunk(a, n + align);
        if (!nc) return NULL;
        if (c) c->next = nc;
        else a->first = nc;
        a->cur = nc;
    }
}

char *d9_arena_strdup(d9_arena *a, const void *src, size_t n) {
    char *p = d9_arena_alloc(a, n + 1, 1);
    if (!p) return NULL;
    if (n) memcpy(p, src, n);
    p[n] = '\0';
    return p;
}

void d9_arena_reset(d9_arena *a, bool keep_chunks) {
    a->used = 0;
    if (!a->first) return;
    if (!keep_chunks) {
        d9_arena_chunk *c = a->first->next;
        while (c) {
            d9_arena_chunk *next = c->next;
            a->held -= c->cap;
            free(c);
            c = next;
        }
        a->first->next = NULL;
    }
    a->first->off = 0;
    a->cur = a->first;
}

void d9_arena_free(d9_arena *a) {
    d9_arena_chunk *c = a->first;
    while (c) {
        d9_arena_chunk *next = c->next;
        free(c);
        c = next;
    }
    a->first = a->cur = NULL;
    a->held = a->used = 0;
}
