/* The side table: for each handle, request, event or watcher whose callbacks an adapter
 * swapped for trampolines, the original callbacks (up to D9A_ROLES of them: read and alloc,
 * close, ...), their locations, the loop, and one saved argument.
 *
 * Bounded (DIAL9_ADAPTER_MAX_OBJECTS live objects, default 65536; an object that does not fit
 * is simply not recorded) and split into 64 shards. Readers never lock or write: a shard's
 * sequence counter tells them to retry if a writer moved things meanwhile, so a trampoline's
 * lookup costs a hash and a few loads. Writers (registration, close) take the shard's lock: a
 * word swapped with one atomic instruction, since a writer holds it for a few dozen
 * instructions and a request pays two of them (put, take); a pthread mutex cost ~110 more
 * instructions per request. A fork waits for every writer (d9a_table_fork_*).
 * Entries are removed without tombstones (backward-shift deletion), so churn never slows the
 * table down. */
#ifndef D9_ADAPTERS_OBJECT_TABLE_H
#define D9_ADAPTERS_OBJECT_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dial9/dial9.h"
#include "real_symbol.h"

#define D9A_ROLES 4

typedef void (*d9a_fn)(void);

typedef struct d9a_object {
    uint64_t task;        /* the task id of this registration (d9_task_id_new), never 0 */
    const void *loop;
    d9a_fn fn[D9A_ROLES];
    const d9_loc *loc[D9A_ROLES];
    void *arg;            /* adapter-defined (libevent: the application's callback argument) */
    uintptr_t flags;      /* adapter-defined */
} d9a_object;

/* The hot path: callback `role` of `key`, its location and the entry's task. False when `key`
 * is unknown (the outputs then NULL, NULL, 0). Inline (below): a hash, a few loads, no call. */
static inline bool d9a_table_callback(const void *key, unsigned role, d9a_fn *fn,
                                      const d9_loc **loc, uint64_t *task);
/* The same, with the saved argument. */
D9A_HIDDEN bool d9a_table_callback_arg(const void *key, unsigned role, d9a_fn *fn,
                                       const d9_loc **loc, void **arg, uint64_t *task);
D9A_HIDDEN bool d9a_table_get(const void *key, d9a_object *out);
D9A_HIDDEN bool d9a_table_contains(const void *key);
/* The task of `key`, 0 when `key` is unknown. */
D9A_HIDDEN uint64_t d9a_table_task(const void *key);

/* Store `obj` for `key`. An obj->task of 0 keeps the task of the entry it replaces, or takes
 * a new id (d9_task_id_new) for a new entry; obj->task is set to the stored task. Returns 1 when inserted, 0 when it replaced an
 * entry (copied to *old if old is not NULL), -1 when the table is full (nothing stored). */
D9A_HIDDEN int d9a_table_put(const void *key, d9a_object *obj, d9a_object *old);

/* Set callback `role` of `key` (creating the entry, for `loop`, with a new task id, when
 * absent). Same returns. */
D9A_HIDDEN int d9a_table_set_callback(const void *key, const void *loop, unsigned role,
                                      d9a_fn fn, const d9_loc *loc);
/* The same; *task says which task a created entry gets (0: a new id) and is set to the
 * entry's task on success. */
D9A_HIDDEN int d9a_table_set_callback_task(const void *key, const void *loop, unsigned role,
                                           d9a_fn fn, const d9_loc *loc, uint64_t *task);

/* Remove `key`, copying its entry to *out (may be NULL). False when it was not there. */
D9A_HIDDEN bool d9a_table_take(const void *key, d9a_object *out);
/* The same, keeping only callback `role`, its location and the task (an object's last
 * callback: a request completing). */
D9A_HIDDEN bool d9a_table_take_callback(const void *key, unsigned role, d9a_fn *fn,
                                        const d9_loc **loc, uint64_t *task);

/* Remove every entry of `loop`, calling each(key, entry, ctx) for it. `each` runs under a
 * shard lock: it must not use the table. Returns how many were removed. */
D9A_HIDDEN size_t d9a_table_take_loop(const void *loop,
                                      void (*each)(const void *key, const d9a_object *obj,
                                                   void *ctx),
                                      void *ctx);

/* Call each(key, entry, ctx) for every entry (under its shard's lock: `each` must not use the
 * table). */
D9A_HIDDEN void d9a_table_each(void (*each)(const void *key, const d9a_object *obj, void *ctx),
                               void *ctx);

typedef struct d9a_table_stats {
    uint64_t live;        /* entries now */
    uint64_t capacity;    /* entries the table accepts at most */
    uint64_t rejected;    /* inserts refused because a shard was full */
} d9a_table_stats;
D9A_HIDDEN void d9a_table_get_stats(d9a_table_stats *out);

/* fork(): the prepare handler takes every shard's lock, so that the child never inherits a
 * half-moved shard or a lock that no thread of the child will release; the parent and the
 * child release them (fork_guard.c registers these). */
D9A_HIDDEN void d9a_table_fork_prepare(void);
D9A_HIDDEN void d9a_table_fork_release(void);

/* ------------------------------------------------------------------------------------------
 * Layout, for the inline reader. A shard's readers load seq, probe, load seq again: if it
 * is odd or changed, a writer was moving entries, and they retry.
 * ---------------------------------------------------------------------------------------- */

#include <stdatomic.h>

#define D9A_SHARD_BITS 6
#define D9A_SHARDS (1u << D9A_SHARD_BITS)

enum { D9A_W_TASK, D9A_W_LOOP, D9A_W_FN, D9A_W_LOC = D9A_W_FN + D9A_ROLES, D9A_W_ARG = D9A_W_LOC + D9A_ROLES,
       D9A_W_FLAGS, D9A_W_COUNT };

typedef struct d9a_slot {
    _Atomic uintptr_t key; /* 0: empty */
    _Atomic uintptr_t w[D9A_W_COUNT];
} d9a_slot;

typedef struct d9a_shard {
    _Atomic uint32_t seq;        /* odd while a writer changes the shard */
    _Atomic uint32_t lock;       /* 1 while a writer holds the shard */
    d9a_slot *_Atomic slots;     /* allocated on the shard's first insert */
    uint32_t count;
} __attribute__((aligned(64))) d9a_shard;

D9A_HIDDEN extern d9a_shard d9a_shards[D9A_SHARDS];
D9A_HIDDEN extern uint32_t d9a_slot_mask; /* slots per shard - 1 */

static inline uint64_t d9a_hash_key(uintptr_t key) {
    return (uint64_t)key * 0x9E3779B97F4A7C15ull;
}
static inline d9a_shard *d9a_shard_of(uint64_t h) {
    return &d9a_shards[h >> (64 - D9A_SHARD_BITS)];
}
static inline uint32_t d9a_home_of(uint64_t h, uint32_t mask) { return (uint32_t)(h >> 20) & mask; }

/* A reader or writer waiting for a writer: spin a little, then let the writer run (on a
 * busy 2-CPU host it may have been preempted while holding the shard). */
D9A_HIDDEN void d9a_wait_for_writer(unsigned *spins);

/* Slot of `key` in a snapshot of shard `sh` (NULL when absent). */
static inline d9a_slot *d9a_probe(d9a_slot *tab, uint64_t h, uintptr_t key) {
    uint32_t mask = d9a_slot_mask;
    for (uint32_t i = d9a_home_of(h, mask), n = 0; n <= mask; n++, i = (i + 1) & mask) {
        uintptr_t k = atomic_load_explicit(&tab[i].key, memory_order_acquire);
        if (k == key) return &tab[i];
        if (k == 0) return NULL;
    }
    return NULL;
}

static inline bool d9a_table_callback(const void *key, unsigned role, d9a_fn *fn,
                                      const d9_loc **loc, uint64_t *task) {
    uint64_t h = d9a_hash_key((uintptr_t)key);
    d9a_shard *sh = d9a_shard_of(h);
    for (unsigned spins = 0;;) {
        uint32_t s1 = atomic_load_explicit(&sh->seq, memory_order_acquire);
        d9a_slot *tab = atomic_load_explicit(&sh->slots, memory_order_acquire);
        if (__builtin_expect(!tab, 0)) {
            /* every path sets the outputs: callers compare them after a false return's
             * short-circuit, which gcc -Os cannot always follow (maybe-uninitialized) */
            *fn = NULL;
            *loc = NULL;
            *task = 0;
            return false;
        }
        if (__builtin_expect(s1 & 1, 0)) {
            d9a_wait_for_writer(&spins);
            continue;
        }
        d9a_slot *s = d9a_probe(tab, h, (uintptr_t)key);
        uintptr_t f = 0, l = 0, k = 0;
        if (s) {
            f = atomic_load_explicit(&s->w[D9A_W_FN + role], memory_order_acquire);
            l = atomic_load_explicit(&s->w[D9A_W_LOC + role], memory_order_acquire);
            k = atomic_load_explicit(&s->w[D9A_W_TASK], memory_order_acquire);
        }
        /* the loads above are acquire loads, so this one cannot move before them */
        if (atomic_load_explicit(&sh->seq, memory_order_relaxed) != s1) continue;
        *fn = (d9a_fn)f;
        *loc = (const d9_loc *)l;
        *task = k;
        return s != NULL;
    }
}

#endif
