/* The one bump allocator of the project, made of chunks: memory that lives for one event, one
 * stream or a whole decoder, interned strings and stacks, an analysis report. Pointers stay
 * valid until the arena is reset (chunks never move), and a byte limit turns corrupt sizes
 * into a clean failure instead of an OOM. A zeroed struct is an arena with no limit and
 * chunks of up to D9_ARENA_DEFAULT_MAX_CHUNK bytes. */
#ifndef D9_COMMON_ARENA_H
#define D9_COMMON_ARENA_H

#include <stdbool.h>
#include <stddef.h>

#define D9_ARENA_DEFAULT_MAX_CHUNK (1024 * 1024)

typedef struct d9_arena_chunk d9_arena_chunk;

typedef struct d9_arena {
    d9_arena_chunk *first;
    d9_arena_chunk *cur;
    size_t chunk_size; /* size of the next ordinary chunk: starts small, doubles up to max_chunk,
                          so small inputs stay cheap and big ones need few chunks */
    size_t max_chunk;
    size_t limit;      /* most bytes held in chunks at once; 0 = no limit */
    size_t held;       /* bytes held in chunks */
    size_t used;       /* bytes handed out since the last reset */
} d9_arena;

/* max_chunk: the largest ordinary chunk (0: the default); limit: 0 = none. */
void d9_arena_init(d9_arena *a, size_t max_chunk, size_t limit);
/* `n` bytes aligned to `align` (a power of two <= 16), or NULL when over the limit or out of
 * memory. n == 0 gives a valid unique pointer. */
void *d9_arena_alloc(d9_arena *a, size_t n, size_t align);
/* Copy `n` bytes and add a NUL terminator. */
char *d9_arena_strdup(d9_arena *a, const void *src, size_t n);
/* Forget every allocation. keep_chunks: reuse the memory (per-event arenas); otherwise give
 * back all chunks but the first (per-stream arenas, so one big stream does not pin memory). */
void d9_arena_reset(d9_arena *a, bool keep_chunks);
void d9_arena_free(d9_arena *a);

#endif
