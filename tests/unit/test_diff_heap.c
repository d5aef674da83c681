/* `dial9 diff`'s heap section (src/analysis/diff_heap.c) on two hand-built runs with heap
 * samples at one sample per 4096 bytes, whose weighted sums are worked by hand (the weight of
 * a sample of s bytes is s/(1-e^(-s/4096)): 4096 B -> 6479.7766, 1024 B -> 4629.3111, 100 B ->
 * 4146.2034, 2048 B -> 5204.9799, 8192 B -> 9474.1925). B's code sits 0x10000 higher (another
 * run's addresses): sites match by their frames' names, and two stacks of one run with the
 * same names are one site. Checked: each site's allocated and in-use bytes on each side, the
 * ranking (growth of in-use first, shrinking last), the text and JSON, and --fail-on
 * heap_inuse's parsing and verdicts (relative, from nothing, in bytes, no heap). */
#include <math.h>

#include "check.h"
#include "test_analysis_builder.h"

#include "analysis/diff.h"
#include "analysis/diff_fail_on.h"
#include "analysis/diff_heap.h"
#include "analysis/diff_render.h"

#define T0 (5000 * MS)
#define W4096 6479.776591336761
#define W1024 4629.311144128306
#define W100 4146.203448499758
#define W2048 5204.979881035363
#define W8192 9474.192529405262

static bool near(double x, double want) { return fabs(x - want) < 1e-6 * (fabs(want) + 1); }

typedef struct side_builder {
    tb t;
    uint64_t base;  /* where this run's code is */
    uint64_t now, next_addr;
    uint32_t stacks[8];
} side_builder;

enum { S_LEAK, S_CHURN, S_CHURN2, S_FRESH, S_OLD, S_SHRINK };

static void alloc(side_builder *s, int site, uint64_t size, uint64_t *addr) {
    *addr = s->next_addr += 0x10000;
    d9_enc_event(&s->t.b, &s->t.st, D9_SCH_ALLOC, s->now += MS);
    d9_put_u32(&s->t.b, 100);
    d9_put_varint(&s->t.b, size);
    d9_put_varint(&s->t.b, *addr);
    d9_put_u32(&s->t.b, s->stacks[site]);
}

static void release(side_builder *s, uint64_t addr, uint64_t size) {
    d9_enc_event(&s->t.b, &s->t.st, D9_SCH_FREE, s->now += MS);
    d9_put_u32(&s->t.b, 100);
    d9_put_varint(&s->t.b, addr);
    d9_put_varint(&s->t.b, size);
    d9_put_varint(&s->t.b, 0);
}

/* n blocks of `size` from `site`, the first `freed` of them freed */
static void blocks(side_builder *s, int site, int n, uint64_t size, int freed) {
    uint64_t addrs[16];
    for (int i = 0; i < n; i++) alloc(s, site, size, &addrs[i]);
    for (int i = 0; i < freed; i++) release(s, addrs[i], size);
}

static void begin(side_builder *s, uint64_t base) {
    *s = (side_builder){.base = base, .now = T0, .next_addr = 0x7f0000000000ull};
    tb_stream(&s->t);
    d9_enc_schema(&s->t.b, D9_SCH_ALLOC, &d9_builtin_schemas[D9_SCH_ALLOC]);
    d9_enc_schema(&s->t.b, D9_SCH_FREE, &d9_builtin_schemas[D9_SCH_FREE]);
    const char *meta[] = {"memory_profile.sample_rate_bytes", "4096", NULL, NULL};
    tb_metadata(&s->t, T0, meta);
    static const char *const names[] = {"main", "grow", "leak", "churn", "fresh", "old", "shrink"};
    for (int i = 0; i < 7; i++) tb_symbol(&s->t, base + 0x1000u * (unsigned)(i + 1), 0x100, names[i], 0, "m.c", (uint64_t)i + 1);
    /* leaf first: the allocation's caller, then its callers */
    const uint64_t leak[] = {base + 0x3010, base + 0x2010, base + 0x1010};
    const uint64_t churn[] = {base + 0x4010, base + 0x1020};
    const uint64_t churn2[] = {base + 0x4040, base + 0x1020}; /* another call in churn: the same site */
    const uint64_t fresh[] = {base + 0x5010, base + 0x1030};
    const uint64_t old[] = {base + 0x6010, base + 0x1040};
    const uint64_t shrink[] = {base + 0x7010, base + 0x1050};
    s->stacks[S_LEAK] = tb_stack(&s->t, leak, 3);
    s->stacks[S_CHURN] = tb_stack(&s->t, churn, 2);
    s->stacks[S_CHURN2] = tb_stack(&s->t, churn2, 2);
    s->stacks[S_FRESH] = tb_stack(&s->t, fresh, 2);
    s->stacks[S_OLD] = tb_stack(&s->t, old, 2);
    s->stacks[S_SHRINK] = tb_stack(&s->t, shrink, 2);
}

static void build_a(side_builder *s) {
    begin(s, 0x400000);
    blocks(s, S_LEAK, 2, 4096, 0);
    blocks(s, S_CHURN, 3, 1024, 3);
    blocks(s, S_OLD, 1, 2048, 0);
    blocks(s, S_SHRINK, 4, 8192, 0);
}

static void build_b(side_builder *s) {
    begin(s, 0x410000);
    blocks(s, S_LEAK, 5, 4096, 0);
    blocks(s, S_CHURN, 2, 1024, 2);
    blocks(s, S_CHURN2, 1, 1024, 0);
    blocks(s, S_FRESH, 1, 100, 0);
    blocks(s, S_SHRINK, 4, 8192, 3);
}

static char *capture_text(const d9d_diff *d) {
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    d9d_print_text(m, d, 0, NULL);
    fclose(m);
    return text;
}

static char *capture_json(const d9d_diff *d) {
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    d9d_print_json(m, d, NULL);
    fclose(m);
    return text;
}

static size_t gate(const d9d_diff *d, const char *spec, char why[D9D_FAIL_ITEMS][256]) {
    d9d_fail_on f;
    char err[300];
    bool broken[D9D_FAIL_ITEMS];
    CHECK(d9d_fail_on_parse(spec, &f, err, sizeof err) == 0);
    return d9d_fail_on_check(&f, d, broken, why);
}

static void test_sites(void) {
    side_builder a, b;
    build_a(&a);
    build_b(&b);
    d9a_options opt;
    d9a_options_init(&opt);
    d9a_analysis *aa, *ab;
    CHECK(tb_analyze(&aa, &a.t, &opt) != NULL);
    CHECK(tb_analyze(&ab, &b.t, &opt) != NULL);
    CHECK(d9d_heap_present(aa) && d9d_heap_present(ab));
    d9d_heap h;
    CHECK(d9d_heap_build(&h, aa, ab) == 0);
    CHECK_EQ_U64(h.nrows, 5);
    static const struct {
        const char *site;
        double alloc_a, alloc_b, inuse_a, inuse_b;
    } want[] = {
        {"main;grow;leak", 2 * W4096, 5 * W4096, 2 * W4096, 5 * W4096}, /* +19.0 KiB */
        {"main;churn", 3 * W1024, 3 * W1024, 0, W1024},                  /* +4.5 KiB, from nothing */
        {"main;fresh", 0, W100, 0, W100},                                /* +4.0 KiB, only in B */
        {"main;old", W2048, 0, W2048, 0},                                /* -5.1 KiB, only in A */
        {"main;shrink", 4 * W8192, 4 * W8192, 4 * W8192, W8192},         /* -27.8 KiB */
    };
    for (size_t i = 0; i < 5 && i < h.nrows; i++) {
        const d9d_heap_row *r = &h.rows[i];
        bool ok = !strcmp(r->site, want[i].site) && near(r->alloc_bytes[0], want[i].alloc_a) &&
                  near(r->alloc_bytes[1], want[i].alloc_b) && near(r->inuse_bytes[0], want[i].inuse_a) &&
                  near(r->inuse_bytes[1], want[i].inuse_b);
        if (!ok)
            fprintf(stderr, "rank %zu: %s alloc %.4f %.4f inuse %.4f %.4f (want %s %.4f %.4f %.4f %.4f)\n", i + 1, r->site,
                    r->alloc_bytes[0], r->alloc_bytes[1], r->inuse_bytes[0], r->inuse_bytes[1], want[i].site,
                    want[i].alloc_a, want[i].alloc_b, want[i].inuse_a, want[i].inuse_b);
        CHECK(ok);
    }
    CHECK_EQ_U64(h.rows[0].samples[0], 2);
    CHECK_EQ_U64(h.rows[0].samples[1], 5);
    CHECK_EQ_U64(h.rows[1].samples[1], 3); /* churn's two stacks in B are one site */
    CHECK(near(h.side[0].inuse_bytes, 2 * W4096 + W2048 + 4 * W8192));
    CHECK(near(h.side[1].inuse_bytes, 5 * W4096 + W1024 + W100 + W8192));
    CHECK(near(h.side[1].alloc_bytes, 5 * W4096 + 3 * W1024 + W100 + 4 * W8192));
    CHECK_EQ_U64(h.side[0].rate, 4096);
    CHECK_EQ_U64(h.side[1].samples, 13);
    CHECK_EQ_U64(h.side[1].frees, 5);
    CHECK(near(d9d_heap_inuse_change_pct(&h.rows[0]), 150));
    CHECK(isinf(d9d_heap_inuse_change_pct(&h.rows[1])));

    d9d_diff *d = d9d_new(D9D_RUNS, NULL);
    d->side[0].label = "A";
    d->side[1].label = "B";
    d->side[0].readable = d->side[1].readable = true;
    d->heap = &h;
    d9d_finish(d);
    char *text = capture_text(d);
    const char *leak = strstr(text, "leak <- grow <- main"), *churn = strstr(text, "churn <- main"),
               *shrink = strstr(text, "shrink <- main");
    CHECK(strstr(text, "\nHEAP ") != NULL);
    CHECK(leak && churn && shrink && leak < churn && churn < shrink);
    CHECK(strstr(text, "    12.7 KiB     31.6 KiB    +19.0 KiB    +150%     12.7 KiB     31.6 KiB  leak <- grow <- main\n") != NULL);
    CHECK(strstr(text, "         0 B      4.5 KiB     +4.5 KiB      new     13.6 KiB     13.6 KiB  churn <- main\n") != NULL);
    if (!leak || !strstr(text, "+150%")) fprintf(stderr, "%s", text);
    free(text);
    char *json = capture_json(d);
    CHECK(strstr(json, "\"heap\": {") != NULL);
    CHECK(strstr(json, "\"rank\": 1,\n        \"site\": \"main;grow;leak\"") != NULL);
    CHECK(strstr(json, "\"inuse_change_pct\": 150") != NULL);
    CHECK(strstr(json, "\"inuse_change_pct\": null") != NULL); /* churn, fresh: from nothing */
    if (!strstr(json, "\"site\": \"main;grow;leak\"")) fprintf(stderr, "%s", json);
    free(json);

    char why[D9D_FAIL_ITEMS][256];
    CHECK_EQ_U64(gate(d, "heap_inuse=+100%", why), 1); /* leak: +150 % */
    CHECK(strstr(why[0], "leak: in use 12.7 KiB -> 31.6 KiB") != NULL);
    CHECK_EQ_U64(gate(d, "heap_inuse=+200%", why), 1); /* churn: from nothing */
    CHECK(strstr(why[0], "churn:") != NULL);
    CHECK_EQ_U64(gate(d, "heap_inuse=+20KiB", why), 0); /* leak grew 18.98 KiB */
    CHECK_EQ_U64(gate(d, "heap_inuse=+18KiB", why), 1);
    CHECK(strstr(why[0], "leak:") != NULL);
    CHECK_EQ_U64(gate(d, "heap_inuse=+19440B", why), 0); /* 19439.33 bytes */
    CHECK_EQ_U64(gate(d, "heap_inuse=+19439B", why), 1);
    d->heap = NULL; /* no heap on a side: a gate on it breaks, saying why */
    CHECK_EQ_U64(gate(d, "heap_inuse=+1GiB", why), 1);
    CHECK(strstr(why[0], "no heap samples") != NULL);
    text = capture_text(d);
    CHECK(strstr(text, "HEAP") == NULL);
    free(text);

    d9d_free(d);
    d9d_heap_free(&h);
    d9a_free(aa);
    d9a_free(ab);
    free(a.t.b.data);
    free(b.t.b.data);
}

static void test_parse(void) {
    d9d_fail_on f;
    char err[300];
    CHECK(d9d_fail_on_parse("heap_inuse=+50%,heap_inuse=+2MiB,heap_inuse=512B", &f, err, sizeof err) == 0);
    CHECK(f.n == 3 && f.items[0].kind == D9D_FAIL_HEAP_INUSE && f.items[0].relative && f.items[0].percent == 50);
    CHECK(!f.items[1].relative && f.items[1].bytes == 2u << 20 && f.items[2].bytes == 512);
    CHECK(d9d_fail_item_needs_runs(&f.items[0]) && !d9d_fail_item_needs_durations(&f.items[0]));
    CHECK(d9d_fail_on_parse("heap_inuse=+2ms", &f, err, sizeof err) != 0 && strstr(err, "B, KiB, MiB or GiB"));
    CHECK(d9d_fail_on_parse("heap_inuse", &f, err, sizeof err) != 0 && strstr(err, "wants an increase"));
    CHECK(d9d_fail_on_parse("heap_inuse=-5%", &f, err, sizeof err) != 0 && strstr(err, "wants an increase"));
}

int main(void) {
    test_sites();
    test_parse();
    return d9t_summary("test_diff_heap");
}
