/* The DELTA_BINARY_PACKED encoder (src/parquet/delta_binary_packed.c) on arbitrary values:
 * what it writes decodes, by a decoder written from the spec (tests/delta_binary_packed_decode.h),
 * to exactly the values given, with every miniblock's width what the slack asked for says, and
 * no byte written past what it reports (ASan). The first byte picks the slack (exact, near
 * whole bytes, whole bytes), INT32 or INT64, and whether the rest are the values or their
 * deltas (times: small steps, the widths the fold's columns see). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../delta_binary_packed_decode.h"
#include "parquet/delta_binary_packed.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    static const unsigned slacks[] = {PQ_DELTA_EXACT, PQ_DELTA_NEAR_BYTES, PQ_DELTA_WHOLE_BYTES};
    unsigned slack = slacks[data[0] % 3], bits = data[0] & 4 ? 32 : 64;
    bool sums = data[0] & 8;
    size_t wdt = bits / 8, n = (size - 1) / wdt;
    int64_t *v = malloc((n ? n : 1) * sizeof *v), *back = malloc((n ? n : 1) * sizeof *back);
    int32_t *v32 = malloc((n ? n : 1) * sizeof *v32);
    if (!v || !back || !v32) abort();
    uint64_t acc = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t x = 0;
        memcpy(&x, data + 1 + i * wdt, wdt);
        acc = sums ? acc + (x >> (x & 63)) : x; /* deltas of every width */
        v[i] = bits == 32 ? (int64_t)(int32_t)(uint32_t)acc : (int64_t)acc;
        v32[i] = (int32_t)(uint32_t)acc;
    }
    pq_buf b = {0};
    if (bits == 32) pq_delta_encode_i32(&b, v32, n, slack);
    else pq_delta_encode(&b, v, n, slack);
    if (b.oom) abort();
    if (d9t_delta_decode(b.p, b.p + b.len, n, bits, slack, back) != b.p + b.len) abort();
    if (n && memcmp(v, back, n * sizeof *v) != 0) abort();
    pq_buf_free(&b);
    free(v);
    free(back);
    free(v32);
    return 0;
}
