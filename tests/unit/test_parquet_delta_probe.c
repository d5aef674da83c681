/* A DELTA column that says ENTROPY or NONE (pq_zstd.h) is probed per column chunk
 * (pq_writer.c, delta_mode): times in a pattern, whose deltas zstd's match search shrinks,
 * are written at the level (the same file as a LEVEL column's), noisy times as the column
 * says (entropy coded; UNCOMPRESSED, larger). Without the probe the patterned ENTROPY file is
 * ~8 times the LEVEL one. The values are read back by DuckDB and hyparquet in tests/parquet
 * (pq_random_table puts DELTA columns of every mode). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "test_rng.h"
#include "parquet/pq_writer.h"

#define ROWS 24000

static d9t_rng rng = {0x5eed};

/* times stepping by an arithmetic progression modulo 3000 (as test_fold_instructions'
 * generated segment's), or by noise spread over 4 to 20 bits (as recorded polls') */
static void times(int64_t *v, bool pattern) {
    int64_t t = 1000000000000ll;
    for (int r = 0; r < ROWS; r++) {
        t += pattern ? 1500 + (int64_t)r * 7919 % 3000 : (int64_t)(d9t_rng_next(&rng) % (1ull << (4 + d9t_rng_next(&rng) % 17)));
        v[r] = t;
    }
}

/* The file's size with the column in zstd `mode`; 0 when the writer has no zstd. */
static long file_size(const int64_t *v, pq_zstd_mode mode) {
    pq_column_def col = {"wall_time", PQ_TIMESTAMP_NS, false, false, true, (uint8_t)mode};
    FILE *f = tmpfile();
    CHECK(f != NULL);
    if (!f) return -1;
    char err[256];
    pq_writer *w = pq_writer_open(f, &col, 1, NULL, err, sizeof err);
    CHECK(w != NULL);
    if (!w) return -1;
    bool zstd = strcmp(pq_writer_codec(w), "zstd") == 0;
    for (uint32_t r0 = 0; r0 < ROWS; r0 += 4096) {
        uint32_t n = ROWS - r0 < 4096 ? ROWS - r0 : 4096;
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
    return d9t_summary("test_parquet_delta_probe");
}
