#include "backend.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

typedef struct query {
    uint64_t key;
    ex_oneshot *reply;
} query;

struct ex_backend {
    pthread_t thread;
    uint32_t round_us;
    pthread_mutex_t lock;     /* guards the pending array and stopping */
    query *pending;
    size_t len, cap;
    bool stopping;
};

static uint64_t answer_for(uint64_t key) {
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdull;
    return key ^ (key >> 33);
}

/* Take the pending queries and answer them, without the lock (sends wake tasks). */
static bool answer_round(ex_backend *db) {
    pthread_mutex_lock(&db->lock);
    query *batch = db->pending;
    size_t n = db->len;
    bool stopping = db->stopping;
    db->pending = NULL;
    db->len = db->cap = 0;
    pthread_mutex_unlock(&db->lock);
    for (size_t i = 0; i < n; i++) ex_oneshot_send(batch[i].reply, answer_for(batch[i].key));
    free(batch);
    return !stopping;
}

static void *backend_main(void *arg) {
    ex_backend *db = arg;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    do {
        next.tv_nsec += (long)db->round_us * 1000;
        while (next.tv_nsec >= 1000000000) {
            next.tv_nsec -= 1000000000;
            next.tv_sec++;
        }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
    } while (answer_round(db));
    return NULL;
}

ex_backend *ex_backend_start(uint32_t round_us) {
    ex_backend *db = calloc(1, sizeof *db);
    if (!db) return NULL;
    db->round_us = round_us ? round_us : 1;
    pthread_mutex_init(&db->lock, NULL);
    int rc = pthread_create(&db->thread, NULL, backend_main, db);
    if (rc != 0) {
        pthread_mutex_destroy(&db->lock);
        free(db);
        errno = rc;
        return NULL;
    }
    pthread_setname_np(db->thread, "backend");
    return db;
}

int ex_backend_query(ex_backend *db, uint64_t key, ex_oneshot *reply) {
    pthread_mutex_lock(&db->lock);
    if (db->len == db->cap) {
        size_t cap = db->cap ? db->cap * 2 : 64;
        query *q = realloc(db->pending, cap * sizeof *q);
        if (!q) {
            pthread_mutex_unlock(&db->lock);
            ex_oneshot_send(reply, answer_for(key));
            return -1;
        }
        db->pending = q;
        db->cap = cap;
    }
    db->pending[db->len++] = (query){key, reply};
    pthread_mutex_unlock(&db->lock);
    return 0;
}

void ex_backend_stop(ex_backend *db) {
    pthread_mutex_lock(&db->lock);
    db->stopping = true;
    pthread_mutex_unlock(&db->lock);
    pthread_join(db->thread, NULL); /* its last round answers what was still queued */
    pthread_mutex_destroy(&db->lock);
    free(db);
}
