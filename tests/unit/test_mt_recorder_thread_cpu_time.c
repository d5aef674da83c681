/* DIAL9_THREAD_CPU_TIME: the cpu_time_ns of parks and unparks, checked against the thread's
 * own CPU clock read by the test around every call (no timing assumption: each value must lie
 * between the test's readings just before and just after the hook).
 *   park (default): a park's value is current; its unpark carries the same value (the thread
 *     slept in between), so one read per active period; a planted burn between an unpark and
 *     the next park shows in full in their difference.
 *   every: both current.  off: both 0, and the metadata says thread_cpu_time=off.
 * Per thread, two threads at once, values never decrease. An unpark with no park of the same
 * recording before it (a d9_start between them) reads the clock, never the older run's park.
 * All with DIAL9_THREAD_CPU=syscall: the page's values are perf's task clock, not this clock. */
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "dial9/dial9.h"
#include "quiet_recorder.h"
#include "trace_files_util.h"

#define THREADS 2
#define PAIRS 100

static uint64_t thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A burn of a fixed number of loop iterations (counted, not timed). */
static void burn(unsigned iterations) {
    volatile unsigned sink = 0;
    for (unsigned i = 0; i < iterations; i++) sink += i;
}

typedef struct readings {
    uint64_t tid;
    /* the test's own CPU clock: before each park, after it, after its unpark */
    uint64_t before_park[PAIRS], after_park[PAIRS], after_unpark[PAIRS];
    uint64_t burn_ns[PAIRS]; /* the planted burn after unpark i, measured around it */
} readings;

static readings seen_by_test[THREADS];

static void *worker(void *arg) {
    readings *r = arg;
    r->tid = (uint64_t)syscall(SYS_gettid);
    d9_worker_begin("cputime", (uint32_t)(r - seen_by_test));
    for (int i = 0; i < PAIRS; i++) {
        r->before_park[i] = thread_cpu_ns();
        d9_park();
        r->after_park[i] = thread_cpu_ns();
        if (i % 2) {
            struct timespec nap = {0, 20 * 1000}; /* asleep as in a poller, on every other */
            nanosleep(&nap, NULL);
        }
        d9_unpark();
        r->after_unpark[i] = thread_cpu_ns();
        uint64_t b = thread_cpu_ns();
        burn(20000 + 1000u * (unsigned)i);
        r->burn_ns[i] = thread_cpu_ns() - b;
    }
    d9_worker_end();
    return NULL;
}

typedef struct event_cpu {
    uint64_t park[PAIRS], unpark[PAIRS];
    int parks, unparks;
} event_cpu;

typedef struct found {
    event_cpu per_thread[THREADS];
    int foreign; /* parks of a tid no worker had */
    char mode[16];
} found;

static void on_event(const d9_event *ev, void *ctx) {
    found *f = ctx;
    if (d9t_is(ev, "SegmentMetadataEvent")) {
        const d9_value *v = d9_event_field(ev, "entries");
        if (!v || !v->present || v->type != D9_FT_STRING_MAP) return;
        for (uint32_t i = 0; i < v->map.count; i++) {
            const d9_dec_kv *kv = &v->map.items[i];
            if (kv->key.len == 15 && !memcmp(kv->key.ptr, "thread_cpu_time", 15) && kv->value.len < sizeof f->mode) {
                memcpy(f->mode, kv->value.ptr, kv->value.len);
                f->mode[kv->value.len] = 0;
            }
        }
        return;
    }
    bool park = d9t_is(ev, "WorkerParkEvent");
    if (!park && !d9t_is(ev, "WorkerUnparkEvent")) return;
    uint64_t tid = d9t_field_u(ev, "tid"), cpu = d9t_field_u(ev, "cpu_time_ns");
    for (int t = 0; t < THREADS; t++) {
        if (seen_by_test[t].tid != tid) continue;
        event_cpu *e = &f->per_thread[t];
        if (park && e->parks < PAIRS) e->park[e->parks++] = cpu;
        if (!park && e->unparks < PAIRS) e->unpark[e->unparks++] = cpu;
        return;
    }
    f->foreign++;
}

static void record(d9_thread_cpu_time_mode mode, found *f) {
    char *dir = d9t_mkdtemp("cputime");
    d9_config cfg;
    d9t_quiet_config(&cfg, dir);
    cfg.thread_cpu_time = mode;
    CHECK(d9_start(&cfg) == 0);
    memset(seen_by_test, 0, sizeof seen_by_test);
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++) CHECK(pthread_create(&th[t], NULL, worker, &seen_by_test[t]) == 0);
    for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
    d9_stop();
    memset(f, 0, sizeof *f);
    CHECK(d9t_decode_run(d9_run_dir(), on_event, f) == 0);
    CHECK_EQ_U64(f->foreign, 0);
    d9t_rm_rf(dir);
    free(dir);
}

/* Counts of the checks that held, per thread, for the summary line. */
typedef struct held {
    int park_current, unpark_as_park, unpark_current, burn_shown, monotonic;
} held;

static held check_thread(const readings *r, const event_cpu *e, d9_thread_cpu_time_mode mode) {
    held h = {0};
    CHECK_EQ_U64(e->parks, PAIRS);
    CHECK_EQ_U64(e->unparks, PAIRS);
    uint64_t last = 0;
    for (int i = 0; i < PAIRS && i < e->parks && i < e->unparks; i++) {
        uint64_t p = e->park[i], u = e->unpark[i];
        if (mode == D9_THREAD_CPU_TIME_OFF) {
            h.park_current += p == 0;
            h.unpark_current += u == 0;
            continue;
        }
        h.park_current += p >= r->before_park[i] && p <= r->after_park[i];
        if (mode == D9_THREAD_CPU_TIME_PARK) h.unpark_as_park += u == p;
        else h.unpark_current += u >= r->after_park[i] && u <= r->after_unpark[i];
        h.monotonic += p >= last && u >= p;
        last = u;
        /* the burn after this unpark lies between the unpark's value and the next park's */
        if (i + 1 < e->parks) h.burn_shown += e->park[i + 1] - u >= r->burn_ns[i];
    }
    return h;
}

static void check_mode(d9_thread_cpu_time_mode mode, const char *name) {
    found f;
    record(mode, &f);
    CHECK_STR(f.mode, name);
    for (int t = 0; t < THREADS; t++) {
        held h = check_thread(&seen_by_test[t], &f.per_thread[t], mode);
        CHECK_EQ_U64(h.park_current, PAIRS);
        if (mode == D9_THREAD_CPU_TIME_PARK) CHECK_EQ_U64(h.unpark_as_park, PAIRS);
        else CHECK_EQ_U64(h.unpark_current, PAIRS);
        if (mode != D9_THREAD_CPU_TIME_OFF) {
            CHECK_EQ_U64(h.monotonic, PAIRS);
            CHECK_EQ_U64(h.burn_shown, PAIRS - 1);
        }
        if (mode == D9_THREAD_CPU_TIME_OFF) {
            printf("%s, thread %d: parks 0 %d/%d, unparks 0 %d/%d\n", name, t, h.park_current, PAIRS,
                   h.unpark_current, PAIRS);
            continue;
        }
        printf("%s, thread %d: parks current %d/%d, unparks %s %d/%d, burns shown %d/%d\n", name, t,
               h.park_current, PAIRS, mode == D9_THREAD_CPU_TIME_PARK ? "= their park" : "current",
               mode == D9_THREAD_CPU_TIME_PARK ? h.unpark_as_park : h.unpark_current, PAIRS, h.burn_shown,
               PAIRS - 1);
    }
}

/* A park in one recording, its unpark in the next: the unpark reads the clock afresh. */
typedef struct across {
    int unparks;
    uint64_t unpark_cpu;
} across;

static void on_unpark(const d9_event *ev, void *ctx) {
    across *a = ctx;
    if (!d9t_is(ev, "WorkerUnparkEvent")) return;
    a->unparks++;
    a->unpark_cpu = d9t_field_u(ev, "cpu_time_ns");
}

static void check_across_recordings(void) {
    char *dir = d9t_mkdtemp("cputime");
    d9_config cfg;
    d9t_quiet_config(&cfg, dir);
    CHECK(d9_start(&cfg) == 0);
    d9_worker_begin("cputime", 0);
    d9_park();
    d9_stop();
    burn(2000000);
    CHECK(d9_start(&cfg) == 0);
    uint64_t before = thread_cpu_ns();
    d9_unpark();
    uint64_t after = thread_cpu_ns();
    d9_worker_end();
    d9_stop();
    across a = {0};
    CHECK(d9t_decode_run(d9_run_dir(), on_unpark, &a) == 0);
    CHECK_EQ_U64(a.unparks, 1);
    CHECK(a.unpark_cpu >= before && a.unpark_cpu <= after);
    printf("unpark after a restart: %" PRIu64 " in [%" PRIu64 ", %" PRIu64 "]\n", a.unpark_cpu, before, after);
    d9t_rm_rf(dir);
    free(dir);
}

int main(void) {
    /* the system call's modes, checked against the same clock; the task-clock page (the default
     * where the kernel gives it) in test_mt_thread_cpu_clock_kernel and test_dial9_required_fields */
    setenv("DIAL9_THREAD_CPU", "syscall", 1);
    check_mode(D9_THREAD_CPU_TIME_PARK, "park");
    check_mode(D9_THREAD_CPU_TIME_EVERY, "every");
    check_mode(D9_THREAD_CPU_TIME_OFF, "off");
    check_across_recordings();
    return d9t_summary("test_mt_recorder_thread_cpu_time");
}
