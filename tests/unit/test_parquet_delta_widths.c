/* DELTA_BINARY_PACKED (src/parquet/delta_binary_packed.c) read back by a decoder of the
 * format's own (tests/delta_binary_packed_decode.h): random walks, sorted times and wide
 * jumps, INT64 and INT32, decode to the values given; each miniblock's width is the least that holds its deltas, rounded up to a
 * multiple of 8 exactly when that adds at most the slack asked for (PQ_DELTA_EXACT: never,
 * PQ_DELTA_NEAR_BYTES: 3 bits, PQ_DELTA_WHOLE_BYTES: always, the deltas on byte boundaries for
 * zstd). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "test_rng.h"
#include "delta_binary_packed_decode.h"
#include "parquet/delta_binary_packed.h"

static d9t_rng rng = {D9T_RNG_SEED};

static void one(size_t n, int kind, unsigned slack) {
    int64_t *v = malloc((n ? n : 1) * sizeof *v), *back = calloc(n ? n : 1, sizeof *back);
    int32_t *v32 = malloc((n ? n : 1) * sizeof *v32);
    int64_t t = (int64_t)(d9t_rng_next(&rng) >> 2);
    unsigned wbits = 1;
    for (size_t i = 0; i < n; i++) {
        if (kind == 0) t += (int64_t)(d9t_rng_next(&rng) % 100000);               /* sorted times */
        else if (kind == 1) t += (int64_t)(d9t_rng_next(&rng) % 2001) - 1000;       /* a random walk */
        else if (kind == 2) t = (int64_t)d9t_rng_next(&rng);                        /* anything */
        else { /* deltas of a width drawn per 32 values: every miniblock width, 1-3 bits
                  short of whole bytes too */
            if (i % 32 == 0) wbits = 1 + (unsigned)(d9t_rng_next(&rng) % 40);
            t += (int64_t)(d9t_rng_next(&rng) & ((1ull << wbits) - 1));
        }
        v[i] = t;
        v32[i] = (int32_t)t;
    }
    pq_buf b = {0};
    pq_delta_encode(&b, v, n, slack);
    CHECK(!b.oom);
    CHECK(d9t_delta_decode(b.p, b.p + b.len, n, 64, slack, back) == b.p + b.len);
    CHECK(n == 0 || memcmp(v, back, n * sizeof *v) == 0);
    b.len = 0;
    pq_delta_encode_i32(&b, v32, n, slack);
    CHECK(d9t_delta_decode(b.p, b.p + b.len, n, 32, slack, back) == b.p + b.len);
    bool same = true;
    for (size_t i = 0; i < n; i++) same = same && back[i] == v32[i];
    CHECK(same);
    pq_buf_free(&b);
    free(v);
    free(v32);
    free(back);
}

int main(void) {
    static const size_t sizes[] = {0, 1, 2, 31, 32, 33, 128, 129, 1000, 65536};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (int kind = 0; kind < 4; kind++) {
            one(sizes[s], kind, PQ_DELTA_EXACT);
            one(sizes[s], kind, PQ_DELTA_NEAR_BYTES);
            one(sizes[s], kind, PQ_DELTA_WHOLE_BYTES);
        }
    return d9t_summary("test_parquet_delta_widths");
}
