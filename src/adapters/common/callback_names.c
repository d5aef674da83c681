#include "callback_names.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "elf_symbols.h"

/* Address -> location, insert-only: writers hold the lock, readers only load (the location is
 * stored before the key is published). Programs have few distinct callbacks; past the
 * capacity names are still right, just resolved again each time. */
#define CACHE_SIZE 4096u

typedef struct cache_slot {
    _Atomic uintptr_t fn;
    const d9_loc *_Atomic loc;
    const char *_Atomic object;
} cache_slot;

static cache_slot g_cache[CACHE_SIZE];
static unsigned g_cached;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

/* Names of the objects callbacks live in, kept forever (a program maps few of them). */
#define MAX_OBJECTS 128
static char *g_objects[MAX_OBJECTS];

static const char *intern_object_locked(const char *name) {
    for (unsigned i = 0; i < MAX_OBJECTS; i++) {
        if (!g_objects[i]) {
            g_objects[i] = strdup(name);
            return g_objects[i] ? g_objects[i] : "";
        }
        if (strcmp(g_objects[i], name) == 0) return g_objects[i];
    }
    return "";
}

static unsigned slot_of(uintptr_t fn) {
    return (unsigned)(((uint64_t)fn * 0x9E3779B97F4A7C15ull) >> 52) & (CACHE_SIZE - 1);
}

static const char *base_name(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

void d9a_describe_function(const void *fn, char *out, size_t len) {
    Dl_info info;
    struct link_map *lm = NULL;
    if (!dladdr1(fn, &info, (void **)&lm, RTLD_DL_LINKMAP)) {
        snprintf(out, len, "%p", fn);
        return;
    }
    if (info.dli_sname && info.dli_saddr == fn) {
        snprintf(out, len, "%s", info.dli_sname);
        return;
    }
    /* not in the dynamic symbol table: a static function, or an executable without -rdynamic */
    if (lm) {
        const char *path = lm->l_name && lm->l_name[0] ? lm->l_name : "/proc/self/exe";
        if (d9a_elf_function_name(path, (uint64_t)((uintptr_t)fn - lm->l_addr), out, len)) return;
    }
    if (info.dli_sname && info.dli_saddr) {
        snprintf(out, len, "%s+0x%lx", info.dli_sname,
                 (unsigned long)((uintptr_t)fn - (uintptr_t)info.dli_saddr));
        return;
    }
    const char *obj = info.dli_fname && info.dli_fname[0] ? base_name(info.dli_fname) : "?";
    snprintf(out, len, "%s+0x%lx", obj, (unsigned long)((uintptr_t)fn - (uintptr_t)info.dli_fbase));
}

static const cache_slot *lookup(uintptr_t key) {
    unsigned i = slot_of(key);
    for (unsigned n = 0; n < CACHE_SIZE; n++, i = (i + 1) & (CACHE_SIZE - 1)) {
        uintptr_t k = atomic_load_explicit(&g_cache[i].fn, memory_order_acquire);
        if (k == key) return &g_cache[i];
        if (k == 0) return NULL;
    }
    return NULL;
}

static const char *object_of(const void *fn) {
    Dl_info info;
    if (!dladdr(fn, &info) || !info.dli_fname) return "";
    return base_name(info.dli_fname);
}

/* Resolve `fn` (slow: symbol tables) and cache it; *loc and *object are set either way. */
static void resolve(uintptr_t key, const d9_loc **loc, const char **object) {
    pthread_mutex_lock(&g_lock);
    const cache_slot *s = lookup(key);
    if (s) {
        *loc = atomic_load_explicit(&s->loc, memory_order_relaxed);
        *object = atomic_load_explicit(&s->object, memory_order_relaxed);
    } else {
        char name[256];
        d9a_describe_function((const void *)key, name, sizeof name);
        *loc = d9_loc_intern(name);
        *object = intern_object_locked(object_of((const void *)key));
        if (*loc && g_cached < CACHE_SIZE - CACHE_SIZE / 8) {
            unsigned i = slot_of(key);
            while (atomic_load_explicit(&g_cache[i].fn, memory_order_relaxed))
                i = (i + 1) & (CACHE_SIZE - 1);
            atomic_store_explicit(&g_cache[i].loc, *loc, memory_order_relaxed);
            atomic_store_explicit(&g_cache[i].object, *object, memory_order_relaxed);
            atomic_store_explicit(&g_cache[i].fn, key, memory_order_release);
            g_cached++;
        }
    }
    pthread_mutex_unlock(&g_lock);
}

const d9_loc *d9a_callback_loc(const void *fn) {
    uintptr_t key = (uintptr_t)fn;
    if (!key) return NULL;
    const cache_slot *s = lookup(key);
    if (__builtin_expect(s != NULL, 1)) return atomic_load_explicit(&s->loc, memory_order_relaxed);
    const d9_loc *loc;
    const char *object;
    resolve(key, &loc, &object);
    return loc;
}

const char *d9a_callback_object(const void *fn) {
    uintptr_t key = (uintptr_t)fn;
    if (!key) return "";
    const cache_slot *s = lookup(key);
    if (__builtin_expect(s != NULL, 1))
        return atomic_load_explicit(&s->object, memory_order_relaxed);
    const d9_loc *loc;
    const char *object;
    resolve(key, &loc, &object);
    return object;
}

void d9a_names_fork_hold(bool hold) {
    if (hold) pthread_mutex_lock(&g_lock);
    else pthread_mutex_unlock(&g_lock);
}
