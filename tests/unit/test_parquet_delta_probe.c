/* A DELTA column that says ENTROPY or NONE (pq_zstd.h) is probed per column chunk
 * (pq_writer.c, delta_mode): times in a pattern, whose deltas zstd's match search shrinks,
 * are written at the level (the same file as a LEVEL column's), noisy times as the column
 * says (entropy coded; UNCOMPRESSED, larger). Without the probe the patterned ENTROPY file is
 * ~8 times the LEVEL one. The probe samples the whole chunk, not its first values: a chunk
 * compacted from many segments holds several kinds of times, so a chunk whose first 4 096
 * times are noise and the rest a pattern goes at the level, and one whose first 2 048 are a
 * pattern and the rest noise stays entropy coded (the probe of the first 2 048 values alone
 * decided both by their head: the first file 8.2 times the level's, the second 4.8 % larger
 * than entropy coding's). The values are read back by DuckDB and hyparquet in tests/parquet
 * (pq_random_table puts DELTA columns of every mode). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "test_rng.h"
#include "parquet/pq_writer.h"

#define ROWS 24000
#define MIXED_ROWS 64000

static d9t_rng rng = {0x5eed};

/* times stepping by an arithmetic progression modulo 3000 (as test_fold_instructions'
 * generated segment's), or by noise spread over 4 to 20 bits (as recorded polls'): rows
 * [0, head) one way (`pattern`), the rest of the n the other */
static void times_mixed(int64_t *v, int n, int head, bool pattern) {
    int64_t t = 1000000000000ll;
    for (int r = 0; r < n; r++) {
        bool p = r < head ? pattern : !pattern;
        t += p ? 1500 + (int64_t)r * 7919 % 3000 : (int64_t)(d9t_rng_next(&rng) % (1ull << (4 + d9t_rng_next(&rng) % 17)));
        v[r] = t;
    }
}
static void times(int64_t *v, bool pattern) { times_mixed(v, ROWS, ROWS, pattern); }

/* The file's size with the column in zstd `mode`, its ROWS first values; 0 when the writer has
 * no zstd. */
#define file_size(v, mode) file_size_n(v, ROWS, mode)
static long file_size_n(const int64_t *v, uint32_t rows, pq_zstd_mode mode) {
    pq_column_def col = {"wall_time", PQ_TIMESTAMP_NS, false, false, true, (uint8_t)mode};
    FILE *f = tmpfile();
    CHECK(f != NULL);
    if (!f) return -1;
    char err[256];
    pq_writer *w = pq_writer_open(f, &col, 1, NULL, err, sizeof err);
    CHECK(w != NULL);
    if (!w) return -1;
    bool zstd = strcmp(pq_writer_codec(w), "zstd") == 0;
    for (uint32_t r0 = 0; r0 < rows; r0 += 4096) {
        uint32_t n = rows - r0 < 4096 ? rows - r0 : 4096;
        CHECK(pq_begin_rows(w, n) == 0);
        CHECK(pq_put_i64s(w, 0, v + r0, NULL) == 0);
        CHECK(pq_end_rows(w) == 0);
    }
    CHECK(pq_writer_close(w, err, sizeof err) == 0);
    long size = ftell(f);
    fclose(f);
    return zstd ? size : 0;
}

int main(void) {
    static int64_t v[ROWS];
    times(v, true);
    long level = file_size(v, PQ_ZSTD_LEVEL), entropy = file_size(v, PQ_ZSTD_ENTROPY), none = file_size(v, PQ_ZSTD_NONE);
    if (level == 0) {
        printf("SKIP: no libzstd.so.1 (the writer's pages are uncompressed)\n");
        return 0;
    }
    printf("patterned times: %ld bytes at the level, %ld as ENTROPY, %ld as NONE\n", level, entropy, none);
    CHECK(level > 0 && entropy == level && none == level);
    times(v, false);
    level = file_size(v, PQ_ZSTD_LEVEL), entropy = file_size(v, PQ_ZSTD_ENTROPY), none = file_size(v, PQ_ZSTD_NONE);
    printf("noisy times: %ld bytes at the level, %ld as ENTROPY, %ld as NONE\n", level, entropy, none);
    CHECK(entropy != level && none > entropy);

    /* one chunk of two kinds, as compaction makes them: the probe samples all of it */
    static int64_t m[MIXED_ROWS];
    times_mixed(m, MIXED_ROWS, 4096, false);
    level = file_size_n(m, MIXED_ROWS, PQ_ZSTD_LEVEL), entropy = file_size_n(m, MIXED_ROWS, PQ_ZSTD_ENTROPY);
    printf("4 096 noisy times, then patterned ones: %ld bytes at the level, %ld as ENTROPY\n", level, entropy);
    CHECK(entropy == level);
    times_mixed(m, MIXED_ROWS, 2048, true);
    level = file_size_n(m, MIXED_ROWS, PQ_ZSTD_LEVEL), entropy = file_size_n(m, MIXED_ROWS, PQ_ZSTD_ENTROPY);
    printf("2 048 patterned times, then noisy ones: %ld bytes at the level, %ld as ENTROPY\n", level, entropy);
    CHECK(entropy < level);
    return d9t_summary("test_parquet_delta_probe");
}
