/* The building blocks of the analysis: histogram accuracy, top-N, the id map (common/u64_map) with deletion,
 * string/stack interning, the time-ordering sort, time arguments, symbols (inline levels,
 * ranges, mappings) and frame classification. */
#include <math.h>

#include "check.h"
#include "test_rng.h"

#include "analysis/frame_class.h"
#include "analysis/hist.h"
#include "common/u64_map.h"
#include "analysis/intern.h"
#include "analysis/records.h"
#include "analysis/symtab.h"
#include "analysis/time_arg.h"
#include "analysis/topn.h"

static d9t_rng rng = {D9T_RNG_SEED};

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void test_hist(void) {
    /* bucket arithmetic: every value lies in its bucket, buckets are narrow */
    for (int i = 0; i < 100000; i++) {
        uint64_t v = d9t_rng_next(&rng) >> (d9t_rng_next(&rng) % 64);
        uint32_t b = d9a_hist_bucket(v);
        uint64_t lo = d9a_hist_bucket_low(b), w = d9a_hist_bucket_width(b);
        if (!(lo <= v && v - lo < w)) {
            CHECK(lo <= v && v - lo < w);
            break;
        }
        if (v >= 128 && (double)w / (double)lo > 1.0 / 128 + 1e-12) {
            CHECK((double)w / (double)lo <= 1.0 / 128);
            break;
        }
    }
    CHECK_EQ_U64(d9a_hist_bucket(127), 127);
    CHECK_EQ_U64(d9a_hist_bucket(UINT64_MAX), 7423);

    /* quantiles of a wide distribution within 0.4 % of the exact ones */
    enum { N = 20001 };
    static uint64_t vals[N];
    d9a_hist h = {0};
    for (int i = 0; i < N; i++) {
        vals[i] = 1000 + d9t_rng_next(&rng) % 50000000; /* 1 us .. 50 ms */
        d9a_hist_add(&h, vals[i]);
    }
    qsort(vals, N, sizeof vals[0], cmp_u64);
    const double qs[] = {0.5, 0.9, 0.99, 0.999};
    for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++) {
        uint64_t exact = vals[(size_t)(qs[i] * N + 0.999999) - 1];
        uint64_t got = d9a_hist_quantile(&h, qs[i]);
        double err = fabs((double)got - (double)exact) / (double)exact;
        if (err > 0.004) fprintf(stderr, "q%.3f: %" PRIu64 " vs exact %" PRIu64 "\n", qs[i], got, exact);
        CHECK(err <= 0.004);
    }
    CHECK_EQ_U64(d9a_hist_quantile(&h, 1.0), vals[N - 1]);
    CHECK_EQ_U64(h.min, vals[0]);
    CHECK_EQ_U64(h.max, vals[N - 1]);
    CHECK_EQ_U64(h.count, N);
    d9a_hist_free(&h);

    /* one value: every quantile is that value exactly */
    d9a_hist one = {0};
    d9a_hist_add(&one, 12000000);
    CHECK_EQ_U64(d9a_hist_quantile(&one, 0.5), 12000000);
    CHECK_EQ_U64(d9a_hist_quantile(&one, 0.99), 12000000);
    CHECK_EQ_U64(d9a_hist_count_above(&one, 10000000), 1);
    CHECK_EQ_U64(d9a_hist_count_above(&one, 12000000), 0);
    d9a_hist_free(&one);
    d9a_hist empty = {0};
    CHECK_EQ_U64(d9a_hist_quantile(&empty, 0.5), 0);
}

static void test_topn(void) {
    d9a_topn t;
    CHECK(d9a_topn_init(&t, 3, sizeof(uint64_t)) == 0);
    const uint64_t keys[] = {5, 1, 9, 7, 7, 2, 10};
    uint32_t gen_of_5 = 0;
    long slot_of_5 = -1;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        bool replaced;
        long s = d9a_topn_place(&t, keys[i], &replaced);
        if (s >= 0) *(uint64_t *)d9a_topn_at(&t, (size_t)s) = keys[i];
        if (keys[i] == 5) {
            slot_of_5 = s;
            gen_of_5 = t.gen[s];
        }
        if (keys[i] == 2) CHECK(s == -1); /* does not beat 5, 7, 9 */
    }
    size_t order[3];
    d9a_topn_order(&t, order);
    CHECK_EQ_U64(t.n, 3);
    CHECK_EQ_U64(*(uint64_t *)d9a_topn_at(&t, order[0]), 10);
    CHECK_EQ_U64(*(uint64_t *)d9a_topn_at(&t, order[1]), 9);
    CHECK_EQ_U64(*(uint64_t *)d9a_topn_at(&t, order[2]), 7);
    CHECK(slot_of_5 >= 0 && t.gen[slot_of_5] != gen_of_5); /* 5 was replaced: its ref is stale */
    CHECK(!d9a_topn_wants(&t, 7));
    CHECK(d9a_topn_wants(&t, 8));
    d9a_topn_free(&t);
    d9a_topn zero;
    CHECK(d9a_topn_init(&zero, 0, 8) == 0);
    CHECK(d9a_topn_place(&zero, 100, NULL) == -1);
    d9a_topn_free(&zero);
}

static void test_id_map(void) {
    /* against a plain array as the reference, with many removals */
    enum { KEYS = 5000 };
    static uint64_t keys[KEYS];
    static bool present[KEYS];
    d9_u64_map m = {0};
    for (int i = 0; i < KEYS; i++) keys[i] = d9t_rng_next(&rng) % 100000 * 7919;
    bool ok = true;
    for (int round = 0; round < 60000 && ok; round++) {
        int i = (int)(d9t_rng_next(&rng) % KEYS);
        /* duplicates in keys[]: only the first index owns a key */
        int owner = i;
        for (int j = 0; j < i; j++)
            if (keys[j] == keys[i]) {
                owner = j;
                break;
            }
        if (d9t_rng_next(&rng) % 3) {
            CHECK(d9_u64_map_put(&m, keys[owner], (uint32_t)owner) == 0);
            present[owner] = true;
        } else {
            bool was = d9_u64_map_remove(&m, keys[owner]);
            if (was != present[owner]) ok = false;
            present[owner] = false;
        }
    }
    CHECK(ok);
    size_t n = 0;
    for (int i = 0; i < KEYS; i++) {
        uint64_t *v = d9_u64_map_get(&m, keys[i]);
        if (present[i]) {
            n++;
            if (!v || *v != (uint32_t)i) ok = false;
        }
    }
    CHECK(ok);
    CHECK_EQ_U64(m.count, n);
    d9_u64_map_clear(&m);
    CHECK(d9_u64_map_get(&m, keys[0]) == NULL);
    d9_u64_map_free(&m);
}

static void test_intern(void) {
    d9a_strings s = {0};
    uint32_t a = d9a_strings_intern(&s, "app.c:10", 8);
    uint32_t b = d9a_strings_intern(&s, "app.c:11", 8);
    uint32_t c = d9a_strings_intern(&s, "app.c:10xyz", 8);
    CHECK(a != b);
    CHECK_EQ_U64(a, c);
    CHECK_STR(d9a_strings_get(&s, a), "app.c:10");
    char buf[32];
    for (int i = 0; i < 3000; i++) { /* growth keeps ids and pointers */
        int n = snprintf(buf, sizeof buf, "loc-%d", i);
        d9a_strings_intern(&s, buf, (size_t)n);
    }
    CHECK_STR(d9a_strings_get(&s, b), "app.c:11");
    CHECK_EQ_U64(d9a_strings_intern(&s, "loc-2999", 8), d9a_strings_intern(&s, "loc-2999", 8));
    CHECK_EQ_U64(s.count, 3002);
    d9a_strings_free(&s);

    d9a_stacks st = {0};
    uint64_t x[] = {1, 2, 3}, y[] = {1, 2, 4};
    uint32_t ix = d9a_stacks_intern(&st, x, 3), iy = d9a_stacks_intern(&st, y, 3);
    uint32_t ie = d9a_stacks_intern(&st, NULL, 0);
    CHECK(ix != iy && ie != ix);
    CHECK_EQ_U64(d9a_stacks_intern(&st, x, 3), ix);
    CHECK_EQ_U64(d9a_stacks_intern(&st, x, 2), d9a_stacks_intern(&st, y, 2));
    uint32_t n;
    const uint64_t *p = d9a_stacks_get(&st, iy, &n);
    CHECK(n == 3 && p[2] == 4);
    d9a_stacks_free(&st);
}

/* Records sorted in rounds as the analysis does: sort, hand on the earlier half, append
 * more, sort again (new records are sorted and merged with the kept ones). */
static void test_sort(void) {
    enum { ROUND = 20000, ROUNDS = 6 };
    d9a_rec_buf b = {.window = 4 * ROUND};
    uint64_t next_id = 0, last_handed = 0, late = 0, handed = 0, very_late = 0;
    bool ok = true;
    for (int round = 0; round < ROUNDS; round++) {
        uint64_t base = 1000000000000ull + (uint64_t)round * 1000000000ull;
        for (int i = 0; i < ROUND; i++) {
            d9a_rec r = {.ts = base + d9t_rng_next(&rng) % 2000000000ull, .kind = (uint8_t)(d9t_rng_next(&rng) % D9A_REC_KINDS),
                         .id = next_id++};
            if (i % 100 == 0 && i) r.ts = b.recs[b.n - 1].ts; /* equal timestamps */
            if (round == 2 && i < 1000) r.ts = 1000000000000ull - 1; /* very late */
            if (r.ts < 1000000000000ull) very_late++;
            CHECK(d9a_rec_buf_push(&b, &r) == 0);
        }
        d9a_rec_buf_sort(&b);
        bool *seen = calloc(b.n, 1);
        for (size_t i = 0; i < b.n; i++) {
            if (b.order[i].idx >= b.n || seen[b.order[i].idx]) ok = false;
            else seen[b.order[i].idx] = true;
            if (i == 0) continue;
            const d9a_rec *p = &b.recs[b.order[i - 1].idx], *q = &b.recs[b.order[i].idx];
            if (p->ts > q->ts || (p->ts == q->ts && p->kind > q->kind) ||
                (p->ts == q->ts && p->kind == q->kind && p->id > q->id))
                ok = false;
        }
        free(seen);
        size_t k = round + 1 == ROUNDS ? b.n : b.n / 2;
        for (size_t i = 0; i < k; i++) {
            uint64_t ts = b.recs[b.order[i].idx].ts;
            if (handed && ts < last_handed) late++;
            if (ts > last_handed) last_handed = ts;
            handed++;
        }
        d9a_rec_buf_drop_first(&b, k);
        for (size_t i = 1; i < b.n; i++) /* kept ones stay in arrival order */
            if (b.recs[i - 1].id > b.recs[i].id) ok = false;
    }
    CHECK(ok);
    CHECK_EQ_U64(handed, (uint64_t)ROUND * ROUNDS);
    CHECK_EQ_U64(b.n, 0);
    CHECK(very_late >= 1000);
    CHECK_EQ_U64(late, very_late); /* only the very late ones */
    d9a_rec_buf_free(&b);
}

static void test_time_args(void) { /* the parsing: test_common_time_arg */
    char buf[32];
    CHECK_STR(d9a_format_ns(buf, sizeof buf, 850), "850 ns");
    CHECK_STR(d9a_format_ns(buf, sizeof buf, 12300), "12.3 us");
    CHECK_STR(d9a_format_ns(buf, sizeof buf, 50280303), "50.280 ms");
    CHECK_STR(d9a_format_ns(buf, sizeof buf, 4809856406ull), "4.810 s");
}

static void test_symtab(void) {
    d9a_strings s = {0};
    d9a_symtab t = {.strings = &s};
    /* inline levels arrive in any order; the deepest comes first in a leaf-first stack */
    CHECK(d9a_symtab_add(&t, 0x1000, 0, "inner", 5, "a.c", 3, 7, 2) == 0);
    CHECK(d9a_symtab_add(&t, 0x1000, 0, "outer", 5, "a.c", 3, 1, 0) == 0);
    CHECK(d9a_symtab_add(&t, 0x1000, 0, "middle", 6, "a.c", 3, 4, 1) == 0);
    CHECK(d9a_symtab_add(&t, 0x1000, 0, "dup", 3, "", 0, 0, 1) == 0); /* same depth: ignored */
    CHECK(d9a_symtab_add(&t, 0x5000, 0x100, "ranged", 6, "", 0, 0, 0) == 0);
    CHECK(d9a_symtab_add_mapping(&t, 0x7f0000000000ull, 0x7f0000100000ull, 0x2000, "/usr/lib/libc.so.6", 18) == 0);
    d9a_frame f[8];
    uint32_t n = d9a_symtab_expand(&t, 0x1000, f, 8);
    CHECK_EQ_U64(n, 3);
    if (n == 3) {
        CHECK_STR(f[0].symbol, "inner");
        CHECK(f[0].inlined);
        CHECK_EQ_U64(f[0].line, 7);
        CHECK_STR(f[1].symbol, "middle");
        CHECK_STR(f[2].symbol, "outer");
        CHECK(!f[2].inlined);
    }
    CHECK_EQ_U64(d9a_symtab_expand(&t, 0x1000, f, 2), 2); /* bounded by max */
    n = d9a_symtab_expand(&t, 0x50ff, f, 8);
    CHECK(n == 1 && f[0].symbol && !strcmp(f[0].symbol, "ranged"));
    n = d9a_symtab_expand(&t, 0x5100, f, 8); /* just past the range */
    CHECK(n == 1 && f[0].symbol == NULL);
    n = d9a_symtab_expand(&t, 0x7f0000000123ull, f, 8);
    CHECK(n == 1 && f[0].symbol == NULL && f[0].object && !strcmp(f[0].object, "/usr/lib/libc.so.6"));
    CHECK(n == 1 && f[0].object_offset == 0x2123);
    n = d9a_symtab_expand(&t, 0xffffffff81000000ull, f, 8);
    CHECK(n == 1 && f[0].kernel && !f[0].object);
    d9a_symtab_free(&t);
    d9a_strings_free(&s);
}

static void test_frame_class(void) {
    CHECK(d9a_is_scheduler_frame("__schedule"));
    CHECK(d9a_is_scheduler_frame("schedule_hrtimeout_range_clock"));
    CHECK(d9a_is_scheduler_frame("__wait_rcu_gp"));
    CHECK(d9a_is_scheduler_frame("finish_task_switch.isra.0"));
    CHECK(d9a_is_scheduler_frame("wait_for_completion_killable"));
    CHECK(!d9a_is_scheduler_frame("synchronize_rcu"));
    CHECK(!d9a_is_scheduler_frame("futex_wait"));
    CHECK(!d9a_is_scheduler_frame(NULL));
    CHECK(d9a_is_preemption_frame("exit_to_user_mode_loop"));
    CHECK(d9a_is_preemption_frame("irqentry_exit_to_user_mode"));
    CHECK(!d9a_is_preemption_frame("ep_poll"));
    d9a_frame app = {.addr = 0x401000, .symbol = "handle", .file = "/home/me/app/src/main.rs"};
    d9a_frame dep = {.addr = 0x401000, .symbol = "tokio::run", .file = "/home/me/.cargo/registry/src/x.rs"};
    d9a_frame libc = {.addr = 0x7f00, .symbol = "recv", .object = "/lib/x86_64-linux-gnu/libc.so.6"};
    d9a_frame libc_nofile = {.addr = 0x7f00, .symbol = "__GI___socket"};
    d9a_frame c_app = {.addr = 0x401000, .symbol = "serve_client"};
    d9a_frame kern = {.addr = 0xffffffff81000000ull, .symbol = "do_syscall_64", .kernel = true};
    d9a_frame hex = {.addr = 0x401000};
    CHECK(d9a_is_app_frame(&app));
    CHECK(!d9a_is_app_frame(&dep));
    CHECK(!d9a_is_app_frame(&libc));
    CHECK(!d9a_is_app_frame(&libc_nofile));
    CHECK(d9a_is_app_frame(&c_app));
    CHECK(!d9a_is_app_frame(&kern));
    CHECK(!d9a_is_app_frame(&hex));
    CHECK_STR(d9a_basename("/a/b/c.rs"), "c.rs");
    CHECK_STR(d9a_basename("c.rs"), "c.rs");
}

int main(void) {
    test_hist();
    test_topn();
    test_id_map();
    test_intern();
    test_sort();
    test_time_args();
    test_symtab();
    test_frame_class();
    return d9t_summary("test_analysis_parts");
}
