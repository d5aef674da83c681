/* d9-trace-identity RUN_DIR [IO_CALLBACK...]: checks a recorded run the way every reader
 * relies on it (the demo's test runs it on the demo's trace): no task id spawned twice, every
 * poll's task spawned before it, no poll after its task's terminate; with I/O callback names,
 * also that fewer than 10 % of wakes name the woken task as waker and that every poll of those
 * callbacks follows a wake of its task in the same round of its loop. Prints the counts and
 * the wake-to-poll delays (each poll paired with the latest wake of its task before it, as
 * dial9 pairs them); exits 1 when a check fails, 2 on a bad argument or an unreadable run.
 * A run that lost events (DroppedEventsEvent) is only checked for ids spawned twice. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter_trace.h"

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Wake-to-poll delays of the polls whose task had a wake since its previous poll started. */
static void wake_to_poll(const at_trace *t) {
    uint64_t *d = calloc(t->npolls + 1, sizeof *d);
    if (!d) abort();
    size_t n = 0;
    /* wakes and polls are in time order: walk both, remembering each task's unpaired wake */
    typedef struct pending {
        uint64_t task, ts;
    } pending;
    size_t cap = 1024, used = 0;
    pending *p = malloc(cap * sizeof *p);
    if (!p) abort();
    size_t w = 0;
    for (size_t i = 0; i < t->npolls; i++) {
        for (; w < t->nwakes && t->wakes[w].ts_ns <= t->polls[i].start_ns; w++) {
            size_t k = 0;
            while (k < used && p[k].task != t->wakes[w].woken) k++;
            if (k == used) {
                if (used == cap && !(p = realloc(p, (cap *= 2) * sizeof *p))) abort();
                used++;
            }
            p[k] = (pending){t->wakes[w].woken, t->wakes[w].ts_ns};
        }
        for (size_t k = 0; k < used; k++)
            if (p[k].task == t->polls[i].task) {
                d[n++] = t->polls[i].start_ns - p[k].ts;
                p[k] = p[--used];
                break;
            }
    }
    qsort(d, n, sizeof *d, cmp_u64);
    if (n)
        printf("wake-to-poll: %zu pairs, p50 %.1f us, p99 %.1f us, max %.1f us\n", n,
               d[n / 2] / 1e3, d[(size_t)((double)(n - 1) * 0.99)] / 1e3, d[n - 1] / 1e3);
    else
        printf("wake-to-poll: no pairs\n");
    free(p);
    free(d);
}

int main(int argc, char **argv) {
    if (argc < 2 || argv[1][0] == '-') {
        fprintf(stderr, "usage: d9-trace-identity RUN_DIR [IO_CALLBACK...]\n");
        return 2;
    }
    at_trace t;
    if (at_load(argv[1], &t) != 0) return 2;
    at_identity id;
    at_identity_check(&t, &id);
    printf("spawns %zu, distinct task ids %zu, polls %zu, polls without an earlier spawn %zu, "
           "polls after their task's terminate %zu, tasks terminated twice %zu\n",
           id.spawns, id.distinct_spawned, id.polls, id.polls_without_spawn,
           id.polls_after_terminate, id.terminates_repeated);
    /* A lost event (a full buffer) can be a spawn, a terminate or a wake: then only what no
     * loss can cause is checked (an id spawned twice). */
    bool lossy = t.dropped > 0;
    if (lossy)
        printf("%" PRIu64 " events were dropped: only distinct ids = spawns is checked\n",
               t.dropped);
    int bad = id.spawns == 0 || id.distinct_spawned != id.spawns ||
              (!lossy && (id.polls_without_spawn || id.polls_after_terminate ||
                          id.terminates_repeated));
    if (argc > 2) {
        at_wake_stats ws;
        at_wake_check(&t, (const char *const *)argv + 2, (size_t)(argc - 2), &ws);
        printf("wakes %zu, waker = woken %zu; I/O callback polls %zu, without a wake %zu\n",
               ws.wakes, ws.self_wakes, ws.io_polls, ws.io_polls_unwoken);
        bad |= ws.wakes == 0 || ws.self_wakes * 10 >= ws.wakes || ws.io_polls == 0 ||
               (!lossy && ws.io_polls_unwoken);
    }
    wake_to_poll(&t);
    at_free(&t);
    printf("%s\n", bad ? "FAIL" : "ok");
    return bad;
}
