#include "core/thread_buffer.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/tsan_sync.h"

__thread d9_thread *d9__tls_thread __attribute__((tls_model("initial-exec")));
#define tls_thread d9__tls_thread

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static d9_thread *g_threads;
static bool g_collector_running;

/* The registry's lock. A thread may register inside a blocking call TSan intercepts (its first
 * event an adapter's park), where TSan does not see the mutex: the annotations give it the
 * mutex's edges there (core/tsan_sync.h). */
static void registry_lock(void) {
    pthread_mutex_lock(&g_lock);
    d9_tsan_acquire(&g_lock);
}
static void registry_unlock(void) {
    d9_tsan_release(&g_lock);
    pthread_mutex_unlock(&g_lock);
}

/* Read by hooks on their slow path: atomics, no lock there. */
static _Atomic uint64_t g_max_words = 1024 * 1024 / 8;
static _Atomic uint64_t g_budget_bytes = 64ull << 20;
static _Atomic uint64_t g_ring_bytes, g_ring_peak;
static pthread_key_t g_key;
void (*volatile d9_thread_register_hook)(d9_thread *t);
void (*volatile d9_thread_move_hook)(d9_thread *t);
_Atomic uint64_t d9_ring_shrink_after_ns = 30ull * 1000000000ull;
static pthread_once_t g_key_once = PTHREAD_ONCE_INIT;

void d9_thread_set_ring_limits(uint64_t max_words, uint64_t budget_bytes) {
    atomic_store_explicit(&g_max_words, max_words, memory_order_relaxed);
    atomic_store_explicit(&g_budget_bytes, budget_bytes, memory_order_relaxed);
}

static uint64_t first_words(void) {
    uint64_t max = atomic_load_explicit(&g_max_words, memory_order_relaxed);
    return D9_RING_FIRST_WORDS < max ? D9_RING_FIRST_WORDS : max;
}

uint64_t d9_ring_bytes_used(void) { return atomic_load_explicit(&g_ring_bytes, memory_order_relaxed); }
uint64_t d9_ring_bytes_peak(void) { return atomic_load_explicit(&g_ring_peak, memory_order_relaxed); }

/* Take `bytes` from the budget; false when that would exceed it. */
static bool budget_take(uint64_t bytes, uint64_t budget) {
    uint64_t used = atomic_load_explicit(&g_ring_bytes, memory_order_relaxed);
    do {
        if (used + bytes > budget) return false;
    } while (!atomic_compare_exchange_weak_explicit(&g_ring_bytes, &used, used + bytes,
                                                    memory_order_relaxed, memory_order_relaxed));
    uint64_t peak = atomic_load_explicit(&g_ring_peak, memory_order_relaxed);
    while (used + bytes > peak &&
           !atomic_compare_exchange_weak_explicit(&g_ring_peak, &peak, used + bytes,
                                                  memory_order_relaxed, memory_order_relaxed)) {
    }
    return true;
}

static void ring_free(d9_ring *r) {
    if (r->words) {
        uint64_t bytes = (r->mask + 1) * sizeof(uint64_t);
        munmap(r->words, bytes);
        atomic_fetch_sub_explicit(&g_ring_bytes, bytes, memory_order_relaxed);
    }
    free(r);
}

/* A ring of `words` words (a power of two) starting at `start`, taken from the budget. When
 * the budget or memory is spent: NULL, or with `or_empty` one that holds nothing (words NULL).
 * Populated up front: a first-touch page fault on the hot path costs ~100x an event. */
static d9_ring *ring_new(uint64_t words, uint64_t start, bool or_empty) {
    uint64_t bytes = words * sizeof(uint64_t);
    bool taken = budget_take(bytes, atomic_load_explicit(&g_budget_bytes, memory_order_relaxed));
    if (!taken && !or_empty) return NULL; /* the common refusal: no allocation, no call */
    d9_ring *r = calloc(1, sizeof *r);
    void *m = MAP_FAILED;
    if (r && taken)
        m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (m == MAP_FAILED) {
        if (taken) atomic_fetch_sub_explicit(&g_ring_bytes, bytes, memory_order_relaxed);
        if (!or_empty) {
            free(r);
            return NULL;
        }
    }
    if (!r) return NULL;
    r->start = start;
    atomic_init(&r->newer, NULL);
    if (m != MAP_FAILED) {
        r->words = m;
        r->mask = words - 1;
    }
    return r;
}

static void free_thread(d9_thread *t) {
    if (t->schedstat_fd >= 0) d9_fd_close_if_ours(t->schedstat_fd, t->schedstat_id);
    for (d9_ring *r = t->c_ring, *n; r; r = n) {
        n = atomic_load_explicit(&r->newer, memory_order_acquire);
        ring_free(r);
    }
    free(t);
}

void d9_thread_release_consumed(d9_thread *t, uint64_t tail) {
    for (d9_ring *n; (n = atomic_load_explicit(&t->c_ring->newer, memory_order_acquire)) && tail >= n->start;) {
        ring_free(t->c_ring);
        t->c_ring = n;
    }
}

/* Move the producer to a new ring of `want` words, which starts at its head (the records
 * before stay in the older rings until the collector has read them). False without memory.
 * The release store on `newer` orders the ring's making before the collector's reads of it
 * (it acquires `newer` before it reads the ring's start, words or mask, or frees it). A move
 * can happen inside a blocking call TSan intercepts (an adapter's park, in its epoll_wait
 * wrapper), where TSan does not see that store: d9_tsan_release gives it the same edge. */
static bool move_to_ring(d9_thread *t, uint64_t want) {
    d9_ring *r = ring_new(want, t->head, false);
    if (!r) return false;
    void (*hook)(d9_thread *) = d9_thread_move_hook;
    if (hook) hook(t);
    d9_tsan_release(&t->w_ring->newer);
    atomic_store_explicit(&t->w_ring->newer, r, memory_order_release);
    t->w_ring = r;
    t->ring = r->words;
    t->mask = r->mask;
    t->limit = t->head; /* fits() sets it against the new ring */
    return true;
}

/* The least a ring may hold for a record of `words` words (and what may be owed before it). */
static uint64_t least_words(uint64_t words) {
    return 2 * (words + D9_REC_WORDS_DROPPED + D9_REC_WORDS_WORKER_BEGIN);
}

/* Move the producer to a larger ring when it is full: twice the current one, and at least
 * twice the record, up to the configured size. False when there is no larger ring to have. */
static bool grow(d9_thread *t, uint64_t words) {
    uint64_t max = atomic_load_explicit(&g_max_words, memory_order_relaxed);
    uint64_t cap = t->ring ? t->mask + 1 : 0;
    uint64_t want = cap ? cap * 2 : first_words();
    while (want < least_words(words) && want < max) want *= 2;
    if (want > max) want = max;
    if (want <= cap) return false;
    return move_to_ring(t, want);
}

/* Move the producer to a ring half as large, not below the first size nor the record's need. */
static void shrink(d9_thread *t, uint64_t words) {
    uint64_t cap = t->ring ? t->mask + 1 : 0;
    uint64_t want = cap / 2;
    if (want < first_words() || want < least_words(words)) return;
    move_to_ring(t, want);
}

void d9_thread_note_fill(d9_thread *t, double fill, uint64_t words, uint64_t now_ns) {
    uint8_t wanted = atomic_load_explicit(&t->resize_wanted, memory_order_relaxed);
    if (fill > D9_RING_GROW_FILL) {
        t->c_quiet_since = 0;
        if (wanted != D9_RING_GROW)
            atomic_store_explicit(&t->resize_wanted, D9_RING_GROW, memory_order_relaxed);
        return;
    }
    if (fill >= D9_RING_SHRINK_FILL || words <= first_words()) {
        t->c_quiet_since = 0;
        return;
    }
    if (!t->c_quiet_since) t->c_quiet_since = now_ns;
    if (now_ns - t->c_quiet_since >= atomic_load_explicit(&d9_ring_shrink_after_ns, memory_order_relaxed) &&
        wanted == D9_RING_KEEP) {
        atomic_store_explicit(&t->resize_wanted, D9_RING_SHRINK, memory_order_relaxed);
        t->c_quiet_since = 0; /* the next halving waits as long again */
    }
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
    registry_lock();
    if (g_collector_running) {
        atomic_store_explicit(&t->exited, 1, memory_order_release);
    } else {
        unlink_thread_locked(t);
        free_thread(t);
    }
    registry_unlock();
}

static void make_key(void) { pthread_key_create(&g_key, on_thread_exit); }

d9_thread *d9_thread_register(void) {
    d9_thread *t;
    pthread_once(&g_key_once, make_key);
    uint64_t words = first_words();
    t = aligned_alloc(64, (sizeof *t + 63) & ~(size_t)63);
    if (!t) return NULL;
    memset(t, 0, sizeof *t);
    /* Without room in the budget the thread still gets an (empty) ring: its events are then
     * dropped and counted, and it tries again for memory when the next one comes. */
    d9_ring *first = ring_new(words, 0, true);
    if (!first) {
        free(t);
        return NULL;
    }
    t->w_ring = t->c_ring = first;
    t->ring = first->words;
    t->mask = first->words ? first->mask : 0;
    t->limit = first->words ? words : 0;
    t->schedstat_fd = -1;
    t->worker_pending = UINT32_MAX;
    t->tid = gettid();
    if (pthread_getname_np(pthread_self(), t->name, sizeof t->name) != 0) t->name[0] = 0;
    atomic_init(&t->worker_id, 255);
    atomic_init(&t->ever_worker, false);
    atomic_init(&t->resize_wanted, D9_RING_KEEP);
    t->c_worker = 255;
    t->c_ss_wait = D9_NS_UNKNOWN;

    registry_lock();
    t->next = g_threads;
    g_threads = t;
    registry_unlock();
    pthread_setspecific(g_key, t);
    tls_thread = t;
    void (*hook)(d9_thread *) = d9_thread_register_hook;
    if (hook) hook(t);
    return t;
}

/* Room for n contiguous words at head (padding to the wrap point if needed)? Positions before
 * the ring's start count as occupied: they are older rings' and not read yet, or read. */
static bool fits(d9_thread *t, uint64_t tail, uint64_t n) {
    if (!t->ring) return false;
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

static bool make_room_in_ring(d9_thread *t, uint64_t tail, uint64_t words) {
    if (t->worker_pending != UINT32_MAX) {
        if (!fits(t, tail, D9_REC_WORDS_WORKER_BEGIN)) return false;
        write_worker(t, t->worker_pending);
        t->worker_pending = UINT32_MAX;
    }
    if (t->drop_pending) {
        if (!fits(t, tail, D9_REC_WORDS_DROPPED + words)) return false;
        uint64_t *r = t->ring + (t->head & t->mask);
        r[0] = D9_REC_HEADER(d9_clock_ticks(), D9_REC_DROPPED);
        r[1] = atomic_load_explicit(&t->drops_total, memory_order_relaxed);
        d9_thread_commit(t, D9_REC_WORDS_DROPPED);
        t->drop_pending = false;
    }
    return fits(t, tail, words);
}

bool d9_thread_make_room(d9_thread *t, uint64_t words) {
    uint8_t resize = atomic_load_explicit(&t->resize_wanted, memory_order_relaxed);
    if (resize != D9_RING_KEEP) {
        atomic_store_explicit(&t->resize_wanted, D9_RING_KEEP, memory_order_relaxed);
        /* at the size limit or out of budget: the ring stays as it is */
        if (resize == D9_RING_GROW) grow(t, words);
        else shrink(t, words);
    }
    uint64_t tail = atomic_load_explicit(&t->tail, memory_order_acquire);
    if (make_room_in_ring(t, tail, words) || (grow(t, words) && make_room_in_ring(t, tail, words)))
        return true;
    atomic_store_explicit(&t->drops_total,
                          atomic_load_explicit(&t->drops_total, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    t->drop_pending = true;
    t->limit = t->head; /* every later event takes this path until the DROPPED record is out */
    return false;
}

d9_thread **d9_threads_snapshot(size_t *count) {
    registry_lock();
    size_t n = 0;
    for (d9_thread *t = g_threads; t; t = t->next) n++;
    d9_thread **arr = malloc((n ? n : 1) * sizeof *arr);
    size_t i = 0;
    if (arr)
        for (d9_thread *t = g_threads; t; t = t->next) arr[i++] = t;
    registry_unlock();
    *count = i;
    return arr;
}

void d9_threads_reap(void) {
    registry_lock();
    d9_thread **p = &g_threads;
    while (*p) {
        d9_thread *t = *p;
        /* Drained, and its drops in a report: a thread that exits while a drain runs, after
         * that drain's snapshot (so never read by it), has nothing in its ring when all its
         * events were dropped, and freeing it then lost their count without a trace. */
        if (atomic_load_explicit(&t->exited, memory_order_acquire) &&
            atomic_load_explicit(&t->tail, memory_order_relaxed) ==
                atomic_load_explicit(&t->head_pub, memory_order_acquire) &&
            atomic_load_explicit(&t->drops_total, memory_order_relaxed) <= t->c_drops_reported) {
            *p = t->next;
            free_thread(t);
        } else {
            p = &t->next;
        }
    }
    registry_unlock();
}

void d9_threads_set_collector_running(bool running) {
    registry_lock();
    g_collector_running = running;
    registry_unlock();
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
