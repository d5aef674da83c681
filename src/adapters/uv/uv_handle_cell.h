/* A tracked libuv handle's callbacks where its trampolines find them without a side-table
 * lookup: the handle's `u.reserved` words (a union with an fd that libuv uses only on
 * Windows; read or written nowhere on unix in 1.44.2 and libuv's main branch of 2026) hold
 * the entry's task and a record of its callbacks and locations. The side table stays the
 * owner (the lazy swap, closes, uv_async_send, the loop's end read it); every change of a
 * handle's entry in uv_handles.c refreshes the cell (d9a_uv_cell_refresh), on the handle's
 * loop thread, as libuv requires of registrations.
 *
 * Records are interned (most handles share their callbacks: one per kind of connection) and
 * never freed, so a cell never points to freed memory; a check word ties the cell to its
 * handle, task and record. A trampoline that finds no valid cell (the intern table full or
 * busy, the application wrote over the handle) looks the entry up in the side table as
 * before. */
#ifndef D9_ADAPTERS_UV_HANDLE_CELL_H
#define D9_ADAPTERS_UV_HANDLE_CELL_H

#include <stddef.h>
#include <string.h>

#include "uv_adapter.h"

typedef struct uv_cb_record {
    d9a_fn fn[D9A_ROLES];
    const d9_loc *loc[D9A_ROLES];
} uv_cb_record;

typedef struct uv_handle_cell {
    uint64_t task;
    const uv_cb_record *rec;
    uintptr_t check; /* uv_handle_cell_check(handle, task, rec) while valid */
} uv_handle_cell;

_Static_assert(sizeof(uv_handle_cell) <= sizeof(((uv_handle_t *)0)->u.reserved),
               "a handle's cell must fit in uv_handle_t's u.reserved words (64-bit libuv)");

static inline uintptr_t uv_handle_cell_check(const void *h, uint64_t task, const void *rec) {
    uint64_t x = ((uint64_t)(uintptr_t)h ^ task ^ ((uint64_t)(uintptr_t)rec << 1)) *
                 0x9E3779B97F4A7C15ull;
    return (uintptr_t)(x | 1); /* never 0: zeroed words are no cell */
}

/* Handle `h`'s cell into *c; whether it is valid (cold paths: the trampolines read it word by
 * word, uv_handle_callback_begin_at). */
static inline bool uv_handle_cell_read(const void *h, uv_handle_cell *c) {
    memcpy(c, ((const uv_handle_t *)h)->u.reserved, sizeof *c);
    return c->check == uv_handle_cell_check(h, c->task, c->rec);
}

static inline bool uv_handle_cell_valid(const void *h) {
    uv_handle_cell c;
    return uv_handle_cell_read(h, &c);
}

/* The task of handle `h` while its cell is valid (its close callback has not begun), else 0. */
static inline uint64_t uv_handle_cell_task(const void *h) {
    uv_handle_cell c;
    return uv_handle_cell_read(h, &c) ? c.task : 0;
}

/* The entry of `h` is gone: so is its cell. */
static inline void uv_handle_cell_clear(void *h) {
    uintptr_t none = 0;
    memcpy((char *)((uv_handle_t *)h)->u.reserved + offsetof(uv_handle_cell, check), &none,
           sizeof none);
}

/* The entry of `h` changed (or went): the cell follows it. Out of line: registrations only. */
D9A_HIDDEN void d9a_uv_cell_refresh(const void *h);

/* No valid cell: the side table's entry, out of line (cold): callback `role`, the location
 * of callback `loc_role`. */
D9A_HIDDEN bool d9a_uv_table_callback(const void *h, unsigned role, unsigned loc_role, d9a_fn *fn,
                                      const d9_loc **loc, uint64_t *task);

/* d9a_callback_begin (trampoline.h) through the cell: callback `role` of handle `h` from the
 * cell, else from the side table, its poll located at callback `loc_role` (`role`'s own but
 * for an alloc callback's: uv_handle_alloc_begin). Always inlined: gcc keeps it out of line
 * for the adapter's fifteen trampolines, and the call, its saved registers and the outputs
 * through memory cost as much as the cell saves. */
static inline __attribute__((always_inline)) bool
uv_handle_callback_begin_at(const void *h, unsigned role, unsigned loc_role, d9a_fn *fn, d9a_frame *f) {
    const d9_loc *loc;
    uint64_t task;
    const uv_cb_record *rec;
    uintptr_t check;
    /* word by word: a copy of the whole cell went through the stack (gcc: a vector load, its
     * store and three loads back) */
    const char *cell = (const char *)((const uv_handle_t *)h)->u.reserved;
    memcpy(&task, cell + offsetof(uv_handle_cell, task), sizeof task);
    memcpy(&rec, cell + offsetof(uv_handle_cell, rec), sizeof rec);
    memcpy(&check, cell + offsetof(uv_handle_cell, check), sizeof check);
    if (__builtin_expect(check == uv_handle_cell_check(h, task, rec), 1)) {
        *fn = rec->fn[role];
        loc = rec->loc[loc_role];
    } else if (!d9a_uv_table_callback(h, role, loc_role, fn, &loc, &task)) {
        d9a_lost_callback(h);
        return false;
    }
    if (!*fn) return false;
    d9a_poll_enter(f, task, loc);
    return true;
}

static inline __attribute__((always_inline)) bool
uv_handle_callback_begin(const void *h, unsigned role, d9a_fn *fn, d9a_frame *f) {
    return uv_handle_callback_begin_at(h, role, role, fn, f);
}

/* A stream's or UDP handle's alloc callback: libuv calls its read (receive) callback right
 * after it, whatever the read gives (data, 0 for EAGAIN, an error, UV_ENOBUFS for no buffer),
 * so the two are one poll of the handle's task located at the read callback, which the alloc
 * callback's exit hands on (d9a_poll_exit_into): the read syscall between them is the read's
 * work, and a request costs one hook call, one clock read and two events less. */
static inline __attribute__((always_inline)) bool
uv_handle_alloc_begin(const void *h, d9a_fn *fn, d9a_frame *f) {
    return uv_handle_callback_begin_at(h, UV_ROLE_ALLOC, UV_ROLE_CB, fn, f);
}

#endif
