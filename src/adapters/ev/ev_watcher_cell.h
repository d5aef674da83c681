/* A tracked libev watcher's callback, location and task where its trampoline and the
 * readiness wake find them without a side-table lookup (a hash, a sequence-checked probe and
 * a call: ~85 instructions per callback, and ~50 more for the wake of an io watcher).
 *
 * libev gives the adapter no word of the watcher (`data` is the application's) and passes its
 * callback nothing but the loop, the watcher and the events, so the cell lives beside it: in
 * one process-wide array of cells, at one of two places the watcher's address hashes to. A
 * cell names its watcher; a watcher whose two places are both taken by others has no cell, and
 * its trampoline looks the side table up as before. The side table stays the owner (starts,
 * stops, libev's own stops and feeds, ev_async_send from other threads, the loop's end): every
 * change of a watcher's entry in ev_watchers.c sets or clears its cell (d9ev_cell_set,
 * d9ev_cell_clear), in the watcher's loop's context (libev's rule for every call on a loop),
 * the same context that runs its callbacks.
 *
 * The array is allocated at the first cell and never freed, so a reader never meets freed
 * memory. */
#ifndef D9_ADAPTERS_EV_WATCHER_CELL_H
#define D9_ADAPTERS_EV_WATCHER_CELL_H

#include <stdatomic.h>

#include "ev_adapter.h"

#define D9EV_CELL_BITS 14
#define D9EV_CELLS (1u << D9EV_CELL_BITS) /* 16384 cells of 40 bytes, pages touched as used */

/* A cell being written: no watcher has this address. */
#define D9EV_CELL_BUSY ((uintptr_t)1)

typedef struct d9ev_cell {
    _Atomic uintptr_t watcher; /* the watcher it belongs to; 0: free, D9EV_CELL_BUSY */
    d9a_fn fn;                 /* the application's callback */
    const d9_loc *loc;
    uint64_t task;
    bool final;                /* its last callback: the task ends after it (EV_FINAL) */
} d9ev_cell;

D9A_HIDDEN extern d9ev_cell *_Atomic d9ev_cells;

static inline uint64_t d9ev_cell_hash(const void *w) {
    return (uint64_t)(uintptr_t)w * 0x9E3779B97F4A7C15ull;
}

/* The cell of watcher `w`, NULL when it has none. Inline: a multiply and a few loads. */
static inline d9ev_cell *d9ev_cell_of(const void *w) {
    d9ev_cell *cells = atomic_load_explicit(&d9ev_cells, memory_order_acquire);
    if (__builtin_expect(!cells, 0)) return NULL;
    uint64_t h = d9ev_cell_hash(w);
    d9ev_cell *c = &cells[h >> (64 - D9EV_CELL_BITS)];
    if (__builtin_expect(atomic_load_explicit(&c->watcher, memory_order_acquire) == (uintptr_t)w, 1))
        return c;
    c = &cells[(h >> 20) & (D9EV_CELLS - 1)];
    if (atomic_load_explicit(&c->watcher, memory_order_acquire) == (uintptr_t)w) return c;
    return NULL;
}

/* Watcher `w`'s entry is now (fn, loc, task, final): its cell says so (taken if it had none;
 * none when both its places are taken by others). Out of line: starts, stops and feeds. */
D9A_HIDDEN void d9ev_cell_set(const void *w, d9a_fn fn, const d9_loc *loc, uint64_t task,
                              bool final);

/* Watcher `w`'s entry is gone: so is its cell. */
D9A_HIDDEN void d9ev_cell_clear(const void *w);

#endif
