/* A DELTA_BINARY_PACKED decoder written from the Parquet spec (none of src/parquet's code), for
 * test_parquet_delta_widths and fuzz_delta_binary_packed: n values into out, wrapping at `bits`
 * (32 or 64), with every miniblock's width checked against the writer's rule (the least width
 * that holds its deltas, rounded up to whole bytes when that adds at most `slack` bits,
 * delta_binary_packed.h). Returns what it read up to, or NULL when the bytes end early, the
 * header's count is not n, or a width breaks the rule. */
#ifndef D9_TESTS_DELTA_BINARY_PACKED_DECODE_H
#define D9_TESTS_DELTA_BINARY_PACKED_DECODE_H

#include <stddef.h>
#include <stdint.h>

static inline int d9t_uvarint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
    *v = 0;
    for (unsigned s = 0; s < 64; s += 7) {
        if (*p >= end) return -1;
        uint8_t b = *(*p)++;
        *v |= (uint64_t)(b & 0x7f) << s;
        if (!(b & 0x80)) return 0;
    }
    return -1;
}

static inline int64_t d9t_unzigzag(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }

static inline unsigned d9t_least_width(uint64_t v) { return v ? 64u - (unsigned)__builtin_clzll(v) : 0; }

static inline const uint8_t *d9t_delta_decode(const uint8_t *p, const uint8_t *end, size_t n, unsigned bits,
                                              unsigned slack, int64_t *out) {
    uint64_t block, minis, count, first;
    if (d9t_uvarint(&p, end, &block) || d9t_uvarint(&p, end, &minis) || d9t_uvarint(&p, end, &count) ||
        d9t_uvarint(&p, end, &first) || count != n || minis == 0 || block % 128 || (block / minis) % 32)
        return NULL;
    uint64_t per = block / minis, mask = bits == 32 ? 0xffffffffull : ~0ull;
    uint64_t v = (uint64_t)d9t_unzigzag(first) & mask;
    if (n) out[0] = bits == 32 ? (int64_t)(int32_t)v : (int64_t)v;
    size_t i = 1;
    while (i < n) {
        uint64_t zmin;
        if (d9t_uvarint(&p, end, &zmin) || (uint64_t)(end - p) < minis) return NULL;
        uint64_t min = (uint64_t)d9t_unzigzag(zmin);
        const uint8_t *widths = p;
        p += minis;
        for (uint64_t m = 0; m < minis && i < n; m++) {
            unsigned w = widths[m];
            if (w > bits || (uint64_t)(end - p) < per * w / 8) return NULL;
            uint64_t maxd = 0;
            for (uint64_t k = 0; k < per; k++) {
                uint64_t d = 0;
                for (unsigned b = 0; b < w; b++) {
                    uint64_t bit = k * w + b;
                    d |= (uint64_t)((p[bit / 8] >> (bit % 8)) & 1) << b;
                }
                if (i < n) {
                    if (d > maxd) maxd = d;
                    v = (v + min + d) & mask;
                    out[i++] = bits == 32 ? (int64_t)(int32_t)v : (int64_t)v;
                }
            }
            unsigned least = d9t_least_width(maxd), whole = (least + 7) & ~7u;
            if (w != (whole - least <= slack ? whole : least)) return NULL;
            p += per * w / 8;
        }
    }
    return p;
}

#endif
