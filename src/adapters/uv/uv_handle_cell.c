/* The interned callback records of libuv handles' cells (uv_handle_cell.h): a bounded,
 * never-freed set, so that a cell's pointer stays valid whatever happens to its handle. Taken
 * with a trylock: a registration never waits for another (nor, after a fork, for a lock its
 * parent's thread held); when busy or full the handle simply has no cell and its trampolines
 * use the side table. */
#include <pthread.h>
#include <stdatomic.h>

#include "uv_handle_cell.h"

#define RECORDS 1024 /* distinct (callbacks, locations) sets; a power of two */

static uv_cb_record g_records[RECORDS];
static bool g_used[RECORDS];
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t record_hash(const uv_cb_record *r) {
    uint64_t h = 0;
    for (unsigned i = 0; i < D9A_ROLES; i++)
        h = (h ^ (uint64_t)(uintptr_t)r->fn[i] ^ ((uint64_t)(uintptr_t)r->loc[i] << 7)) *
            0x9E3779B97F4A7C15ull;
    return h;
}

/* The interned copy of `r`, or NULL when the set is full or busy. */
static const uv_cb_record *intern(const uv_cb_record *r) {
    if (pthread_mutex_trylock(&g_lock) != 0) return NULL;
    const uv_cb_record *found = NULL;
    uint32_t i = (uint32_t)(record_hash(r) >> 40) & (RECORDS - 1);
    for (uint32_t n = 0; n < RECORDS; n++, i = (i + 1) & (RECORDS - 1)) {
        if (!g_used[i]) {
            g_records[i] = *r;
            g_used[i] = true;
            found = &g_records[i];
            break;
        }
        if (memcmp(&g_records[i], r, sizeof *r) == 0) {
            found = &g_records[i];
            break;
        }
    }
    pthread_mutex_unlock(&g_lock);
    return found;
}

void d9a_uv_cell_refresh(const void *h) {
    uv_handle_cell c = {0};
    d9a_object o;
    if (d9a_table_get(h, &o)) {
        uv_cb_record r;
        memset(&r, 0, sizeof r); /* padding-free, but compared with memcmp: zero it all */
        memcpy(r.fn, o.fn, sizeof r.fn);
        memcpy(r.loc, o.loc, sizeof r.loc);
        const uv_cb_record *rec = intern(&r);
        if (rec) c = (uv_handle_cell){o.task, rec, uv_handle_cell_check(h, o.task, rec)};
    }
    memcpy(((uv_handle_t *)h)->u.reserved, &c, sizeof c);
}

bool d9a_uv_table_callback(const void *h, unsigned role, unsigned loc_role, d9a_fn *fn,
                           const d9_loc **loc, uint64_t *task) {
    if (!d9a_table_callback(h, role, fn, loc, task)) return false;
    d9a_fn other;
    return loc_role == role || d9a_table_callback(h, loc_role, &other, loc, task);
}
