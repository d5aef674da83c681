/* Pending timers in a binary min-heap ordered by deadline; the thread sleeps until the
 * earliest one (or until an earlier one is added) and fires everything that is due. */
#include "timer.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

typedef struct timer_entry {
    uint64_t deadline_ns;
    ex_oneshot *done;
} timer_entry;

struct ex_timer {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t changed;   /* CLOCK_MONOTONIC, for timed waits */
    timer_entry *heap;
    size_t len, cap;
    bool stopping;
};

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void heap_swap(timer_entry *h, size_t a, size_t b) {
    timer_entry t = h[a];
    h[a] = h[b];
    h[b] = t;
}

static void heap_push(ex_timer *tm, timer_entry e) {
    size_t i = tm->len++;
    tm->heap[i] = e;
    while (i > 0 && tm->heap[(i - 1) / 2].deadline_ns > tm->heap[i].deadline_ns) {
        heap_swap(tm->heap, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static timer_entry heap_pop(ex_timer *tm) {
    timer_entry top = tm->heap[0];
    tm->heap[0] = tm->heap[--tm->len];
    for (size_t i = 0;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < tm->len && tm->heap[l].deadline_ns < tm->heap[m].deadline_ns) m = l;
        if (r < tm->len && tm->heap[r].deadline_ns < tm->heap[m].deadline_ns) m = r;
        if (m == i) break;
        heap_swap(tm->heap, i, m);
        i = m;
    }
    return top;
}

static void *timer_main(void *arg) {
    ex_timer *tm = arg;
    pthread_mutex_lock(&tm->lock);
    while (!tm->stopping) {
        if (tm->len == 0) {
            pthread_cond_wait(&tm->changed, &tm->lock);
            continue;
        }
        uint64_t deadline = tm->heap[0].deadline_ns;
        if (deadline > now_ns()) {
            struct timespec until = {(time_t)(deadline / 1000000000u), (long)(deadline % 1000000000u)};
            pthread_cond_timedwait(&tm->changed, &tm->lock, &until);
            continue;
        }
        ex_oneshot *done = heap_pop(tm).done;
        /* Send without our lock held: the send wakes a task, which may add a timer. */
        pthread_mutex_unlock(&tm->lock);
        ex_oneshot_send(done, 1);
        pthread_mutex_lock(&tm->lock);
    }
    /* Fire what is left so no task waits forever. */
    while (tm->len > 0) ex_oneshot_send(heap_pop(tm).done, 1);
    pthread_mutex_unlock(&tm->lock);
    return NULL;
}

ex_timer *ex_timer_start(void) {
    ex_timer *tm = calloc(1, sizeof *tm);
    if (!tm) return NULL;
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&tm->changed, &attr);
    pthread_condattr_destroy(&attr);
    pthread_mutex_init(&tm->lock, NULL);
    int rc = pthread_create(&tm->thread, NULL, timer_main, tm);
    if (rc != 0) {
        pthread_cond_destroy(&tm->changed);
        pthread_mutex_destroy(&tm->lock);
        free(tm);
        errno = rc;
        return NULL;
    }
    pthread_setname_np(tm->thread, "timer");
    return tm;
}

int ex_timer_after(ex_timer *tm, uint64_t delay_us, ex_oneshot *done) {
    timer_entry e = {now_ns() + delay_us * 1000u, done};
    pthread_mutex_lock(&tm->lock);
    if (tm->len == tm->cap) {
        size_t cap = tm->cap ? tm->cap * 2 : 256;
        timer_entry *h = realloc(tm->heap, cap * sizeof *h);
        if (!h) {
            pthread_mutex_unlock(&tm->lock);
            ex_oneshot_send(done, 1);
            return -1;
        }
        tm->heap = h;
        tm->cap = cap;
    }
    bool earliest = tm->len == 0 || e.deadline_ns < tm->heap[0].deadline_ns;
    heap_push(tm, e);
    if (earliest) pthread_cond_signal(&tm->changed);
    pthread_mutex_unlock(&tm->lock);
    return 0;
}

void ex_timer_stop(ex_timer *tm) {
    pthread_mutex_lock(&tm->lock);
    tm->stopping = true;
    pthread_cond_signal(&tm->changed);
    pthread_mutex_unlock(&tm->lock);
    pthread_join(tm->thread, NULL);
    pthread_cond_destroy(&tm->changed);
    pthread_mutex_destroy(&tm->lock);
    free(tm->heap);
    free(tm);
}
