/* polls' attribution columns (fold/poll_attribution.h): switch records paired as they come
 * (each thread's in time order, as the recorder writes them) give the same parts as the same
 * records paired after sorting (a thread's record out of time order), and the cursor that
 * steps each worker's polls on from the previous one gives the parts a search gives. Both
 * orders of pairing go through the intervals' partition by worker (a worker's run out of
 * order sorted: without that sort, 21 checks fail), and with threads that share a slot of the
 * pass's thread cache (without its write-back to the map, 21 fail). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fold/poll_attribution.h"
#include "format/wire.h"

static int failures;
#define CHECK(c)                                                              \
    do {                                                                      \
        if (!(c)) {                                                           \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #c); \
            failures++;                                                       \
        }                                                                     \
    } while (0)

typedef struct rec {
    uint64_t ts, worker, tid;
    bool out, preempted;
} rec;

/* blocked (no sample: blocked, other) or runnable (preempted) by the record */
static int no_cause(uint32_t stack, void *ctx) {
    (void)stack;
    (void)ctx;
    return D9M_PART_BLOCKED_OTHER;
}

/* 3 workers, one thread each, plus a thread of no worker: each thread switches out and in
 * every 100 us for 20 us (every 3rd preempted), a stray switch-in and two switch-outs in a row
 * among them. Every 10th round a second thread of worker 0 is off CPU from before the first
 * one's switch-out to after its switch-in: paired as they come, worker 0's intervals are then
 * out of switch-out order. Thread ids `stride` apart: 64 puts every thread in one slot of the
 * pass's cache of threads (poll_attribution.h), so each record evicts another's. */
static size_t make_records(rec *r, uint64_t stride) {
    size_t n = 0;
    for (uint64_t k = 0; k < 200; k++) {
        for (uint64_t w = 0; w < 4; w++) {
            uint64_t t0 = 1000000 + k * 100000 + w * 7000, tid = 100 + w * stride;
            uint64_t worker = w == 3 ? D9_WORKER_NONE : w;
            if (k == 50) r[n++] = (rec){t0 - 5000, worker, tid, false, false}; /* stray in */
            if (k == 80) r[n++] = (rec){t0 - 3000, worker, tid, true, false};  /* out, out */
            if (w == 0 && k % 10 == 0) r[n++] = (rec){t0 - 1000, 0, 100 + 4 * stride, true, false};
            r[n++] = (rec){t0, worker, tid, true, k % 3 == 0};
            r[n++] = (rec){t0 + 20000, worker, tid, false, false};
            if (w == 0 && k % 10 == 0) r[n++] = (rec){t0 + 30000, 0, 100 + 4 * stride, false, false};
        }
    }
    return n;
}

static void feed(d9f_attr *a, const rec *r, size_t n) {
    for (size_t i = 0; i < n; i++) CHECK(d9f_attr_switch(a, r[i].ts, r[i].worker, r[i].tid, r[i].out, r[i].preempted) == 0);
    CHECK(d9f_attr_prepare(a, no_cause, NULL) == 0);
}

/* every worker's polls of 30 us every 50 us: the parts with the cursor (in order of start) */
static void polls(const d9f_attr *a, d9m_parts *out, size_t *n) {
    d9f_attr_from from[3] = {D9F_ATTR_FROM_START, D9F_ATTR_FROM_START, D9F_ATTR_FROM_START};
    *n = 0;
    for (uint64_t t = 990000; t < 1000000 + 200 * 100000; t += 50000)
        for (uint64_t w = 0; w < 3; w++) d9f_attr_poll(a, w, t + w * 7000, t + w * 7000 + 30000, D9M_POLL_CPU_NONE, 0, &from[w], &out[(*n)++]);
}

static void check_pairing(uint64_t stride) {
    rec *r = malloc(2000 * sizeof *r);
    size_t n = make_records(r, stride);

    d9f_attr ordered = {0};
    feed(&ordered, r, n);
    CHECK(!ordered.unordered);
    CHECK(ordered.niv > 0);

    /* the same records, one thread's two records swapped (a switch-in before its switch-out in
     * the stream): sorted after the pass, the same intervals */
    rec *s = malloc(n * sizeof *s);
    memcpy(s, r, n * sizeof *s);
    size_t i = 0;
    while (!(s[i].tid == 100 + stride && s[i].out && !s[i + 1].out && s[i + 1].tid == 100 + stride)) i++;
    size_t j = i + 1; /* the switch-in of the same thread, moved before the switch-out */
    rec in = s[j];
    memmove(&s[i + 1], &s[i], (j - i) * sizeof *s);
    s[i] = in;
    d9f_attr sorted = {0};
    feed(&sorted, s, n);
    CHECK(sorted.unordered);
    CHECK(sorted.niv == ordered.niv);

    d9m_parts *pa = malloc(4000 * sizeof *pa), *pb = malloc(4000 * sizeof *pb);
    size_t na, nb;
    polls(&ordered, pa, &na);
    polls(&sorted, pb, &nb);
    CHECK(na == nb);
    uint64_t off_cpu = 0;
    for (size_t k = 0; k < na; k++) {
        CHECK(memcmp(&pa[k], &pb[k], sizeof pa[k]) == 0);
        uint64_t sum = 0;
        for (int p = 0; p < D9M_PARTS; p++) sum += pa[k].ns[p];
        CHECK(sum == 30000);
        off_cpu += 30000 - pa[k].ns[D9M_PART_ON_CPU];
    }
    CHECK(off_cpu > 0); /* the intervals were found */

    /* the cursor against a search: each poll asked alone (D9F_ATTR_FROM_START: searched) */
    size_t k = 0;
    for (uint64_t t = 990000; t < 1000000 + 200 * 100000; t += 50000)
        for (uint64_t w = 0; w < 3; w++, k++) {
            d9f_attr_from alone = D9F_ATTR_FROM_START;
            d9m_parts p;
            d9f_attr_poll(&ordered, w, t + w * 7000, t + w * 7000 + 30000, D9M_POLL_CPU_NONE, 0, &alone, &p);
            CHECK(memcmp(&p, &pa[k], sizeof p) == 0);
        }
    /* a poll that starts before the previous one of its worker: searched, not stepped on */
    d9f_attr_from from = D9F_ATTR_FROM_START;
    d9m_parts late, early, early_alone;
    d9f_attr_poll(&ordered, 1, 15000000, 15030000, D9M_POLL_CPU_NONE, 0, &from, &late);
    d9f_attr_poll(&ordered, 1, 1007000, 1037000, D9M_POLL_CPU_NONE, 0, &from, &early);
    d9f_attr_from alone = D9F_ATTR_FROM_START;
    d9f_attr_poll(&ordered, 1, 1007000, 1037000, D9M_POLL_CPU_NONE, 0, &alone, &early_alone);
    CHECK(memcmp(&early, &early_alone, sizeof early) == 0);
    CHECK(early.ns[D9M_PART_ON_CPU] < 30000);

    d9f_attr_free(&ordered);
    d9f_attr_free(&sorted);
    free(r);
    free(s);
    free(pa);
    free(pb);
}

int main(void) {
    check_pairing(1);
    check_pairing(64);
    if (failures) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    printf("PASS\n");
    return 0;
}
