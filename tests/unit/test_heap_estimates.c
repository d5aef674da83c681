/* The heap sampler's weighted estimates (through the library call d9_heap_sample_alloc/free,
 * recorded and read back from the trace): on a workload of mixed sizes, small churn from one
 * site and rare large blocks from another, the allocated and in-use bytes of each site, summed
 * with each sample's weight 1/(1-e^(-size/rate)), are within 10 % of the truth for every one of
 * several seeds; the same seed gives the same samples; at rate 1 every allocation is recorded
 * and the answer is exact. The bound is > 5 standard errors (about 3000 samples a run), so it
 * does not fail by chance; the seeds make each run reproducible anyway. Addresses are made up
 * (the library call never touches the memory). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common/heap_weight.h"
#include "dial9/dial9.h"
#include "test_source_util.h"

#define RATE (64u * 1024u)
#define SMALL_ALLOCS 400000u
#define LARGE_EVERY 2000u            /* one large block per this many small ones */
#define LARGE_BYTES (1024u * 1024u)

typedef struct site_totals {
    double alloc, inuse;
} site_totals;

typedef struct truth {
    site_totals small, large;
} truth;

static uint64_t next_addr = 0x100000;

/* Each allocator is its own function: the sample's first frame is the return into it. The
 * block's address goes in *addr; nonzero when sampled (only those are handed to
 * d9_heap_sample_free, as the API asks). */
TT_NOINLINE static int alloc_small(size_t size, uint64_t *addr) {
    *addr = next_addr += 4096;
    int sampled = d9_heap_sample_alloc((void *)(uintptr_t)*addr, size);
    __asm__ volatile("" : "+r"(sampled)); /* not a tail call: this frame is the site */
    return sampled;
}

TT_NOINLINE static int alloc_large(size_t size, uint64_t *addr) {
    *addr = next_addr += 4096;
    int sampled = d9_heap_sample_alloc((void *)(uintptr_t)*addr, size);
    __asm__ volatile("" : "+r"(sampled)); /* not a tail call: this frame is the site */
    return sampled;
}

static void run_workload(uint64_t seed, uint64_t rate, unsigned small_allocs, unsigned flush_every, truth *t) {
    memset(t, 0, sizeof *t);
    uint64_t rng = seed * 2654435761u + 1;
    for (unsigned i = 0; i < small_allocs; i++) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        size_t size = 16 + (size_t)((rng >> 33) % 1009); /* 16 .. 1024 bytes */
        uint64_t a;
        int sampled = alloc_small(size, &a);
        t->small.alloc += (double)size;
        if ((rng >> 20) & 1) { /* half the small blocks are freed */
            if (sampled) d9_heap_sample_free((void *)(uintptr_t)a, size);
        } else {
            t->small.inuse += (double)size;
        }
        if (i % LARGE_EVERY == 0) {
            sampled = alloc_large(LARGE_BYTES, &a);
            t->large.alloc += LARGE_BYTES;
            if ((i / LARGE_EVERY) % 3 == 0) {
                if (sampled) d9_heap_sample_free((void *)(uintptr_t)a, LARGE_BYTES);
            } else {
                t->large.inuse += LARGE_BYTES;
            }
        }
        if (flush_every && i % flush_every == flush_every - 1) d9_flush(); /* rings never fill */
    }
}

/* ---------------------------------------------------------------- reading the trace back */

typedef struct reading {
    tt_range small_fn, large_fn;
    uint64_t rate, samples, dropped;
    site_totals small, large;
    /* live sampled blocks: address -> weighted bytes and site, a small open table */
    uint64_t *keys;
    double *bytes;
    uint8_t *site; /* 1 small, 2 large */
    size_t cap;
    uint64_t sample_sum; /* a digest of what was sampled, to compare runs */
} reading;

static size_t slot_of(reading *r, uint64_t key) {
    size_t i = (size_t)(key * 0x9e3779b97f4a7c15ull >> 20) & (r->cap - 1);
    while (r->keys[i] && r->keys[i] != key) i = (i + 1) & (r->cap - 1);
    return i;
}

static void on_event(const d9_event *ev, void *ctx) {
    reading *r = ctx;
    if (d9t_is(ev, "SegmentMetadataEvent")) {
        const d9_value *m = d9_event_field(ev, "entries");
        for (uint32_t i = 0; m && i < m->map.count; i++) {
            const d9_dec_kv *kv = &m->map.items[i];
            if (kv->key.len == 32 && !memcmp(kv->key.ptr, "memory_profile.sample_rate_bytes", 32))
                r->rate = strtoull(kv->value.ptr, NULL, 10);
        }
    } else if (d9t_is(ev, "DroppedEventsEvent")) {
        r->dropped += d9t_field_u(ev, "count");
    } else if (d9t_is(ev, "AllocEvent")) {
        uint32_t n;
        uint64_t *frames = tt_copy_stack(d9_event_field(ev, "callchain"), &n);
        uint8_t site = n && tt_in(r->small_fn, frames[0]) ? 1 : n && tt_in(r->large_fn, frames[0]) ? 2 : 0;
        free(frames);
        uint64_t size = d9t_field_u(ev, "size"), addr = d9t_field_u(ev, "addr");
        r->samples++;
        r->sample_sum = r->sample_sum * 31 + size * 7 + addr;
        double w = d9_heap_weight(size, r->rate) * (double)size;
        site_totals *s = site == 1 ? &r->small : site == 2 ? &r->large : NULL;
        if (!s) return;
        s->alloc += w;
        s->inuse += w;
        size_t k = slot_of(r, addr);
        r->keys[k] = addr;
        r->bytes[k] = w;
        r->site[k] = site;
    } else if (d9t_is(ev, "FreeEvent")) {
        uint64_t addr = d9t_field_u(ev, "addr");
        size_t k = slot_of(r, addr);
        if (r->keys[k] != addr || !r->site[k]) return; /* not sampled */
        (r->site[k] == 1 ? &r->small : &r->large)->inuse -= r->bytes[k];
        r->site[k] = 0;
    }
}

static void record_run(uint64_t seed, uint64_t rate, unsigned small_allocs, unsigned flush_every, truth *t,
                       reading *r) {
    char *dir = d9t_mkdtemp("heap_estimates");
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    cfg.memory_profile = true;
    cfg.memory_sample_bytes = rate;
    cfg.memory_seed = seed;
    cfg.buffer_kb = 16 * 1024;
    cfg.schedule_profile = false;
    cfg.symbolize = false;
    CHECK(d9_start(&cfg) == 0);
    run_workload(seed, rate, small_allocs, flush_every, t);
    d9_stop();
    memset(r, 0, sizeof *r);
    r->small_fn = tt_function_range("alloc_small", (const void *)alloc_small);
    r->large_fn = tt_function_range("alloc_large", (const void *)alloc_large);
    r->cap = 1u << 20;
    r->keys = calloc(r->cap, sizeof *r->keys);
    r->bytes = calloc(r->cap, sizeof *r->bytes);
    r->site = calloc(r->cap, 1);
    CHECK(r->keys && r->bytes && r->site);
    CHECK(d9t_decode_run(d9_run_dir(), on_event, r) == 0);
    free(r->keys);
    free(r->bytes);
    free(r->site);
    CHECK_EQ_U64(r->rate, rate);
    CHECK_EQ_U64(r->dropped, 0);
    d9t_rm_rf(dir);
    free(dir);
}

typedef struct rate_one_run {
    truth t;
    reading r;
} rate_one_run;

/* On a thread of its own: a thread's countdown carries over from one run to the next, and
 * exactness needs every block of this run judged at rate 1. */
static void *rate_one(void *arg) {
    rate_one_run *x = arg;
    record_run(9, 1, 3000, 100, &x->t, &x->r);
    return NULL;
}

static bool within(double est, double exact, double rel) {
    return est >= exact * (1 - rel) && est <= exact * (1 + rel);
}

int main(void) {
    /* several seeds: every estimate within 10 % of the truth */
    for (uint64_t seed = 1; seed <= 6; seed++) {
        truth t;
        reading r;
        record_run(seed, RATE, SMALL_ALLOCS, 5000, &t, &r);
        printf("seed %llu: %llu samples; small alloc %.4g (truth %.4g) in use %.4g (%.4g); "
               "large alloc %.4g (%.4g) in use %.4g (%.4g)\n",
               (unsigned long long)seed, (unsigned long long)r.samples, r.small.alloc, t.small.alloc,
               r.small.inuse, t.small.inuse, r.large.alloc, t.large.alloc, r.large.inuse, t.large.inuse);
        CHECK(r.samples > 1000);
        CHECK(within(r.small.alloc, t.small.alloc, 0.10));
        CHECK(within(r.small.inuse, t.small.inuse, 0.10));
        CHECK(within(r.large.alloc, t.large.alloc, 0.10));
        CHECK(within(r.large.inuse, t.large.inuse, 0.10));
    }

    /* the same seed, the same sampled blocks (addresses restart from the same place) */
    {
        truth t;
        reading r;
        next_addr = 0x100000;
        record_run(1, RATE, SMALL_ALLOCS, 5000, &t, &r);
        uint64_t samples1 = r.samples, digest1 = r.sample_sum;
        next_addr = 0x100000;
        record_run(1, RATE, SMALL_ALLOCS, 5000, &t, &r);
        CHECK_EQ_U64(r.samples, samples1);
        CHECK_EQ_U64(r.sample_sum, digest1);
    }

    /* rate 1: every allocation recorded, weight 1, the exact answer */
    {
        rate_one_run x;
        pthread_t th;
        int rc = pthread_create(&th, NULL, rate_one, &x);
        if (rc == 0) pthread_join(th, NULL);
        CHECK(rc == 0); /* after the join: the checks' counters are not shared with the thread */
        const truth t = x.t;
        const reading r = x.r;
        printf("rate 1: %llu samples; small alloc %.0f (truth %.0f) in use %.0f (%.0f); large %.0f (%.0f) in use %.0f (%.0f)\n",
               (unsigned long long)r.samples, r.small.alloc, t.small.alloc, r.small.inuse, t.small.inuse,
               r.large.alloc, t.large.alloc, r.large.inuse, t.large.inuse);
        CHECK(r.small.alloc == t.small.alloc);
        CHECK(r.small.inuse == t.small.inuse);
        CHECK(r.large.alloc == t.large.alloc);
        CHECK(r.large.inuse == t.large.inuse);
    }
    return d9t_summary("heap_estimates");
}
