/* pq_zstd (parquet/pq_zstd.h): every mode's frame decompresses, by libzstd itself, to the
 * page's bytes, on pages where PQ_ZSTD_ENTROPY's own sequences (runs of zero bytes as matches)
 * are easy to get wrong: runs at the very start and end, runs of 15 to 24 bytes around the
 * length where the word scan starts to see them, runs across zstd's 128 KiB blocks, a page of
 * zeros only, noise without a run; and ENTROPY codes a run as a match (a page of zeros in a
 * few bytes, noise no larger than level 1 codes it) without zstd's match search. */
#include "check.h"
#include "test_rng.h"
#include "parquet/pq_zstd.h"

static d9t_rng rng = {D9T_RNG_SEED};
static uint8_t noise(void) { /* never 0, so a run is only where a page puts one */
    return (uint8_t)(d9t_rng_next(&rng) % 255 + 1);
}

/* the page back through libzstd's decompression; 1 when it is the same bytes */
static int round_trips(const d9_libzstd *l, const uint8_t *page, size_t n, const pq_buf *frame) {
    uint8_t *back = malloc(n + 1);
    ZSTD_DStream *d = l->createDStream();
    ZSTD_inBuffer in = {frame->p, frame->len, 0};
    ZSTD_outBuffer out = {back, n + 1, 0};
    size_t r = l->decompressStream(d, &out, &in);
    int same = !l->isError(r) && r == 0 && out.pos == n && memcmp(back, page, n) == 0;
    l->freeDStream(d);
    free(back);
    return same;
}

/* a page of n bytes: noise with zero runs of the given lengths at the given offsets */
static uint8_t *page_with_runs(size_t n, const size_t *at, const size_t *len, size_t runs) {
    uint8_t *p = malloc(n);
    for (size_t i = 0; i < n; i++) p[i] = noise();
    for (size_t k = 0; k < runs; k++)
        for (size_t i = at[k]; i < at[k] + len[k] && i < n; i++) p[i] = 0;
    return p;
}

static void check_page(pq_zstd *z, const char *what, const uint8_t *p, size_t n, size_t *entropy_bytes) {
    for (int mode = 0; mode < PQ_ZSTD_MODES; mode++) {
        pq_buf frame = {0};
        const char *why = NULL;
        int rc = pq_zstd_compress(z, (pq_zstd_mode)mode, p, n, &frame, &why);
        CHECK(rc == 0);
        int same = rc == 0 && round_trips(z->lib, p, n, &frame);
        if (!same) fprintf(stderr, "  %s, mode %d: not the same bytes back (%s)\n", what, mode, why ? why : "");
        CHECK(same);
        if (mode == PQ_ZSTD_ENTROPY && entropy_bytes) *entropy_bytes = frame.len;
        pq_buf_free(&frame);
    }
}

static void test_round_trips(pq_zstd *z) {
    const size_t block = 128 << 10;
    /* runs at the start and the end, and every length from 1 to 40 at every alignment */
    size_t at[400], len[400], runs = 0;
    at[runs] = 0, len[runs++] = 100;
    for (size_t l = 1; l <= 40; l++)
        for (size_t a = 0; a < 8; a++, runs++) at[runs] = 200 + runs * 61 + a, len[runs] = l;
    at[runs] = 30000 - 50, len[runs++] = 50;
    uint8_t *p = page_with_runs(30000, at, len, runs);
    check_page(z, "runs of 1..40 bytes, at the start and the end", p, 30000, NULL);
    free(p);

    /* runs across the block boundaries, one of them over a whole block */
    size_t at2[] = {block - 30, 2 * block - 1, 3 * block - 5000}, len2[] = {60, 3, block + 10000};
    p = page_with_runs(5 * block, at2, len2, 3);
    check_page(z, "runs across zstd's blocks", p, 5 * block, NULL);
    free(p);

    /* a page of zeros (a column of zeros: 64 Ki rows of 8 bytes) */
    size_t zn = (size_t)8 << 16, zbytes = SIZE_MAX;
    p = calloc(zn, 1);
    check_page(z, "zeros", p, zn, &zbytes);
    CHECK(zbytes < 200);
    free(p);

    /* noise and zeros, half and half in runs of 16 KiB: the runs cost next to nothing (as
     * literals only, each zero would cost a bit or more: ~16 KiB more) */
    size_t at3[8], len3[8], hbytes = SIZE_MAX;
    for (size_t k = 0; k < 8; k++) at3[k] = k * (32 << 10), len3[k] = 16 << 10;
    p = page_with_runs(256 << 10, at3, len3, 8);
    check_page(z, "half zeros", p, 256 << 10, &hbytes);
    CHECK(hbytes < (128u << 10) + 4096);
    free(p);

    /* noise without a run: literals only */
    p = page_with_runs(200000, NULL, NULL, 0);
    check_page(z, "noise", p, 200000, NULL);
    free(p);
    check_page(z, "an empty page", (const uint8_t *)"", 0, NULL);
}

int main(void) {
    pq_zstd z;
    if (pq_zstd_init(&z, 3) != 0) {
        printf("SKIP: libzstd.so.1 cannot be loaded (%s)\n", d9_libzstd_error());
        return 0;
    }
    if (!z.lib->compressSequences) printf("note: no ZSTD_compressSequences: ENTROPY is FAST here\n");
    test_round_trips(&z);
    pq_zstd_free(&z);
    /* from level 10 on, every mode is the writer's level */
    CHECK(pq_zstd_init(&z, 12) == 0);
    test_round_trips(&z);
    pq_zstd_free(&z);
    return d9t_summary("parquet_zstd_modes");
}
