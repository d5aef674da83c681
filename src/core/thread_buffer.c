#include "core/thread_buffer.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/clock.h"

__thread d9_thread *d9__tls_thread __attribute__((tls_model("initial-exec")));
#define tls_thread d9__tls_thread

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static d9_thread *g_threads;
static bool g_collector_running;
static uint64_t g_ring_words = 1024 * 1024 / 8;
static pthread_key_t g_key;
void (*volatile d9_thread_register_hook)(d9_thread *t);
static pthread_once_t g_key_once = PTHREAD_ONCE_INIT;

void d9_thread_set_ring_words(uint64_t words) {
    pthread_mutex_lock(&g_lock);
    g_ring_words = words;
    pthread_mutex_unlock(&g_lock);
}

static void free_thread(d9_thread *t) {
    if (t->schedstat_fd >= 0) d9_fd_close_if_ours(t->schedstat_fd, t->schedstat_id);
    munmap(t->ring, (t->mask + 1) * sizeof(uint64_t));
    free(t);
}

static void unlink_thread_locked(d9_thread *t) {
    for (d9_thread **p = &g_threads; *p; p = &(*p)->next) {
        if (*p == t) {
            *p = t->next;
            return;
        }
    }
}

/* pthread key destructor: the thread is exiting. */
static void on_thread_exit(void *arg) {
    d9_thread *t = arg;
    tls_thread = NULL;
    pthread_mutex_lock(&g_lock);
    if (g_collector_running) {
        atomic_store_explicit(&t->exited, 1, memory_order_release);
    } else {
        unlink_thread_locked(t);
        free_thread(t);
    }
    pthread_mutex_unlock(&g_lock);
}

static void make_key(void) { pthread_key_create(&g_key, on_thread_exit); }

d9_thread *d9_thread_register(void) {
    d9_thread *t;
    pthread_once(&g_key_once, make_key);
    pthread_mutex_lock(&g_lock);
    uint64_t words = g_ring_words;
    pthread_mutex_unlock(&g_lock);

    t = aligned_alloc(64, (sizeof *t + 63) & ~(size_t)63);
    if (!t) return NULL;
    memset(t, 0, sizeof *t);
    /* Populated up front: a first-touch page fault on the hot path costs ~100x an event. */
    void *ring = mmap(NULL, words * sizeof(uint64_t), PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (ring == MAP_FAILED) {
        free(t);
        return NULL;
    }
    t->ring = ring;
    t->mask = words - 1;
    t->limit = words;
    t->schedstat_fd = -1;
    t->worker_pending = UINT32_MAX;
    t->tid = gettid();
    if (pthread_getname_np(pthread_self(), t->name, sizeof t->name) != 0) t->name[0] = 0;
    atomic_init(&t->worker_id, 255);
    t->c_worker = 255;
    t->c_ss_wait = D9_NS_UNKNOWN;

    pthread_mutex_lock(&g_lock);
    t->next = g_threads;
    g_threads = t;
    pthread_mutex_unlock(&g_lock);
    pthread_setspecific(g_key, t);
    tls_thread = t;
    void (*hook)(d9_thread *) = d9_thread_register_hook;
    if (hook) hook(t);
    return t;
}

/* Room for n contiguous words at head (padding to the wrap point if needed)? */
static bool fits(d9_thread *t, uint64_t tail, uint64_t n) {
    uint64_t cap = t->mask + 1;
    uint64_t boundary = (t->head & ~t->mask) + cap;
    if (t->head + n > boundary) {
        if (boundary + n > tail + cap) return false;
        t->ring[t->head & t->mask] = D9_REC_HEADER(0, D9_REC_PAD);
        t->head = boundary;
    }
    if (t->head + n > tail + cap) return false;
    uint64_t wrap = (t->head & ~t->mask) + cap;
    t->limit = tail + cap < wrap ? tail + cap : wrap;
    return true;
}

static void write_worker(d9_thread *t, uint32_t id) {
    uint64_t *r = t->ring + (t->head & t->mask);
    if (id == 255) {
        r[0] = D9_REC_HEADER(d9_clock_ticks(), D9_REC_WORKER_END);
        d9_thread_commit(t, D9_REC_WORDS_WORKER_END);
    } else {
        r[0] = D9_REC_HEADER(d9_clock_ticks(), D9_REC_WORKER_BEGIN);
        r[1] = id;
        d9_thread_commit(t, D9_REC_WORDS_WORKER_BEGIN);
    }
}

void d9_thread_record_worker(d9_thread *t, uint32_t id) {
    uint64_t tail = atomic_load_explicit(&t->tail, memory_order_acquire);
    if (t->worker_pending == UINT32_MAX && !t->drop_pending && fits(t, tail, D9_REC_WORDS_WORKER_BEGIN)) {
        write_worker(t, id);
        return;
    }
    t->worker_pending = id;
    t->limit = t->head; /* the next record takes the slow path and writes it first */
}

bool d9_thread_make_room(d9_thread *t, uint64_t words) {
    uint64_t tail = atomic_load_explicit(&t->tail, memory_order_acquire);
    if (t->worker_pending != UINT32_MAX) {
        if (!fits(t, tail, D9_REC_WORDS_WORKER_BEGIN)) goto drop;
        write_worker(t, t->worker_pending);
        t->worker_pending = UINT32_MAX;
    }
    if (t->drop_pending) {
        if (!fits(t, tail, D9_REC_WORDS_DROPPED + words)) goto drop;
        uint64_t *r = t->ring + (t->head & t->mask);
        r[0] = D9_REC_HEADER(d9_clock_ticks(), D9_REC_DROPPED);
        r[1] = atomic_load_explicit(&t->drops_total, memory_order_relaxed);
        d9_thread_commit(t, D9_REC_WORDS_DROPPED);
        t->drop_pending = false;
    }
    if (fits(t, tail, words)) return true;
drop:
    atomic_store_explicit(&t->drops_total,
                          atomic_load_explicit(&t->drops_total, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    t->drop_pending = true;
    t->limit = t->head; /* every later event takes this path until the DROPPED record is out */
    return false;
}

d9_thread **d9_threads_snapshot(size_t *count) {
    pthread_mutex_lock(&g_lock);
    size_t n = 0;
    for (d9_thread *t = g_threads; t; t = t->next) n++;
    d9_thread **arr = malloc((n ? n : 1) * sizeof *arr);
    size_t i = 0;
    if (arr)
        for (d9_thread *t = g_threads; t; t = t->next) arr[i++] = t;
    pthread_mutex_unlock(&g_lock);
    *count = i;
    return arr;
}

void d9_threads_reap(void) {
    pthread_mutex_lock(&g_lock);
    d9_thread **p = &g_threads;
    while (*p) {
        d9_thread *t = *p;
        if (atomic_load_explicit(&t->exited, memory_order_acquire) &&
            atomic_load_explicit(&t->tail, memory_order_relaxed) ==
                atomic_load_explicit(&t->head_pub, memory_order_acquire)) {
            *p = t->next;
            free_thread(t);
        } else {
            p = &t->next;
        }
    }
    pthread_mutex_unlock(&g_lock);
}

void d9_threads_set_collector_running(bool running) {
    pthread_mutex_lock(&g_lock);
    g_collector_running = running;
    pthread_mutex_unlock(&g_lock);
}

void d9_threads_forget_after_fork(void) {
    /* The lock may have been held by a thread that does not exist in the child. The old
     * buffers are leaked on purpose (their threads are gone), but their schedstat fds are
     * closed now, before the child can reuse those numbers for files of its own, and the
     * forking thread's key is cleared so its destructor never touches the parent's buffer. */
    for (d9_thread *t = g_threads; t; t = t->next)
        if (t->schedstat_fd >= 0) d9_fd_close_if_ours(t->schedstat_fd, t->schedstat_id);
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    g_lock = fresh;
    g_threads = NULL;
    g_collector_running = false;
    if (tls_thread) pthread_setspecific(g_key, NULL);
    tls_thread = NULL;
}
