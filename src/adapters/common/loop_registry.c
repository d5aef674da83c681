#include "loop_registry.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "instrument_all.h"

typedef struct loop_entry {
    _Atomic uintptr_t loop;  /* 0: free */
    _Atomic bool instrumented; /* false: only user hooks are kept */
    char name[64];
    uint32_t index;
    void *_Atomic hook_a;
    void *_Atomic hook_b;
    _Atomic uint32_t flags;
    _Atomic bool wrapped; /* its objects hold the trampolines (lazy_wrap.h) */
} loop_entry;

_Atomic int d9a_all_loops;
_Atomic uint32_t d9a_loops_generation = 1;

static loop_entry g_loops[D9A_MAX_LOOPS];
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

void d9_adapters_instrument_all(bool on) {
    atomic_store(&d9a_all_loops, on ? 1 : 0);
    atomic_fetch_add(&d9a_loops_generation, 1);
}

/* Readers scan without the lock: an entry's fields are written before its loop is published
 * (release) and only change under the lock while the generation moves. */
static loop_entry *find(const void *loop) {
    for (unsigned i = 0; i < D9A_MAX_LOOPS; i++)
        if (atomic_load_explicit(&g_loops[i].loop, memory_order_acquire) == (uintptr_t)loop)
            return &g_loops[i];
    return NULL;
}

static uint32_t free_index_locked(const char *name) {
    for (uint32_t index = 0;; index++) {
        bool used = false;
        for (unsigned i = 0; i < D9A_MAX_LOOPS && !used; i++) {
            loop_entry *e = &g_loops[i];
            used = atomic_load_explicit(&e->loop, memory_order_relaxed) && e->instrumented &&
                   e->index == index && strcmp(e->name, name) == 0;
        }
        if (!used) return index;
    }
}

static loop_entry *claim_locked(const void *loop) {
    loop_entry *e = find(loop);
    if (e) return e;
    for (unsigned i = 0; i < D9A_MAX_LOOPS; i++) {
        e = &g_loops[i];
        if (atomic_load_explicit(&e->loop, memory_order_relaxed) == 0) {
            e->instrumented = false;
            e->name[0] = 0;
            e->index = 0;
            atomic_store_explicit(&e->hook_a, NULL, memory_order_relaxed);
            atomic_store_explicit(&e->hook_b, NULL, memory_order_relaxed);
            atomic_store_explicit(&e->flags, 0, memory_order_relaxed);
            atomic_store_explicit(&e->wrapped, false, memory_order_relaxed);
            atomic_store_explicit(&e->loop, (uintptr_t)loop, memory_order_release);
            return e;
        }
    }
    return NULL;
}

static int instrument_locked(const void *loop, const char *name) {
    loop_entry *e = claim_locked(loop);
    if (!e) return -1;
    if (e->instrumented && strcmp(e->name, name) == 0) return 0;
    e->instrumented = false; /* not counted while its index is chosen */
    snprintf(e->name, sizeof e->name, "%s", name);
    e->index = free_index_locked(e->name);
    e->instrumented = true;
    atomic_fetch_add_explicit(&d9a_loops_generation, 1, memory_order_release);
    return 0;
}

int d9a_loop_instrument(const void *loop, const char *name, const char *default_name) {
    if (!loop) return -1;
    pthread_mutex_lock(&g_lock);
    int rc = instrument_locked(loop, name && *name ? name : default_name);
    pthread_mutex_unlock(&g_lock);
    if (rc < 0)
        fprintf(stderr, "dial9: more than %d loops; %p is not recorded\n", D9A_MAX_LOOPS, loop);
    /* a thread that is running this loop right now becomes its worker at once */
    if (rc == 0 && d9a_self.loop == loop) {
        d9a_self.worker_loop = NULL;
        d9a_loop_become_worker(loop, default_name);
    }
    return rc;
}

void d9a_loop_forget(const void *loop) {
    pthread_mutex_lock(&g_lock);
    loop_entry *e = find(loop);
    if (e) {
        e->instrumented = false;
        atomic_store_explicit(&e->loop, 0, memory_order_release);
        atomic_fetch_add_explicit(&d9a_loops_generation, 1, memory_order_release);
    }
    pthread_mutex_unlock(&g_lock);
    if (d9a_self.worker_loop == loop) d9a_self.worker_loop = NULL;
}

bool d9a_loop_recorded_slow(const void *loop) {
    uint32_t gen = atomic_load_explicit(&d9a_loops_generation, memory_order_acquire);
    loop_entry *e = loop ? find(loop) : NULL;
    bool recorded = atomic_load_explicit(&d9a_all_loops, memory_order_relaxed) ||
                    (e && e->instrumented);
    d9a_thread *s = &d9a_self;
    s->cache_loop = loop;
    s->cache_gen = gen;
    s->cache_recorded = recorded;
    s->cache_wrapped = recorded && e ? &e->wrapped : NULL;
    return recorded;
}

void d9a_loop_become_worker(const void *loop, const char *default_name) {
    d9a_thread *s = &d9a_self;
    if (s->worker_loop == loop) return;
    char name[64];
    uint32_t index;
    pthread_mutex_lock(&g_lock);
    loop_entry *e = find(loop);
    if ((!e || !e->instrumented) && atomic_load_explicit(&d9a_all_loops, memory_order_relaxed)) {
        if (instrument_locked(loop, default_name) == 0) e = find(loop);
    }
    bool ok = e && e->instrumented;
    if (ok) {
        memcpy(name, e->name, sizeof name);
        index = e->index;
    }
    pthread_mutex_unlock(&g_lock);
    if (!ok) return;
    d9_worker_begin(name, index);
    s->worker_loop = loop;
}

int d9a_loop_set_user_hooks(const void *loop, void *a, void *b) {
    pthread_mutex_lock(&g_lock);
    loop_entry *e = claim_locked(loop);
    if (e) {
        atomic_store_explicit(&e->hook_a, a, memory_order_release);
        atomic_store_explicit(&e->hook_b, b, memory_order_release);
    }
    pthread_mutex_unlock(&g_lock);
    return e ? 0 : -1;
}

bool d9a_loop_user_hooks(const void *loop, void **a, void **b) {
    loop_entry *e = find(loop);
    if (!e) return false;
    *a = atomic_load_explicit(&e->hook_a, memory_order_acquire);
    *b = atomic_load_explicit(&e->hook_b, memory_order_acquire);
    return true;
}

bool d9a_loop_test_and_set_flag(const void *loop, unsigned bit) {
    loop_entry *e = find(loop);
    if (!e) return false;
    uint32_t mask = 1u << bit;
    return atomic_fetch_or_explicit(&e->flags, mask, memory_order_acq_rel) & mask;
}

bool d9a_loop_flag(const void *loop, unsigned bit) {
    loop_entry *e = find(loop);
    return e && (atomic_load_explicit(&e->flags, memory_order_acquire) & (1u << bit));
}

void d9a_loops_fork_hold(bool hold) {
    if (hold) pthread_mutex_lock(&g_lock);
    else pthread_mutex_unlock(&g_lock);
}
