#include "object_table.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_MAX_OBJECTS 65536u

/* The write path is a handful of small steps; a call per step (with this build's frame
 * pointers) cost more than the steps, so they are inlined into each operation. */
#define INLINE static inline __attribute__((always_inline))

d9a_shard d9a_shards[D9A_SHARDS];
uint32_t d9a_slot_mask;
static uint32_t g_max_count; /* entries a shard accepts */
static _Atomic uint64_t g_rejected;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static _Atomic bool g_ready; /* init_table ran: writers skip pthread_once */

static void init_table(void) {
    uint64_t total = DEFAULT_MAX_OBJECTS;
    const char *env = getenv("DIAL9_ADAPTER_MAX_OBJECTS");
    if (env && *env) {
        char *end;
        unsigned long long v = strtoull(env, &end, 10);
        /* digits only, as every variable (the configuration refuses the rest and records
         * nothing; strtoull alone would take a sign or leading spaces) */
        bool digits = env[0] >= '0' && env[0] <= '9';
        if (digits && *end == 0 && v >= D9A_SHARDS && v <= (1ull << 30)) total = v;
        else fprintf(stderr, "dial9: ignoring DIAL9_ADAPTER_MAX_OBJECTS=%s\n", env);
    }
    uint64_t per_shard = (total + D9A_SHARDS - 1) / D9A_SHARDS;
    uint32_t cap = 16;
    while (cap < per_shard + per_shard / 7) cap <<= 1; /* keep the load under 7/8 */
    d9a_slot_mask = cap - 1;
    g_max_count = (uint32_t)per_shard;
    atomic_store_explicit(&g_ready, true, memory_order_release);
}

static inline void ensure_init(void) {
    if (__builtin_expect(!atomic_load_explicit(&g_ready, memory_order_acquire), 0))
        pthread_once(&g_once, init_table);
}

void d9a_wait_for_writer(unsigned *spins) {
    if (++*spins < 64) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
        return;
    }
    sched_yield();
}

/* ---------------------------------------------------------------- readers */

/* Runs `body` over the slot of `key` (NULL if absent) until it saw a stable shard. */
#define READ_STABLE(key_, found_slot, body)                                                \
    do {                                                                                   \
        uint64_t h_ = d9a_hash_key((uintptr_t)(key_));                                     \
        d9a_shard *sh_ = d9a_shard_of(h_);                                                 \
        for (unsigned spins_ = 0;;) {                                                      \
            uint32_t s1_ = atomic_load_explicit(&sh_->seq, memory_order_acquire);          \
            d9a_slot *tab_ = atomic_load_explicit(&sh_->slots, memory_order_acquire);      \
            if (!tab_) return false;                                                       \
            if (s1_ & 1) {                                                                 \
                d9a_wait_for_writer(&spins_);                                              \
                continue;                                                                  \
            }                                                                              \
            d9a_slot *found_slot = d9a_probe(tab_, h_, (uintptr_t)(key_));                 \
            body;                                                                          \
            /* the loads above are acquire loads, so this one cannot move before them */   \
            if (atomic_load_explicit(&sh_->seq, memory_order_relaxed) == s1_) break;       \
        }                                                                                  \
    } while (0)

INLINE uintptr_t load_word(d9a_slot *s, unsigned i) {
    return atomic_load_explicit(&s->w[i], memory_order_acquire);
}

bool d9a_table_callback_arg(const void *key, unsigned role, d9a_fn *fn, const d9_loc **loc,
                            void **arg, uint64_t *task) {
    bool found = false;
    uintptr_t f = 0, l = 0, a = 0, k = 0;
    READ_STABLE(key, s, {
        found = s != NULL;
        if (s) {
            f = load_word(s, D9A_W_FN + role);
            l = load_word(s, D9A_W_LOC + role);
            a = load_word(s, D9A_W_ARG);
            k = load_word(s, D9A_W_TASK);
        }
    });
    *fn = (d9a_fn)f;
    *loc = (const d9_loc *)l;
    *arg = (void *)a;
    *task = k;
    return found;
}

static uint64_t task_of(const void *key) {
    uint64_t task = 0;
    READ_STABLE(key, s, { task = s ? load_word(s, D9A_W_TASK) : 0; });
    return task;
}

uint64_t d9a_table_task(const void *key) { return task_of(key); }

INLINE void copy_out(d9a_slot *s, d9a_object *o) {
    o->task = load_word(s, D9A_W_TASK);
    o->loop = (const void *)load_word(s, D9A_W_LOOP);
    for (unsigned r = 0; r < D9A_ROLES; r++) {
        o->fn[r] = (d9a_fn)load_word(s, D9A_W_FN + r);
        o->loc[r] = (const d9_loc *)load_word(s, D9A_W_LOC + r);
    }
    o->arg = (void *)load_word(s, D9A_W_ARG);
    o->flags = load_word(s, D9A_W_FLAGS);
}

bool d9a_table_get(const void *key, d9a_object *out) {
    bool found = false;
    READ_STABLE(key, s, {
        found = s != NULL;
        if (s) copy_out(s, out);
    });
    return found;
}

bool d9a_table_contains(const void *key) {
    bool found = false;
    READ_STABLE(key, s, { found = s != NULL; });
    return found;
}

/* ---------------------------------------------------------------- writers */

INLINE void store_word(d9a_slot *s, unsigned i, uintptr_t v) {
    atomic_store_explicit(&s->w[i], v, memory_order_release);
}

INLINE void copy_in(d9a_slot *s, const d9a_object *o) {
    store_word(s, D9A_W_TASK, (uintptr_t)o->task);
    store_word(s, D9A_W_LOOP, (uintptr_t)o->loop);
    for (unsigned r = 0; r < D9A_ROLES; r++) {
        store_word(s, D9A_W_FN + r, (uintptr_t)o->fn[r]);
        store_word(s, D9A_W_LOC + r, (uintptr_t)o->loc[r]);
    }
    store_word(s, D9A_W_ARG, (uintptr_t)o->arg);
    store_word(s, D9A_W_FLAGS, o->flags);
}

static void move_slot(d9a_slot *to, d9a_slot *from) {
    for (unsigned i = 0; i < D9A_W_COUNT; i++) store_word(to, i, load_word(from, i));
    atomic_store_explicit(&to->key, atomic_load_explicit(&from->key, memory_order_relaxed),
                          memory_order_release);
}

static __attribute__((noinline)) void shard_lock_contended(d9a_shard *sh) {
    unsigned spins = 0;
    do {
        while (atomic_load_explicit(&sh->lock, memory_order_relaxed)) d9a_wait_for_writer(&spins);
    } while (atomic_exchange_explicit(&sh->lock, 1, memory_order_acquire));
}

INLINE void shard_lock(d9a_shard *sh) {
    if (__builtin_expect(atomic_exchange_explicit(&sh->lock, 1, memory_order_acquire), 0))
        shard_lock_contended(sh);
}

INLINE void shard_unlock(d9a_shard *sh) {
    atomic_store_explicit(&sh->lock, 0, memory_order_release);
}

/* The shard's slots, allocated on its first insert (outside the lock: a shard's table is
 * ~230 KB, calloc may map it; a writer that loses the race frees its copy). */
static __attribute__((noinline)) d9a_slot *allocate_slots(d9a_shard *sh) {
    d9a_slot *tab = NULL;
    d9a_slot *fresh = calloc((size_t)d9a_slot_mask + 1, sizeof(d9a_slot));
    if (!fresh) return NULL;
    if (atomic_compare_exchange_strong_explicit(&sh->slots, &tab, fresh, memory_order_acq_rel,
                                                memory_order_acquire))
        return fresh;
    free(fresh);
    return tab;
}

INLINE d9a_slot *slots_of(d9a_shard *sh, bool create) {
    d9a_slot *tab = atomic_load_explicit(&sh->slots, memory_order_acquire);
    if (__builtin_expect(tab != NULL, 1) || !create) return tab;
    return allocate_slots(sh);
}

/* Writers: the shard lock is held; readers are told to retry while seq is odd. A release
 * store of any slot word orders the odd seq before it, so a reader that sees new data also
 * sees the changed seq on its second read. NULL (nothing locked) when the shard has no
 * table and `create` is false or its allocation failed. */
INLINE d9a_shard *lock_shard(const void *key, uint64_t *h, bool create, d9a_slot **tab) {
    ensure_init();
    *h = d9a_hash_key((uintptr_t)key);
    d9a_shard *sh = d9a_shard_of(*h);
    *tab = slots_of(sh, create);
    if (!*tab) return NULL;
    shard_lock(sh);
    return sh;
}

INLINE void begin_write(d9a_shard *sh) {
    uint32_t s = atomic_load_explicit(&sh->seq, memory_order_relaxed);
    atomic_store_explicit(&sh->seq, s + 1, memory_order_relaxed);
}

INLINE void end_write(d9a_shard *sh) {
    uint32_t s = atomic_load_explicit(&sh->seq, memory_order_relaxed);
    atomic_store_explicit(&sh->seq, s + 1, memory_order_release);
}

/* Index of `key` in the locked shard, or of the empty slot ending its probe (with *found
 * false); UINT32_MAX when the d9a_shard is full without it. */
INLINE uint32_t find_locked(d9a_slot *tab, uintptr_t key, uint64_t h, bool *found) {
    uint32_t i = d9a_home_of(h, d9a_slot_mask);
    for (uint32_t n = 0; n <= d9a_slot_mask; n++, i = (i + 1) & d9a_slot_mask) {
        uintptr_t k = atomic_load_explicit(&tab[i].key, memory_order_relaxed);
        if (k == key || k == 0) {
            *found = k == key;
            return i;
        }
    }
    *found = false;
    return UINT32_MAX;
}

static void warn_full(void) {
    static atomic_flag said = ATOMIC_FLAG_INIT;
    if (!atomic_flag_test_and_set(&said))
        fprintf(stderr, "dial9: the loop adapter table is full; new handles, events and "
                        "watchers are not recorded (raise DIAL9_ADAPTER_MAX_OBJECTS)\n");
}

/* Changes `obj` (a copy of the entry, zeroed when created) before it is stored. */
typedef void (*update_fn)(d9a_object *obj, bool created, const void *ctx);

/* Store at `key` either `update` applied to its entry, or (update NULL) the object `ctx`
 * as it is: a put, which need not read the entry it replaces. */
INLINE int upsert(const void *key, update_fn update, const void *ctx, d9a_object *old,
                  uint64_t *task_out) {
    if (!key) return -1;
    uint64_t h;
    d9a_slot *tab;
    d9a_shard *sh = lock_shard(key, &h, true, &tab);
    int rc = -1;
    bool found = false;
    uint32_t i = sh ? find_locked(tab, (uintptr_t)key, h, &found) : UINT32_MAX;
    if (i != UINT32_MAX && (found || sh->count < g_max_count)) {
        d9a_slot *s = &tab[i];
        uint64_t had = found ? load_word(s, D9A_W_TASK) : 0, task;
        if (found && old) copy_out(s, old);
        begin_write(sh);
        if (update) {
            d9a_object obj;
            if (found) copy_out(s, &obj);
            else memset(&obj, 0, sizeof obj);
            update(&obj, !found, ctx);
            copy_in(s, &obj);
            task = obj.task;
        } else {
            copy_in(s, ctx);
            task = ((const d9a_object *)ctx)->task;
        }
        if (!task) {
            task = had ? had : d9_task_id_new();
            store_word(s, D9A_W_TASK, (uintptr_t)task);
        }
        if (!found) {
            atomic_store_explicit(&s->key, (uintptr_t)key, memory_order_release);
            sh->count++;
        }
        end_write(sh);
        if (task_out) *task_out = task;
        rc = found ? 0 : 1;
    }
    if (sh) shard_unlock(sh);
    if (rc < 0) {
        atomic_fetch_add_explicit(&g_rejected, 1, memory_order_relaxed);
        warn_full();
    }
    return rc;
}

int d9a_table_put(const void *key, d9a_object *obj, d9a_object *old) {
    return upsert(key, NULL, obj, old, &obj->task);
}

typedef struct set_callback_args {
    const void *loop;
    unsigned role;
    d9a_fn fn;
    const d9_loc *loc;
    uint64_t task;
} set_callback_args;

static void set_one(d9a_object *obj, bool created, const void *ctx) {
    const set_callback_args *a = ctx;
    if (created) {
        obj->loop = a->loop;
        obj->task = a->task;
    }
    obj->fn[a->role] = a->fn;
    obj->loc[a->role] = a->loc;
}

int d9a_table_set_callback_task(const void *key, const void *loop, unsigned role, d9a_fn fn,
                                const d9_loc *loc, uint64_t *task) {
    if (role >= D9A_ROLES) return -1;
    set_callback_args a = {loop, role, fn, loc, *task};
    return upsert(key, set_one, &a, NULL, task);
}

int d9a_table_set_callback(const void *key, const void *loop, unsigned role, d9a_fn fn,
                           const d9_loc *loc) {
    uint64_t task = 0;
    return d9a_table_set_callback_task(key, loop, role, fn, loc, &task);
}

/* Backward-shift deletion of slot i: later entries of the same probe run move up, so no
 * tombstone is left behind. */
static void delete_at(d9a_slot *tab, uint32_t i) {
    uint32_t mask = d9a_slot_mask;
    for (;;) {
        uint32_t j = i;
        for (;;) {
            j = (j + 1) & mask;
            uintptr_t k = atomic_load_explicit(&tab[j].key, memory_order_relaxed);
            if (k == 0) {
                atomic_store_explicit(&tab[i].key, 0, memory_order_release);
                return;
            }
            uint32_t r = d9a_home_of(d9a_hash_key(k), mask);
            bool stays = i <= j ? (i < r && r <= j) : (i < r || r <= j);
            if (!stays) break;
        }
        move_slot(&tab[i], &tab[j]);
        i = j;
    }
}

/* Removes `key`, first calling keep(slot, ctx) on its entry. */
INLINE bool take(const void *key, void (*keep)(d9a_slot *s, void *ctx), void *ctx) {
    if (!key) return false;
    uint64_t h;
    d9a_slot *tab;
    d9a_shard *sh = lock_shard(key, &h, false, &tab);
    if (!sh) return false;
    bool found = false;
    uint32_t i = find_locked(tab, (uintptr_t)key, h, &found);
    if (found) {
        if (keep) keep(&tab[i], ctx);
        begin_write(sh);
        delete_at(tab, i);
        sh->count--;
        end_write(sh);
    }
    shard_unlock(sh);
    return found;
}

INLINE void keep_all(d9a_slot *s, void *ctx) { copy_out(s, ctx); }

bool d9a_table_take(const void *key, d9a_object *out) {
    return take(key, out ? keep_all : NULL, out);
}

typedef struct callback_out {
    unsigned role;
    d9a_fn fn;
    const d9_loc *loc;
    uint64_t task;
} callback_out;

INLINE void keep_callback(d9a_slot *s, void *ctx) {
    callback_out *c = ctx;
    c->fn = (d9a_fn)load_word(s, D9A_W_FN + c->role);
    c->loc = (const d9_loc *)load_word(s, D9A_W_LOC + c->role);
    c->task = load_word(s, D9A_W_TASK);
}

bool d9a_table_take_callback(const void *key, unsigned role, d9a_fn *fn, const d9_loc **loc,
                             uint64_t *task) {
    callback_out c = {.role = role};
    bool found = role < D9A_ROLES && take(key, keep_callback, &c);
    *fn = c.fn;
    *loc = c.loc;
    *task = c.task;
    return found;
}

size_t d9a_table_take_loop(const void *loop,
                           void (*each)(const void *key, const d9a_object *obj, void *ctx),
                           void *ctx) {
    ensure_init();
    size_t removed = 0;
    for (unsigned s = 0; s < D9A_SHARDS; s++) {
        d9a_shard *sh = &d9a_shards[s];
        shard_lock(sh);
        d9a_slot *tab = atomic_load_explicit(&sh->slots, memory_order_relaxed);
        if (tab && sh->count) {
            begin_write(sh);
            for (uint32_t i = 0; i <= d9a_slot_mask; i++) {
                /* a deletion may move another entry of this loop into slot i: look again */
                for (;;) {
                    uintptr_t k = atomic_load_explicit(&tab[i].key, memory_order_relaxed);
                    if (!k || load_word(&tab[i], D9A_W_LOOP) != (uintptr_t)loop) break;
                    d9a_object obj;
                    copy_out(&tab[i], &obj);
                    if (each) each((const void *)k, &obj, ctx);
                    delete_at(tab, i);
                    sh->count--;
                    removed++;
                }
            }
            end_write(sh);
        }
        shard_unlock(sh);
    }
    return removed;
}

void d9a_table_each(void (*each)(const void *key, const d9a_object *obj, void *ctx), void *ctx) {
    ensure_init();
    for (unsigned s = 0; s < D9A_SHARDS; s++) {
        d9a_shard *sh = &d9a_shards[s];
        shard_lock(sh);
        d9a_slot *tab = atomic_load_explicit(&sh->slots, memory_order_relaxed);
        for (uint32_t i = 0; tab && sh->count && i <= d9a_slot_mask; i++) {
            uintptr_t k = atomic_load_explicit(&tab[i].key, memory_order_relaxed);
            if (!k) continue;
            d9a_object obj;
            copy_out(&tab[i], &obj);
            each((const void *)k, &obj, ctx);
        }
        shard_unlock(sh);
    }
}

void d9a_table_get_stats(d9a_table_stats *out) {
    ensure_init();
    uint64_t live = 0;
    for (unsigned s = 0; s < D9A_SHARDS; s++) {
        shard_lock(&d9a_shards[s]);
        live += d9a_shards[s].count;
        shard_unlock(&d9a_shards[s]);
    }
    out->live = live;
    out->capacity = (uint64_t)g_max_count * D9A_SHARDS;
    out->rejected = atomic_load_explicit(&g_rejected, memory_order_relaxed);
}

void d9a_table_fork_prepare(void) {
    for (unsigned s = 0; s < D9A_SHARDS; s++) shard_lock(&d9a_shards[s]);
}

void d9a_table_fork_release(void) {
    for (unsigned s = 0; s < D9A_SHARDS; s++) shard_unlock(&d9a_shards[s]);
}
