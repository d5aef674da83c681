/* Every hook event's timestamp, as the collector writes it, is the one its record holds: three
 * workers record polls, wakes, parks, unparks (with and without their ready wake), spawns
 * (with and without an object) and terminations concurrently, with pauses longer than a
 * 24-bit timestamp delta, in small segments; each thread reads back the tick its hook just
 * wrote to its ring (CLOCK_MONOTONIC: a tick is a nanosecond) and the decoded run must hold
 * each event at exactly that time, in each thread's order. The collector's fast path
 * (collector_merge.c, take_fast_with) derives each event's time and its header's delta from
 * the record it reads ahead, across runs that end at another thread's event, at a ring's wrap
 * point, at the head a drain read and at a segment's end; an error there moves a timestamp. */
#include <pthread.h>
#include <time.h>

#include "check.h"
#include "core/clock.h"
#include "core/records.h"
#include "core/thread_buffer.h"
#include "dial9/dial9.h"
#include "recorder_records_util.h"
#include "trace_files_util.h"

#define THREADS 3
#define ITERATIONS 12000

typedef struct worker {
    int index;
    uint32_t id;       /* its worker id */
    rr_events want;    /* kind, ts, id */
    int bad_records;   /* a hook's last record not of the kind expected */
} worker;

static worker workers[THREADS];
static pthread_barrier_t started;

/* The time of the first record of `kind` the calling thread's hook wrote at or after ring
 * position `from` (others may come before it, owed ones, or after it, a long poll's CPU
 * time), 0 when there is none. */
static uint64_t record_ts(uint64_t from, unsigned kind) {
    d9_thread *t = d9_thread_peek();
    if (!t || !t->ring) return 0;
    uint64_t pos = from > t->w_ring->start ? from : t->w_ring->start; /* the ring it moved to */
    while (pos < t->head) {
        const uint64_t *r = t->ring + (pos & t->mask);
        if (D9_REC_KIND(r[0]) == D9_REC_PAD) {
            pos = (pos | t->mask) + 1;
            continue;
        }
        if (D9_REC_KIND(r[0]) == kind) return d9_ticks_unwrap56(D9_REC_TICKS56(r[0]), d9_mono_ns());
        uint64_t n = d9_record_words(r);
        if (!n) return 0;
        pos += n;
    }
    return 0;
}

/* The ring position the next hook writes at. */
static uint64_t head(void) {
    d9_thread *t = d9_thread_peek();
    return t ? t->head : 0;
}

static void want(worker *w, char kind, uint64_t from, unsigned rec, uint64_t id) {
    uint64_t ts = record_ts(from, rec);
    if (!ts) w->bad_records++;
    rr_add(&w->want, kind, ts, id, 0, 0);
}

static uint64_t task_of(int thread, int i) {
    uint64_t t = ((uint64_t)(thread + 1) << 40) + (uint64_t)i;
    return i % 5 == 0 ? t | (1ull << 62) : t; /* varints of six and of nine bytes */
}

static void *run(void *arg) {
    worker *w = arg;
    w->id = d9_worker_begin("timestamps", (uint32_t)w->index);
    pthread_barrier_wait(&started);
    const d9_loc *where = D9_HERE;
    for (int i = 0; i < ITERATIONS; i++) {
        uint64_t task = task_of(w->index, i), h;
        if (i % 4 == 0) {
            h = head();
            d9_task_spawn_object(task, where, (const void *)(uintptr_t)(i + 1));
            want(w, 'N', h, D9_REC_SPAWN, task);
            rr_add(&w->want, 'O', w->want.ev[w->want.n - 1].a, task, 0, 0);
        } else {
            h = head();
            d9_task_spawn(task, where);
            want(w, 'N', h, D9_REC_SPAWN, task);
        }
        h = head();
        d9_poll_begin(task, where);
        want(w, 'S', h, D9_REC_POLL_BEGIN, task);
        h = head();
        d9_wake(task + 1);
        want(w, 'W', h, D9_REC_WAKE, task + 1);
        h = head();
        d9_wake_ready(task + 2);
        want(w, 'W', h, D9_REC_WAKE_READY, task + 2);
        h = head();
        d9_poll_end();
        want(w, 'E', h, D9_REC_POLL_END, 0);
        if (i % 8 == 0) {
            h = head();
            d9_park();
            want(w, 'P', h, D9_REC_PARK, 0);
            if (i % 16 == 0) {
                h = head();
                d9_unpark_wake_ready(task + 3);
                want(w, 'U', h, D9_REC_UNPARK_WAKE, 0);
                rr_add(&w->want, 'W', w->want.ev[w->want.n - 1].a, task + 3, 0, 0);
            } else {
                h = head();
                d9_unpark();
                want(w, 'U', h, D9_REC_UNPARK, 0);
            }
        }
        h = head();
        d9_task_terminate(task);
        want(w, 'T', h, D9_REC_TERMINATE, task);
        if (i % 4000 == 3999) { /* longer than a 24-bit delta (16.7 ms): a timestamp reset */
            struct timespec nap = {0, 20 * 1000 * 1000};
            nanosleep(&nap, NULL);
        }
        if (w->index == 0 && i % 1500 == 1499) d9_flush();
    }
    d9_worker_end();
    return NULL;
}

typedef struct seen {
    rr_events got[THREADS];
    uint64_t unrouted, segments;
} seen;

static int thread_of_worker(uint64_t id) {
    for (int i = 0; i < THREADS; i++)
        if (workers[i].id == id) return i;
    return -1;
}

static int thread_of_task(uint64_t task) {
    int i = (int)((task >> 40) & 0xff) - 1;
    return i >= 0 && i < THREADS ? i : -1;
}

static void on_event(const d9_event *ev, void *ctx) {
    seen *s = ctx;
    const char *name = ev->schema->name;
    char kind = 0;
    int th = -1;
    uint64_t id = 0;
    if (!strcmp(name, "SegmentMetadataEvent")) s->segments++;
    if (!strcmp(name, "PollStartEvent")) {
        kind = 'S', th = thread_of_worker(d9t_field_u(ev, "worker_id")), id = d9t_field_u(ev, "task_id");
    } else if (!strcmp(name, "PollEndEvent")) {
        kind = 'E', th = thread_of_worker(d9t_field_u(ev, "worker_id"));
    } else if (!strcmp(name, "WorkerParkEvent") || !strcmp(name, "WorkerUnparkEvent")) {
        kind = name[6] == 'P' ? 'P' : 'U', th = thread_of_worker(d9t_field_u(ev, "worker_id"));
    } else if (!strcmp(name, "WakeEventEvent")) {
        kind = 'W', th = thread_of_worker(d9t_field_u(ev, "target_worker")), id = d9t_field_u(ev, "woken_task_id");
    } else if (!strcmp(name, "TaskSpawnEvent") || !strcmp(name, "TaskObjectEvent") ||
               !strcmp(name, "TaskTerminateEvent")) {
        kind = name[4] == 'S' ? 'N' : name[4] == 'O' ? 'O' : 'T';
        id = d9t_field_u(ev, "task_id");
        th = thread_of_task(id);
    } else {
        return;
    }
    if (th < 0) {
        s->unrouted++;
        return;
    }
    rr_add(&s->got[th], kind, ev->ts_ns, id, 0, 0);
}

int main(void) {
    char *dir = d9t_mkdtemp("colts");
    d9_config cfg;
    rr_config_segments(&cfg, dir); /* several segments: runs meet a segment's end */
    cfg.clock = D9_CLOCK_MONOTONIC;  /* a tick is the nanosecond the trace holds */
    cfg.schedstat = false;           /* an unpark and its ready wake always one record (a
                                        schedstat read due makes them two, park_record) */
    CHECK(d9_start(&cfg) == 0);
    CHECK(!d9_clock_use_tsc);
    pthread_barrier_init(&started, NULL, THREADS);
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) {
        workers[i].index = i;
        CHECK(pthread_create(&th[i], NULL, run, &workers[i]) == 0);
    }
    for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
    rr_stop_nothing_dropped();

    seen *s = calloc(1, sizeof *s);
    CHECK(d9t_decode_run(d9_run_dir(), on_event, s) == 0);
    CHECK(s->segments >= 3);
    CHECK_EQ_U64(s->unrouted, 0);
    size_t events = 0;
    for (int i = 0; i < THREADS; i++) {
        CHECK_EQ_U64(workers[i].bad_records, 0);
        CHECK_EQ_U64(s->got[i].n, workers[i].want.n);
        CHECK_EQ_U64(rr_differences(&s->got[i], &workers[i].want), 0);
        events += s->got[i].n;
        free(s->got[i].ev);
        free(workers[i].want.ev);
    }
    printf("collector_timestamps: %zu events of %d threads in %" PRIu64 " segments, each at its record's time\n",
           events, THREADS, s->segments);
    free(s);
    pthread_barrier_destroy(&started);
    d9t_rm_rf(dir);
    free(dir);
    return d9t_summary("mt_collector_timestamps");
}
