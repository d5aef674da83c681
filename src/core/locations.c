#include "core/locations.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Names live in fixed-size chunks that never move, so the collector reads them without a
 * lock: an id is published (release) only after its name is in place. */
#define CHUNK_BITS 10
#define CHUNK_SIZE (1u << CHUNK_BITS)
#define MAX_CHUNKS 4096

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static char **g_chunks[MAX_CHUNKS];
static uint32_t g_next_id = 1;

/* Dynamic locations from d9_loc_intern, deduplicated by name. */
typedef struct named_loc {
    d9_loc loc;
    struct named_loc *next;
} named_loc;
static named_loc *g_named[256];

static uint32_t assign_locked(char *name) {
    uint32_t id = g_next_id;
    uint32_t c = id >> CHUNK_BITS;
    if (c >= MAX_CHUNKS) return D9_LOC_UNKNOWN;
    if (!g_chunks[c]) {
        g_chunks[c] = calloc(CHUNK_SIZE, sizeof(char *));
        if (!g_chunks[c]) return D9_LOC_UNKNOWN;
    }
    __atomic_store_n(&g_chunks[c][id & (CHUNK_SIZE - 1)], name, __ATOMIC_RELEASE);
    g_next_id++;
    return id;
}

uint32_t d9_loc_id_slow(const d9_loc *loc) {
    pthread_mutex_lock(&g_lock);
    uint32_t id = __atomic_load_n(&loc->id, __ATOMIC_ACQUIRE);
    if (id == 0) {
        char *name = NULL;
        if (loc->line)
            if (asprintf(&name, "%s:%u", loc->file ? loc->file : "?", loc->line) < 0) name = NULL;
        if (!loc->line) name = strdup(loc->file ? loc->file : "?");
        if (name) {
            id = assign_locked(name);
            if (id == D9_LOC_UNKNOWN) free(name);
            else __atomic_store_n((uint32_t *)&loc->id, id, __ATOMIC_RELEASE);
        }
    }
    pthread_mutex_unlock(&g_lock);
    return id;
}

const char *d9_loc_name(uint32_t id) {
    uint32_t c = id >> CHUNK_BITS;
    if (id == D9_LOC_UNKNOWN || c >= MAX_CHUNKS) return "unknown";
    char **chunk = __atomic_load_n(&g_chunks[c], __ATOMIC_ACQUIRE);
    if (!chunk) return "unknown";
    char *name = __atomic_load_n(&chunk[id & (CHUNK_SIZE - 1)], __ATOMIC_ACQUIRE);
    return name ? name : "unknown";
}

static unsigned hash_name(const char *s) {
    unsigned h = 2166136261u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return h & 255;
}

const d9_loc *d9_loc_intern(const char *name) {
    if (!name) return NULL;
    unsigned h = hash_name(name);
    pthread_mutex_lock(&g_lock);
    named_loc *n = g_named[h];
    while (n && strcmp(n->loc.file, name) != 0) n = n->next;
    if (!n) {
        n = calloc(1, sizeof *n);
        char *copy = n ? strdup(name) : NULL;
        if (!copy) {
            free(n);
            pthread_mutex_unlock(&g_lock);
            return NULL;
        }
        n->loc.file = copy;
        n->loc.function = copy;
        n->next = g_named[h];
        g_named[h] = n;
    }
    pthread_mutex_unlock(&g_lock);
    d9_loc_id(&n->loc);
    return &n->loc;
}

void d9_locations_fork_hold(bool hold) {
    if (hold) pthread_mutex_lock(&g_lock);
    else pthread_mutex_unlock(&g_lock);
}
