/* `dial9 diff`'s engine (src/analysis/diff*.c) on hand-built traces with known answers: the
 * statistics against values worked by hand, each verdict (a slower location, a slower tail, a
 * new one, a faster one, one gone, too few polls, a significant change too small to count),
 * the ranking, a side that lost data, --slowest, the differential folded stacks and
 * --fail-on's parsing and verdicts. */
#include "check.h"
#include "test_analysis_builder.h"

#include "analysis/diff.h"
#include "analysis/diff_fail_on.h"
#include "analysis/diff_flame.h"
#include "analysis/diff_side.h"
#include "analysis/diff_stats.h"

#define T0 (5000 * MS)

static bool near(double x, double want, double tol) { return x > want - tol && x < want + tol; }

static void test_stats(void) {
    CHECK(near(d9d_sqrt(2), 1.41421356, 1e-7));
    CHECK(near(d9d_sqrt(1e12), 1e6, 1e-3));
    CHECK(near(d9d_sqrt(1e-6), 1e-3, 1e-10));
    CHECK(d9d_sqrt(0) == 0 && d9d_sqrt(-1) == 0);

    /* A = 1..5, B = 6..10 (below 128: one bucket per value): U = 25, mean 12.5,
     * var = 25/12 * 11 = 22.9167, z = (25 - 12.5 - 0.5) / 4.7871 = 2.5067 */
    d9a_hist a = {0}, b = {0};
    for (uint64_t v = 1; v <= 5; v++) d9a_hist_add(&a, v);
    for (uint64_t v = 6; v <= 10; v++) d9a_hist_add(&b, v);
    double sup;
    CHECK(near(d9d_mann_whitney_z(&a, &b, &sup), 2.5067, 1e-3));
    CHECK(near(sup, 1.0, 1e-9));
    CHECK(near(d9d_mann_whitney_z(&b, &a, &sup), -2.5067, 1e-3));
    CHECK(near(sup, 0.0, 1e-9));
    /* with ties: A = {1, 2, 2}, B = {2, 3, 3}. U_B = 1.5 + 3 + 3 = 7.5 (the 2 of B against A's
     * 1 and its two 2s: 1 + 0.5 + 0.5 = 2, hmm: 2; each 3: 3) -> U = 8, mean 4.5;
     * ties: t = 1, 3, 2 -> 0 + 24 + 6 = 30; var = 9/12 * (7 - 30/30) = 4.5; z = 3/2.1213 */
    d9a_hist c = {0}, e = {0};
    d9a_hist_add(&c, 1);
    d9a_hist_add(&c, 2);
    d9a_hist_add(&c, 2);
    d9a_hist_add(&e, 2);
    d9a_hist_add(&e, 3);
    d9a_hist_add(&e, 3);
    CHECK(near(d9d_mann_whitney_z(&c, &e, &sup), 3.0 / 2.12132, 1e-3));
    CHECK(near(sup, 8.0 / 9.0, 1e-9));
    /* one tie for everything: no information */
    d9a_hist s1 = {0}, s2 = {0};
    for (int i = 0; i < 4; i++) d9a_hist_add(&s1, 7), d9a_hist_add(&s2, 7);
    CHECK(d9d_mann_whitney_z(&s1, &s2, NULL) == 0);
    CHECK(d9d_tail_z(&s1, &s2, 0.99) == 0);
    d9a_hist empty = {0};
    CHECK(d9d_mann_whitney_z(&empty, &s2, &sup) == 0 && sup == 0.5);

    /* 10/100 against 30/100: p 0.2, se sqrt(0.2 * 0.8 * 0.02) = 0.056569, z 3.5355 */
    CHECK(near(d9d_proportion_z(10, 100, 30, 100), 3.5355, 1e-3));
    CHECK(near(d9d_proportion_z(30, 100, 10, 100), -3.5355, 1e-3));
    CHECK(d9d_proportion_z(0, 100, 0, 100) == 0 && d9d_proportion_z(1, 0, 1, 5) == 0);
    /* the tail: 1000 values of 40 us a side, B with 50 of them at 5 ms instead: A's p99 is in
     * the 40 us bucket, 0 of A and 50 of B above it: z = 0.05 / sqrt(0.025 * 0.975 * 0.002) =
     * 7.16; swapped, A's tail in B's p99 bucket (5 ms) has none above: the other way counts */
    d9a_hist ta = {0}, tb_ = {0};
    for (int i = 0; i < 1000; i++) d9a_hist_add(&ta, 40 * US), d9a_hist_add(&tb_, i < 50 ? 5 * MS : 40 * US);
    CHECK(near(d9d_tail_z(&ta, &tb_, 0.99), 7.16, 0.01));
    CHECK(near(d9d_tail_z(&tb_, &ta, 0.99), -7.16, 0.01));
    d9a_hist *all[] = {&a, &b, &c, &e, &s1, &s2, &ta, &tb_};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) d9a_hist_free(all[i]);
}

/* Polls one after another on worker 0, from *t_ns on, with a deterministic jitter of 0..10 us
 * as real polls have (exact_polls: none). */
static void polls_jitter(tb *t, uint64_t *t_ns, uint32_t loc, int n, uint64_t dur, bool jitter) {
    for (int i = 0; i < n; i++) {
        uint64_t d = dur + (jitter ? (uint64_t)((i * 37) % 11) * US : 0);
        tb_poll(t, *t_ns, d, 0, 0, 100 + (uint64_t)loc, loc);
        *t_ns += d + 10 * US;
    }
}
static void polls(tb *t, uint64_t *t_ns, uint32_t loc, int n, uint64_t dur) { polls_jitter(t, t_ns, loc, n, dur, true); }
static void exact_polls(tb *t, uint64_t *t_ns, uint32_t loc, int n, uint64_t dur) {
    polls_jitter(t, t_ns, loc, n, dur, false);
}

typedef struct scenario_loc {
    const char *name;
    int na, nb;
    uint64_t dur_a, dur_b;
    int nb_tail; /* B: this many of its polls at 5 ms instead */
} scenario_loc;

/* Locations and what diff must say of them, in the order it must rank them. */
static const scenario_loc scenario[] = {
    {"slower.c:2", 200, 200, 100 * US, 2100 * US, 0},   /* regression: +2 ms each, impact 400 ms */
    {"tail.c:7", 1000, 1000, 40 * US, 40 * US, 50},     /* regression in the tail: impact ~248 ms */
    {"fresh.c:4", 0, 50, 0, 300 * US, 0},               /* new */
    {"faster.c:3", 200, 200, 500 * US, 200 * US, 0},    /* improvement */
    {"old.c:5", 50, 0, 300 * US, 0, 0},                 /* gone */
    {"rare.c:6", 5, 5, 50 * US, 900 * US, 0},           /* too few */
    {"smallshift.c:8", 500, 500, 30 * US, 33 * US, 0},  /* significant, but 3 us < 20 us */
    {"steady.c:1", 200, 200, 50 * US, 50 * US, 0},      /* unchanged */
};
static const d9d_verdict scenario_verdicts[] = {
    D9D_REGRESSION, D9D_REGRESSION, D9D_NEW, D9D_IMPROVEMENT, D9D_GONE, D9D_TOO_FEW, D9D_UNCHANGED, D9D_UNCHANGED,
};
#define NSCEN (sizeof scenario / sizeof scenario[0])

static void build_side(tb *t, bool b, bool drops) {
    tb_stream(t);
    uint64_t now = T0;
    for (size_t i = 0; i < NSCEN; i++) {
        const scenario_loc *s = &scenario[i];
        uint32_t loc = tb_string(t, s->name);
        int n = b ? s->nb : s->na;
        uint64_t dur = b ? s->dur_b : s->dur_a;
        if (b && s->nb_tail) {
            polls(t, &now, loc, s->nb_tail, 5 * MS - 10 * US);
            n -= s->nb_tail;
        }
        polls(t, &now, loc, n, dur);
    }
    if (drops) tb_drops(t, now, 7, tb_string(t, "ring_full"), 100, 0);
}

static d9d_diff *diff_of(tb *ta, tb *tbb, d9a_analysis **aa, d9a_analysis **ab, d9d_mode mode) {
    d9a_options opt;
    d9a_options_init(&opt);
    const d9a_report *ra = tb_analyze(aa, ta, &opt);
    const d9a_report *rb = tb_analyze(ab, tbb, &opt);
    CHECK(ra && rb);
    if (!ra || !rb) return NULL;
    d9d_diff *d = d9d_new(mode, NULL);
    d9d_side_from(&d->side[0], ra, true, "A");
    d9d_side_from(&d->side[1], rb, true, "B");
    CHECK(d9d_add_groups(d, *aa, *ab) == 0);
    d9d_finish(d);
    return d;
}

static void test_runs(void) {
    tb a = {0}, b = {0};
    build_side(&a, false, false);
    build_side(&b, true, false);
    d9a_analysis *aa, *ab;
    d9d_diff *d = diff_of(&a, &b, &aa, &ab, D9D_RUNS);
    if (!d) return;
    CHECK_EQ_U64(d->nrows, NSCEN);
    for (size_t i = 0; i < d->nrows && i < NSCEN; i++) {
        const d9d_row *r = &d->rows[i];
        CHECK_STR(r->name, scenario[i].name);
        CHECK_STR(r->kind, "spawn_location");
        CHECK_STR(r->measure, "poll_ns");
        if (r->verdict != scenario_verdicts[i])
            fprintf(stderr, "row %zu %s: %s (%s), want %s\n", i, r->name, d9d_verdict_name(r->verdict), r->reason,
                    d9d_verdict_name(scenario_verdicts[i]));
        CHECK(r->verdict == scenario_verdicts[i]);
        CHECK_EQ_U64(r->a.count, (uint64_t)scenario[i].na);
        CHECK_EQ_U64(r->b.count, (uint64_t)scenario[i].nb);
    }
    const d9d_row *slow = &d->rows[0];
    /* jitter 0..10 us: the medians are within it and the histogram's 0.4 % */
    CHECK(slow->a.p50_ns >= 100 * US && slow->a.p50_ns <= 111 * US);
    CHECK(slow->b.p50_ns >= 2100 * US && slow->b.p50_ns <= 2120 * US);
    CHECK(slow->z_center > 10);
    CHECK(strstr(slow->reason, "p50") != NULL);
    const d9d_row *tail = &d->rows[1];
    CHECK(tail->z_tail > 5);
    CHECK(tail->a.p50_ns == tail->b.p50_ns);
    CHECK(strstr(tail->reason, "p99") != NULL);
    CHECK(d->rows[6].z_center > 10); /* smallshift: significant, too small to count */
    CHECK_EQ_U64(d->verdict_counts[D9D_REGRESSION], 2);
    CHECK_EQ_U64(d->verdict_counts[D9D_UNCHANGED], 2);

    /* --fail-on on this diff */
    d9d_fail_on f;
    char err[300];
    CHECK(d9d_fail_on_parse("regression,new,data-loss,p99=+20%,p50=+1.5ms,mean=+10s,p50=+2.5ms", &f, err, sizeof err) == 0);
    CHECK_EQ_U64(f.n, 7);
    bool broken[D9D_FAIL_ITEMS];
    char why[D9D_FAIL_ITEMS][256];
    CHECK_EQ_U64(d9d_fail_on_check(&f, d, broken, why), 4);
    CHECK(broken[0] && strstr(why[0], "slower.c:2"));
    CHECK(broken[1] && strstr(why[1], "fresh.c:4"));
    CHECK(!broken[2]);                              /* nothing lost */
    CHECK(broken[3]);                               /* slower.c's p99 rose 20-fold */
    CHECK(broken[4] && strstr(why[4], "slower.c:2")); /* +2 ms >= 1.5 ms */
    CHECK(!broken[5]);
    CHECK(!broken[6]);                              /* +2 ms < 2.5 ms */
    d9d_free(d);
    d9a_free(aa);
    d9a_free(ab);

    /* B against itself: nothing changed */
    d = diff_of(&b, &b, &aa, &ab, D9D_RUNS);
    if (d) {
        CHECK_EQ_U64(d->verdict_counts[D9D_REGRESSION] + d->verdict_counts[D9D_IMPROVEMENT] + d->verdict_counts[D9D_NEW] +
                         d->verdict_counts[D9D_GONE],
                     0);
        d9d_free(d);
    }
    d9a_free(aa);
    d9a_free(ab);
    free(a.b.data);
    free(b.b.data);
}

/* B dropped events: old.c's absence from B proves nothing; A dropped: neither does fresh.c's
 * absence from A. Both are said, and --fail-on data-loss breaks. */
static void test_missing_data(void) {
    tb a = {0}, b = {0};
    build_side(&a, false, true);
    build_side(&b, true, true);
    d9a_analysis *aa, *ab;
    d9d_diff *d = diff_of(&a, &b, &aa, &ab, D9D_RUNS);
    if (!d) return;
    CHECK(d->side[0].lost_data && d->side[1].lost_data);
    CHECK_EQ_U64(d->side[1].dropped, 7);
    CHECK_EQ_U64(d->verdict_counts[D9D_NEW], 0);
    CHECK_EQ_U64(d->verdict_counts[D9D_GONE], 0);
    CHECK_EQ_U64(d->verdict_counts[D9D_MISSING_DATA], 2);
    CHECK_EQ_U64(d->verdict_counts[D9D_REGRESSION], 2); /* durations still compare */
    for (size_t i = 0; i < d->nrows; i++)
        if (!strcmp(d->rows[i].name, "old.c:5") || !strcmp(d->rows[i].name, "fresh.c:4"))
            CHECK(d->rows[i].verdict == D9D_MISSING_DATA && strstr(d->rows[i].reason, "lost data"));
    d9d_fail_on f;
    char err[300];
    CHECK(d9d_fail_on_parse("data-loss,new", &f, err, sizeof err) == 0);
    bool broken[D9D_FAIL_ITEMS];
    char why[D9D_FAIL_ITEMS][256];
    CHECK_EQ_U64(d9d_fail_on_check(&f, d, broken, why), 1);
    CHECK(broken[0] && strstr(why[0], "7 events dropped"));
    d9d_free(d);
    d9a_free(aa);
    d9a_free(ab);
    free(a.b.data);
    free(b.b.data);
}

/* --slowest 1 %: 1000 polls of 10-20 us at a.c, 500 of them and 5 of 5 ms at m.c, 20 of 5 ms at
 * hog.c: the p99 of the 1525 is in the 5 ms bucket, B holds hog.c's 20 and m.c's 5. */
static void test_slowest(void) {
    tb t = {0};
    tb_stream(&t);
    uint64_t now = T0;
    uint32_t la = tb_string(&t, "a.c:1"), lm = tb_string(&t, "m.c:2"), lh = tb_string(&t, "hog.c:3");
    polls(&t, &now, la, 1000, 10 * US);
    polls(&t, &now, lm, 500, 10 * US);
    exact_polls(&t, &now, lm, 5, 5 * MS);
    exact_polls(&t, &now, lh, 20, 5 * MS);
    d9a_options opt;
    d9a_options_init(&opt);
    d9a_analysis *an;
    const d9a_report *r = tb_analyze(&an, &t, &opt);
    CHECK(r != NULL);
    if (r) {
        d9d_diff *d = d9d_new(D9D_SLOWEST, NULL);
        d9d_side_from(&d->side[0], r, true, "A");
        d9d_side_from(&d->side[1], r, true, "B");
        CHECK(d9d_add_groups_slowest(d, an, 0.01) == 0);
        d9d_finish(d);
        CHECK(d->slowest_threshold_ns >= 4900 * US && d->slowest_threshold_ns <= 5 * MS);
        CHECK_EQ_U64(d->totals[1], 25);
        CHECK_EQ_U64(d->totals[0], 1500);
        CHECK_EQ_U64(d->side[1].polls, 25);
        CHECK_EQ_U64(d->nrows, 3);
        if (d->nrows == 3) {
            /* m.c: 5 of the 25 slowest (20 %) against 500 of 1500 (33 %): z -1.4, no change;
             * a.c: none of the slowest against 67 % of the rest, z -7 */
            CHECK_STR(d->rows[0].name, "hog.c:3");
            CHECK(d->rows[0].verdict == D9D_NEW);
            CHECK_EQ_U64(d->rows[0].b.count, 20);
            CHECK_STR(d->rows[1].name, "a.c:1");
            CHECK(d->rows[1].verdict == D9D_IMPROVEMENT);
            CHECK_STR(d->rows[2].name, "m.c:2");
            CHECK(d->rows[2].verdict == D9D_UNCHANGED);
            CHECK_EQ_U64(d->rows[2].b.count, 5);
            CHECK_EQ_U64(d->rows[2].a.count, 500);
        }
        d9d_fail_on f;
        char err[300];
        CHECK(d9d_fail_on_parse("new", &f, err, sizeof err) == 0);
        bool broken[D9D_FAIL_ITEMS];
        char why[D9D_FAIL_ITEMS][256];
        CHECK_EQ_U64(d9d_fail_on_check(&f, d, broken, why), 1);
        CHECK(strstr(why[0], "hog.c:3") != NULL);
        d9d_free(d);
    }
    d9a_free(an);
    free(t.b.data);
}

static void flame_side(tb *t, int cpu_work, int cpu_other, int off_wait) {
    tb_stream(t);
    const uint64_t work[] = {0x402000, 0x401000};                 /* work <- main */
    const uint64_t other[] = {0x403000, 0x401000};                /* other;x <- main */
    const uint64_t wait[] = {0xffffffff81000000ull, 0x404000, 0x401000}; /* __schedule <- wait <- main */
    uint32_t sw = tb_stack(t, work, 2), so = tb_stack(t, other, 2), sx = tb_stack(t, wait, 3);
    uint64_t now = T0;
    for (int i = 0; i < cpu_work; i++) tb_sample(t, now += MS, 0, 100, 0, sw);
    for (int i = 0; i < cpu_other; i++) tb_sample(t, now += MS, 0, 100, 0, so);
    for (int i = 0; i < off_wait; i++) tb_sample(t, now += MS, 0, 100, 1, sx);
    tb_symbol(t, 0x401000, 0x100, "main", 0, "m.c", 1);
    tb_symbol(t, 0x402000, 0x100, "work", 0, "m.c", 2);
    tb_symbol(t, 0x403000, 0x100, "other;x", 0, "m.c", 3); /* a ';' in a name is no frame break */
    tb_symbol(t, 0x404000, 0x100, "wait", 0, "m.c", 4);
    tb_symbol(t, 0xffffffff81000000ull, 0x100, "__schedule", 0, "", 0);
}

static void test_flame(void) {
    tb a = {0}, b = {0};
    flame_side(&a, 3, 1, 0);
    flame_side(&b, 1, 0, 2);
    d9a_options opt;
    d9a_options_init(&opt);
    d9a_analysis *aa, *ab;
    CHECK(tb_analyze(&aa, &a, &opt) != NULL);
    CHECK(tb_analyze(&ab, &b, &opt) != NULL);
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    CHECK(d9d_write_flame(m, aa, ab) == 0);
    fclose(m);
    CHECK_STR(text, "cpu;main;other:x 1 0\n"
                    "cpu;main;work 3 1\n"
                    "off-cpu;main;wait;__schedule 0 2\n");
    free(text);
    d9a_free(aa);
    d9a_free(ab);
    free(a.b.data);
    free(b.b.data);
}

static void test_fail_on_parse(void) {
    d9d_fail_on f;
    char err[300];
    CHECK(d9d_fail_on_parse("p99=+20%", &f, err, sizeof err) == 0);
    CHECK(f.n == 1 && f.items[0].kind == D9D_FAIL_P99 && f.items[0].relative && f.items[0].percent == 20);
    CHECK(d9d_fail_on_parse("p50=2ms,mean=+150us", &f, err, sizeof err) == 0);
    CHECK(f.n == 2 && !f.items[0].relative && f.items[0].ns == 2 * MS && f.items[1].ns == 150 * US);
    static const struct { const char *spec, *says; } bad[] = {
        {"", "empty"},
        {"p99=20", "needs a unit"},
        {"p99=-5%", "wants an increase"},
        {"p99", "wants an increase"},
        {"new=3", "takes no value"},
        {"bogus", "unknown"},
        {"new,,regression", "empty item"},
        {"p99=+20%,", "empty item"},
        {"p99=+1e30s", "wants an increase"},
        {"p99=+5e9s", "too large"}, /* past 1e18 ns */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        bool refused = d9d_fail_on_parse(bad[i].spec, &f, err, sizeof err) != 0;
        if (!refused || !strstr(err, bad[i].says))
            fprintf(stderr, "--fail-on '%s': %s, said '%s'\n", bad[i].spec, refused ? "refused" : "accepted", err);
        CHECK(refused && strstr(err, bad[i].says));
    }
}

int main(void) {
    test_stats();
    test_runs();
    test_missing_data();
    test_slowest();
    test_flame();
    test_fail_on_parse();
    return d9t_summary("test_diff");
}
