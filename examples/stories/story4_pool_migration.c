/* Story 4: tasks migrating across libuv's thread pool.
 *
 * A loop runs an image pipeline: every 20 ms it submits a burst of 8 jobs, and each job runs
 * three stages (decode, resize, encode: ~300 us of CPU each) on libuv's thread pool, one
 * uv_queue_work after the other on the same uv_work_t. Meanwhile, every 50 ms, the loop
 * resolves "localhost" with uv_getaddrinfo, which needs the same pool.
 *
 * The trace shows each job as one task hopping loop -> pool thread -> loop -> another pool
 * thread...: a job's stages rarely run on the same pool thread twice, so its working set
 * follows it from core to core. It also shows why the lookups are slow: their pool work
 * waits behind the queued stages (wake-to-poll delays), although resolving localhost takes
 * microseconds.
 *
 * See docs/stories/4-pool-migration.md.
 */
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dial9/uv.h>

#include "story_kit.h"

#define POOL_THREADS "4"
#define BURST_EVERY_MS 20
#define JOBS_PER_BURST 8
#define STAGES 3
#define STAGE_CPU_NS (300 * 1000ull)
#define LOOKUP_EVERY_MS 50
#define MAX_SAMPLES 4096

typedef struct latencies {
    uint64_t ns[MAX_SAMPLES];
    unsigned n;
} latencies;

typedef struct pipeline {
    uv_loop_t loop;
    uv_timer_t burst, lookup_timer, deadline;
    bool stopping;
    unsigned in_flight;
    latencies job_latency, lookup_latency;
    uint64_t checksum;
} pipeline;

typedef struct job {
    uv_work_t work;           /* reused for every stage: one task in the trace */
    pipeline *p;
    unsigned stage;
    uint64_t submitted;
    unsigned char pixels[16384]; /* the job's working set, carried from stage to stage */
} job;

typedef struct lookup {
    uv_getaddrinfo_t req;
    pipeline *p;
    uint64_t submitted;
} lookup;

static void record(latencies *l, uint64_t ns) {
    if (l->n < MAX_SAMPLES) l->ns[l->n++] = ns;
}

/* One stage of image work, on a pool thread: real CPU over the job's own pixels. */
static void run_stage(uv_work_t *w) {
    job *j = (job *)w;
    uint64_t deadline = story_now_ns() + STAGE_CPU_NS;
    unsigned k = j->stage;
    while (story_now_ns() < deadline)
        for (size_t i = 0; i < sizeof j->pixels; i += 64) j->pixels[i] = (unsigned char)(j->pixels[i] * 31 + ++k);
}

static void stage_done(uv_work_t *w, int status) {
    job *j = (job *)w;
    pipeline *p = j->p;
    if (status == 0 && ++j->stage < STAGES && uv_queue_work(&p->loop, &j->work, run_stage, stage_done) == 0)
        return; /* the next stage, on whichever pool thread is free */
    record(&p->job_latency, story_now_ns() - j->submitted);
    p->checksum += j->pixels[0];
    p->in_flight--;
    free(j);
}

static void submit_burst(uv_timer_t *t) {
    pipeline *p = t->data;
    for (int i = 0; i < JOBS_PER_BURST; i++) {
        job *j = malloc(sizeof *j);
        if (!j) return;
        j->p = p;
        j->stage = 0;
        j->submitted = story_now_ns();
        memset(j->pixels, i, sizeof j->pixels);
        if (uv_queue_work(&p->loop, &j->work, run_stage, stage_done) != 0) {
            free(j);
            return;
        }
        p->in_flight++;
    }
}

static void lookup_done(uv_getaddrinfo_t *req, int status, struct addrinfo *res) {
    lookup *l = (lookup *)req;
    record(&l->p->lookup_latency, story_now_ns() - l->submitted);
    uv_freeaddrinfo(res);
    l->p->in_flight--;
    free(l);
}

static void start_lookup(uv_timer_t *t) {
    pipeline *p = t->data;
    lookup *l = malloc(sizeof *l);
    if (!l) return;
    l->p = p;
    l->submitted = story_now_ns();
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM};
    if (uv_getaddrinfo(&p->loop, &l->req, lookup_done, "localhost", NULL, &hints) != 0) {
        free(l);
        return;
    }
    p->in_flight++;
}

static void on_closed(uv_handle_t *h) {}

/* Stop submitting; the jobs in flight finish and uv_run returns. */
static void on_deadline(uv_timer_t *t) {
    pipeline *p = t->data;
    uv_close((uv_handle_t *)&p->burst, on_closed);
    uv_close((uv_handle_t *)&p->lookup_timer, on_closed);
    uv_close((uv_handle_t *)&p->deadline, on_closed);
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void print_latencies(const char *label, latencies *l) {
    qsort(l->ns, l->n, sizeof l->ns[0], cmp_u64);
    if (!l->n) {
        printf("%-9s none\n", label);
        return;
    }
    printf("%-9s %u done; latency p50 %.3f ms, p99 %.3f ms, max %.3f ms\n", label, l->n,
           (double)l->ns[l->n / 2] / 1e6, (double)l->ns[l->n * 99 / 100] / 1e6, (double)l->ns[l->n - 1] / 1e6);
}

int main(int argc, char **argv) {
    setenv("UV_THREADPOOL_SIZE", POOL_THREADS, 1); /* read once, at the pool's first use */
    story_options opt;
    story_begin(argc, argv, "story 4: tasks migrating across libuv's thread pool", 3, &opt);

    static pipeline p;
    uv_loop_init(&p.loop);
    d9_uv_instrument(&p.loop, "api");
    uv_timer_init(&p.loop, &p.burst);
    uv_timer_init(&p.loop, &p.lookup_timer);
    uv_timer_init(&p.loop, &p.deadline);
    p.burst.data = p.lookup_timer.data = p.deadline.data = &p;
    uv_timer_start(&p.burst, submit_burst, 0, BURST_EVERY_MS);
    uv_timer_start(&p.lookup_timer, start_lookup, LOOKUP_EVERY_MS / 2, LOOKUP_EVERY_MS);
    uv_timer_start(&p.deadline, on_deadline, (uint64_t)(opt.seconds * 1000), 0);
    printf("story 4: %s pool threads; every %d ms %d jobs of %d stages (%.1f ms of CPU each); "
           "a lookup every %d ms, for %.1f s\n", POOL_THREADS, BURST_EVERY_MS, JOBS_PER_BURST, STAGES,
           STAGE_CPU_NS / 1e6, LOOKUP_EVERY_MS, opt.seconds);
    uv_run(&p.loop, UV_RUN_DEFAULT);
    uv_loop_close(&p.loop);

    print_latencies("jobs", &p.job_latency);
    print_latencies("lookups", &p.lookup_latency);
    story_end();
    return p.job_latency.n > 0 && p.in_flight == 0 ? 0 : 1;
}
