/* The watchers' cells (ev_watcher_cell.h). */
#include <stdlib.h>

#include "ev_watcher_cell.h"

d9ev_cell *_Atomic d9ev_cells;

/* The array, allocated by the first caller to need it (a loser of the race frees its own). */
static d9ev_cell *cells_allocated(void) {
    d9ev_cell *cells = atomic_load_explicit(&d9ev_cells, memory_order_acquire);
    if (cells) return cells;
    d9ev_cell *mine = calloc(D9EV_CELLS, sizeof *mine);
    if (!mine) return NULL;
    if (atomic_compare_exchange_strong_explicit(&d9ev_cells, &cells, mine, memory_order_acq_rel,
                                                memory_order_acquire))
        return mine;
    free(mine);
    return cells;
}

/* Takes a free cell of `w`'s two places, marked busy; NULL when both are someone else's. */
static d9ev_cell *take_free_cell(d9ev_cell *cells, const void *w) {
    uint64_t h = d9ev_cell_hash(w);
    d9ev_cell *places[2] = {&cells[h >> (64 - D9EV_CELL_BITS)],
                            &cells[(h >> 20) & (D9EV_CELLS - 1)]};
    for (int i = 0; i < 2; i++) {
        uintptr_t free_cell = 0;
        if (atomic_compare_exchange_strong_explicit(&places[i]->watcher, &free_cell,
                                                    D9EV_CELL_BUSY, memory_order_acquire,
                                                    memory_order_relaxed))
            return places[i];
    }
    return NULL;
}

void d9ev_cell_set(const void *w, d9a_fn fn, const d9_loc *loc, uint64_t task, bool final) {
    d9ev_cell *c = d9ev_cell_of(w);
    if (c) {
        /* its own cell: no trampoline of `w` runs meanwhile (the same loop context) */
        atomic_store_explicit(&c->watcher, D9EV_CELL_BUSY, memory_order_relaxed);
    } else {
        d9ev_cell *cells = cells_allocated();
        if (!cells || !(c = take_free_cell(cells, w))) return; /* the side table answers */
    }
    c->fn = fn;
    c->loc = loc;
    c->task = task;
    c->final = final;
    atomic_store_explicit(&c->watcher, (uintptr_t)w, memory_order_release);
}

void d9ev_cell_clear(const void *w) {
    d9ev_cell *c = d9ev_cell_of(w);
    if (c) atomic_store_explicit(&c->watcher, 0, memory_order_release);
}
