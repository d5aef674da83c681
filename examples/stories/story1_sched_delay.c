/* Story 1: kernel scheduling delay from CPU oversubscription.
 *
 * The whole process is pinned to one CPU (as a cpuset or a 1-CPU container would do), and
 * next to the two request loops six "batch" threads compute nonstop. Every time a loop is
 * woken by a request, its thread is runnable but has to wait for the CPU behind the batch
 * threads: clients see milliseconds of latency for microseconds of work. Nothing in the
 * loop's own code is slow; the trace shows it in WorkerUnparkEvent.sched_wait_ns (the time the
 * thread spent runnable on a run queue, from /proc/thread-self/schedstat) and in loops whose
 * CPU time is far below their wall time.
 *
 * See docs/stories/1-sched-delay.md.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include "story_kit.h"

#define BATCH_THREADS 6

static atomic_bool batch_stop;

/* A batch job that never waits: it always wants the CPU. */
static void *batch_job(void *arg) {
    while (!atomic_load_explicit(&batch_stop, memory_order_relaxed)) story_spin_ns(1000000);
    return NULL;
}

static void handle_request(unsigned loop_index, void *arg) {
    story_spin_ns(20000); /* 20 us of real work per request */
}

/* Pin the calling thread, and so every thread it creates afterwards, to one CPU. */
static int pin_to_one_cpu(void) {
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return -1;
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
        if (CPU_ISSET(cpu, &allowed)) {
            cpu_set_t one;
            CPU_ZERO(&one);
            CPU_SET(cpu, &one);
            return sched_setaffinity(0, sizeof one, &one) == 0 ? cpu : -1;
        }
    }
    return -1;
}

int main(int argc, char **argv) {
    story_options opt;
    /* Before the recorder starts: its background thread shares the CPU too, like everything. */
    int cpu = pin_to_one_cpu();
    story_begin(argc, argv, "story 1: kernel scheduling delay from CPU oversubscription", 3, &opt);
    if (cpu < 0) {
        perror("sched_setaffinity");
        return 1;
    }

    story_server *srv = story_server_start(2, "api", handle_request, NULL, NULL);
    story_load load = {.clients = 4, .seconds = opt.seconds, .pause_ms = 2};

    /* First a short run without the batch threads, for comparison. */
    story_load calm = load;
    calm.seconds = opt.seconds / 4;
    story_latency alone, crowded;
    story_load_run(story_server_port(srv), &calm, &alone);

    pthread_t batch[BATCH_THREADS];
    for (int i = 0; i < BATCH_THREADS; i++) pthread_create(&batch[i], NULL, batch_job, NULL);
    printf("story 1: everything pinned to CPU %d; 2 loops, 4 clients, then %d batch threads for %.1f s\n",
           cpu, BATCH_THREADS, opt.seconds);
    story_load_run(story_server_port(srv), &load, &crowded);
    atomic_store(&batch_stop, true);
    for (int i = 0; i < BATCH_THREADS; i++) pthread_join(batch[i], NULL);
    story_server_stop(srv);

    story_latency_print("alone", &alone);
    story_latency_print("crowded", &crowded);
    story_end();
    return crowded.requests > 0 ? 0 : 1;
}
