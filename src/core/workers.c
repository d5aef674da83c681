#include "core/workers.h"
#include <stdbool.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct worker_slot {
    char *runtime;
    uint32_t index;
} worker_slot;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static worker_slot g_slots[D9_MAX_WORKERS];
static uint32_t g_count;

uint32_t d9_workers_id_for(const char *runtime, uint32_t index) {
    if (!runtime) runtime = "default";
    pthread_mutex_lock(&g_lock);
    uint32_t id = 255;
    for (uint32_t i = 0; i < g_count; i++) {
        if (g_slots[i].index == index && strcmp(g_slots[i].runtime, runtime) == 0) {
            id = i;
            goto out;
        }
    }
    if (g_count < D9_MAX_WORKERS) {
        char *copy = strdup(runtime);
        if (copy) {
            g_slots[g_count].runtime = copy;
            g_slots[g_count].index = index;
            id = g_count++;
        }
    }
out:
    pthread_mutex_unlock(&g_lock);
    return id;
}

const char *d9_workers_describe(uint32_t id, uint32_t *index) {
    const char *name = NULL;
    pthread_mutex_lock(&g_lock);
    if (id < g_count) {
        name = g_slots[id].runtime; /* never freed: stable after unlock */
        if (index) *index = g_slots[id].index;
    }
    pthread_mutex_unlock(&g_lock);
    return name;
}

uint32_t d9_workers_count(void) {
    pthread_mutex_lock(&g_lock);
    uint32_t n = g_count;
    pthread_mutex_unlock(&g_lock);
    return n;
}

void d9_workers_each_runtime(void (*fn)(const char *, const char *, void *), void *ctx) {
    pthread_mutex_lock(&g_lock);
    bool done[D9_MAX_WORKERS] = {false};
    for (uint32_t i = 0; i < g_count; i++) {
        if (done[i]) continue;
        char ids[D9_MAX_WORKERS * 4 + 1];
        size_t len = 0;
        for (uint32_t j = i; j < g_count; j++) {
            if (done[j] || strcmp(g_slots[j].runtime, g_slots[i].runtime) != 0) continue;
            done[j] = true;
            len += (size_t)snprintf(ids + len, sizeof ids - len, "%s%u", len ? "," : "", j);
        }
        fn(g_slots[i].runtime, ids, ctx);
    }
    pthread_mutex_unlock(&g_lock);
}

void d9_workers_fork_hold(bool hold) {
    if (hold) pthread_mutex_lock(&g_lock);
    else pthread_mutex_unlock(&g_lock);
}
