/* The executor: worker threads, run queues, work stealing, parking, wakers — and the dial9
 * hooks, each placed on the thread where the thing it records happens. */
#include "executor.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "task.h"
#include "task_queue.h"

typedef struct ex_worker {
    ex_executor *ex;
    uint32_t index;
    pthread_t thread;

    pthread_mutex_t lock;     /* guards queue and notified */
    pthread_cond_t wakeup;
    ex_task_queue queue;
    bool notified;            /* someone wants this worker to look for work again */
    _Atomic bool parked;      /* set before sleeping; read by threads that push work */

    uint64_t rng;             /* picks the first steal victim */
    /* counters written only by this worker, read after it has been joined */
    uint64_t polls, stolen, parks;
} __attribute__((aligned(64))) ex_worker;

struct ex_executor {
    uint32_t nworkers;
    ex_worker *workers;
    _Atomic uint64_t next_task_id;
    _Atomic uint32_t next_home;   /* round robin for tasks spawned outside the workers */
    _Atomic uint64_t live_tasks;  /* spawned and not yet DONE */
    _Atomic uint64_t work_epoch;  /* bumped on every push: lets a parking worker see new work */
    _Atomic bool shutting_down;
    _Atomic uint64_t spawned, completed, wakes;
};

/* The worker this thread is, if it is one (wakes from a worker go to its own queue). */
static __thread ex_worker *tls_worker;

/* ------------------------------------------------------------------ task lifetime */

static void task_unref(ex_task *t) {
    if (atomic_fetch_sub(&t->refs, 1) == 1) free(t);
}

ex_executor *ex_task_executor(const ex_task *self) { return self->ex; }
uint64_t ex_task_id(const ex_task *self) { return self->id; }

ex_waker ex_task_waker(ex_task *self) {
    atomic_fetch_add(&self->refs, 1);
    return (ex_waker){self};
}

void ex_waker_drop(ex_waker waker) {
    if (waker.task) task_unref(waker.task);
}

/* ------------------------------------------------------------------ queues and parking */

/* Ask one parked worker (other than `busy`) to come and steal. */
static void wake_one_parked(ex_executor *ex, const ex_worker *busy) {
    for (uint32_t i = 1; i <= ex->nworkers; i++) {
        ex_worker *w = &ex->workers[(busy->index + i) % ex->nworkers];
        if (w == busy || !atomic_load(&w->parked)) continue;
        pthread_mutex_lock(&w->lock);
        bool take = atomic_load(&w->parked) && !w->notified;
        if (take) {
            w->notified = true;
            pthread_cond_signal(&w->wakeup);
        }
        pthread_mutex_unlock(&w->lock);
        if (take) return;
    }
}

/* Put a runnable task on worker `w`'s queue and make sure someone will run it. */
static void push_task(ex_executor *ex, ex_worker *w, ex_task *t) {
    pthread_mutex_lock(&w->lock);
    ex_queue_push(&w->queue, t);
    uint32_t depth = w->queue.len;
    bool owner_parked = atomic_load(&w->parked);
    if (owner_parked) {
        w->notified = true;
        pthread_cond_signal(&w->wakeup);
    }
    pthread_mutex_unlock(&w->lock);
    /* Pairs with the parked/epoch check in park(): either the parking worker sees the new
     * epoch, or we see it parked (both sides store, then load, sequentially consistent). */
    atomic_fetch_add(&ex->work_epoch, 1);
    /* The owner is busy and work is piling up: let an idle worker steal some. */
    if (!owner_parked && depth >= 2) wake_one_parked(ex, w);
}

static ex_task *pop_local(ex_worker *w, uint32_t *depth_after) {
    pthread_mutex_lock(&w->lock);
    ex_task *t = ex_queue_pop(&w->queue);
    *depth_after = w->queue.len;
    pthread_mutex_unlock(&w->lock);
    return t;
}

/* Take the older half of another worker's queue. The stolen tasks run here: in the trace
 * they show up as polls of the same task id on a different worker. */
static ex_task *steal(ex_worker *w, uint32_t *depth_after) {
    ex_executor *ex = w->ex;
    w->rng = w->rng * 6364136223846793005ull + 1442695040888963407ull;
    uint32_t start = (uint32_t)(w->rng >> 33) % ex->nworkers;
    for (uint32_t i = 0; i < ex->nworkers; i++) {
        ex_worker *victim = &ex->workers[(start + i) % ex->nworkers];
        /* A parked victim is being woken for its own work: let it take it, cache-hot. */
        if (victim == w || atomic_load(&victim->parked)) continue;
        ex_task_queue loot = {0};
        pthread_mutex_lock(&victim->lock); /* never hold two worker locks at once */
        uint32_t n = (victim->queue.len + 1) / 2;
        ex_queue_move(&victim->queue, &loot, n);
        pthread_mutex_unlock(&victim->lock);
        if (n == 0) continue;
        w->stolen += n;
        ex_task *first = ex_queue_pop(&loot);
        pthread_mutex_lock(&w->lock);
        ex_queue_move(&loot, &w->queue, loot.len);
        *depth_after = w->queue.len;
        pthread_mutex_unlock(&w->lock);
        return first;
    }
    return NULL;
}

/* Block until there may be work. `epoch` is the work epoch read before this worker last
 * looked at every queue: if it moved since, something was pushed and we look again. */
static void park(ex_worker *w, uint64_t epoch) {
    ex_executor *ex = w->ex;
    pthread_mutex_lock(&w->lock);
    atomic_store(&w->parked, true);
    bool nothing_new = w->queue.len == 0 && !w->notified &&
                       atomic_load(&ex->work_epoch) == epoch && !atomic_load(&ex->shutting_down);
    if (nothing_new) {
        /* The hooks sit exactly around the blocking wait: the time between d9_park and
         * d9_unpark is time this worker had nothing to run. (d9_park reads the thread's
         * schedstat: ~1 µs, acceptable while holding our own queue's lock.) */
        d9_set_local_queue(0);
        d9_park();
        while (w->queue.len == 0 && !w->notified && !atomic_load(&ex->shutting_down))
            pthread_cond_wait(&w->wakeup, &w->lock);
        d9_unpark();
        w->parks++;
    }
    w->notified = false;
    atomic_store(&w->parked, false);
    pthread_mutex_unlock(&w->lock);
}

/* ------------------------------------------------------------------ waking */

static ex_worker *home_of(ex_task *t) {
    return &t->ex->workers[atomic_load_explicit(&t->home, memory_order_relaxed)];
}

void ex_wake(ex_waker waker) {
    ex_task *t = waker.task;
    ex_executor *ex = t->ex;
    atomic_fetch_add_explicit(&ex->wakes, 1, memory_order_relaxed);
    /* Record the wake before the task can possibly run, so in the trace the wake always
     * precedes the poll it causes. dial9 notes which task (if any) is being polled on this
     * thread, so a wake from inside a task links waker and wakee. */
    d9_wake(t->id);
    for (;;) {
        int s = atomic_load(&t->sched);
        if (s == EX_IDLE) {
            if (!atomic_compare_exchange_weak(&t->sched, &s, EX_SCHEDULED)) continue;
            /* From a worker: run it here, cache-hot. From any other thread (a timer, a
             * backend): queue it where it ran last. */
            ex_worker *w = tls_worker && tls_worker->ex == ex ? tls_worker : home_of(t);
            push_task(ex, w, t);
            break;
        }
        if (s == EX_RUNNING) {
            /* Being polled right now: the worker requeues it when the poll returns. */
            if (!atomic_compare_exchange_weak(&t->sched, &s, EX_NOTIFIED)) continue;
            break;
        }
        break; /* SCHEDULED or NOTIFIED: it will run anyway; DONE: nothing to do */
    }
    task_unref(t);
}

void ex_yield(ex_task *self) { ex_wake(ex_task_waker(self)); }

/* ------------------------------------------------------------------ spawning and polling */

uint64_t ex_spawn_at(ex_executor *ex, ex_poll_fn poll, void *data, const d9_loc *where) {
    ex_task *t = calloc(1, sizeof *t);
    if (!t) return 0;
    t->id = atomic_fetch_add(&ex->next_task_id, 1);
    t->poll = poll;
    t->data = data;
    t->spawned_at = where;
    t->ex = ex;
    atomic_init(&t->sched, EX_SCHEDULED);
    atomic_init(&t->refs, 1);
    ex_worker *w = tls_worker && tls_worker->ex == ex
                       ? tls_worker
                       : &ex->workers[atomic_fetch_add(&ex->next_home, 1) % ex->nworkers];
    atomic_init(&t->home, w->index);
    atomic_fetch_add(&ex->live_tasks, 1);
    atomic_fetch_add_explicit(&ex->spawned, 1, memory_order_relaxed);
    /* Before the push: once queued, the task may run (and finish) on another thread. */
    d9_task_spawn(t->id, where);
    uint64_t id = t->id;
    push_task(ex, w, t);
    return id;
}

static void run_task(ex_worker *w, ex_task *t, uint32_t queue_depth) {
    atomic_store(&t->sched, EX_RUNNING);
    atomic_store_explicit(&t->home, w->index, memory_order_relaxed);

    /* One poll = one PollStart/PollEnd pair. The location is the spawn site, so a slow
     * poll in the trace points at the code that created the task. */
    d9_set_local_queue(queue_depth);
    d9_poll_begin(t->id, t->spawned_at);
    ex_poll_result r = t->poll(t, t->data);
    d9_poll_end();
    w->polls++;

    if (r == EX_READY) {
        atomic_store(&t->sched, EX_DONE);
        d9_task_terminate(t->id);
        atomic_fetch_add_explicit(&w->ex->completed, 1, memory_order_relaxed);
        atomic_fetch_sub(&w->ex->live_tasks, 1);
        task_unref(t); /* the executor's reference; wakers still held keep the memory */
        return;
    }
    int s = EX_RUNNING;
    if (!atomic_compare_exchange_strong(&t->sched, &s, EX_IDLE)) {
        /* Woken while it ran (NOTIFIED), or it yielded: queue it again, behind the others. */
        atomic_store(&t->sched, EX_SCHEDULED);
        push_task(w->ex, w, t);
    }
}

static void *worker_main(void *arg) {
    ex_worker *w = arg;
    ex_executor *ex = w->ex;
    tls_worker = w;
    /* Each (runtime, index) pair gets its own worker id in the trace. */
    d9_worker_begin("executor", w->index);
    for (;;) {
        uint64_t epoch = atomic_load(&ex->work_epoch);
        uint32_t depth = 0;
        ex_task *t = pop_local(w, &depth);
        if (!t) t = steal(w, &depth);
        if (t) {
            run_task(w, t, depth);
            continue;
        }
        if (atomic_load(&ex->shutting_down)) break;
        park(w, epoch);
    }
    d9_worker_end();
    tls_worker = NULL;
    return NULL;
}

/* ------------------------------------------------------------------ lifecycle */

ex_executor *ex_executor_start(uint32_t workers) {
    if (workers == 0 || workers > 64) {
        errno = EINVAL;
        return NULL;
    }
    ex_executor *ex = calloc(1, sizeof *ex);
    if (!ex) return NULL;
    ex->nworkers = workers;
    ex->workers = aligned_alloc(64, sizeof(ex_worker) * workers);
    if (!ex->workers) {
        free(ex);
        return NULL;
    }
    atomic_init(&ex->next_task_id, 1);
    for (uint32_t i = 0; i < workers; i++) {
        ex_worker *w = &ex->workers[i];
        *w = (ex_worker){.ex = ex, .index = i, .rng = 0x9e3779b97f4a7c15ull * (i + 1)};
        pthread_mutex_init(&w->lock, NULL);
        pthread_cond_init(&w->wakeup, NULL);
    }
    for (uint32_t i = 0; i < workers; i++) {
        int rc = pthread_create(&ex->workers[i].thread, NULL, worker_main, &ex->workers[i]);
        if (rc != 0) {
            ex->nworkers = i; /* stop the ones already running */
            ex_executor_stop(ex, NULL);
            errno = rc;
            return NULL;
        }
        char name[16];
        snprintf(name, sizeof name, "executor-%u", i);
        pthread_setname_np(ex->workers[i].thread, name);
    }
    return ex;
}

bool ex_executor_wait_idle(ex_executor *ex, uint32_t timeout_ms) {
    for (uint32_t waited = 0; atomic_load(&ex->live_tasks) != 0; waited++) {
        if (waited >= timeout_ms) return false;
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    return true;
}

void ex_executor_stop(ex_executor *ex, ex_executor_stats *stats) {
    atomic_store(&ex->shutting_down, true);
    for (uint32_t i = 0; i < ex->nworkers; i++) {
        ex_worker *w = &ex->workers[i];
        pthread_mutex_lock(&w->lock);
        w->notified = true;
        pthread_cond_signal(&w->wakeup);
        pthread_mutex_unlock(&w->lock);
    }
    ex_executor_stats s = {0};
    for (uint32_t i = 0; i < ex->nworkers; i++) {
        ex_worker *w = &ex->workers[i];
        pthread_join(w->thread, NULL);
        s.polls += w->polls;
        s.stolen += w->stolen;
        s.parks += w->parks;
    }
    /* Only now: until every worker has exited, any of them may still lock another's queue. */
    for (uint32_t i = 0; i < ex->nworkers; i++) {
        pthread_mutex_destroy(&ex->workers[i].lock);
        pthread_cond_destroy(&ex->workers[i].wakeup);
    }
    s.spawned = atomic_load(&ex->spawned);
    s.completed = atomic_load(&ex->completed);
    s.wakes = atomic_load(&ex->wakes);
    if (stats) *stats = s;
    free(ex->workers);
    free(ex);
}
