/* RLE / bit-packed hybrid encoder (see rle_hybrid.h). */
#include "parquet/rle_hybrid.h"

#include <stdbool.h>
#include <string.h>

unsigned pq_bit_width(uint32_t max_value) {
    return max_value ? 32u - (unsigned)__builtin_clz(max_value) : 0;
}

static void put_rle_run(pq_buf *out, uint32_t value, size_t count, unsigned bw) {
    pq_buf_uvarint(out, (uint64_t)count << 1);
    for (unsigned i = 0; i < (bw + 7) / 8; i++) pq_buf_byte(out, (uint8_t)(value >> (8 * i)));
}

/* groups*8 values from v (those past n are written as 0), bw bits each, LSB first, written in
 * place after one reserve (groups*bw bytes, 8 spare). A group of 8 is packed whole: a width
 * of at most 8 bits (workers, spawn locations, definition levels) as one 64-bit word of its
 * 8 values shifted into place, bw bytes of it kept; a whole-byte width stores each value's low
 * bytes (the sorted dictionaries' 16-bit indexes). Only the last group, short of 8, is padded
 * (a copy): no test per value for the end (the RLE hybrid was ~43 instructions an event of the
 * fold, half of it here). Other widths (wider than a byte, not whole bytes: no zstd) shift a
 * value at a time. */
static inline uint8_t *pack_group_small(uint8_t *p, const uint64_t g[8], unsigned bw) {
    uint64_t acc = g[0] | g[1] << bw | g[2] << 2 * bw | g[3] << 3 * bw | g[4] << 4 * bw | g[5] << 5 * bw |
                   g[6] << 6 * bw | g[7] << 7 * bw;
    memcpy(p, &acc, 8); /* the low bw bytes count: the rest is overwritten or spare */
    return p + bw;
}
static inline uint8_t *pack_group_bytes(uint8_t *p, const uint64_t g[8], unsigned nb) {
    for (int k = 0; k < 8; k++, p += nb) {
        uint32_t x = (uint32_t)g[k];
        memcpy(p, &x, 4); /* the low nb bytes count: the rest is overwritten or spare */
    }
    return p;
}
static uint8_t *pack_group_bits(uint8_t *p, const uint64_t g[8], unsigned bw) {
    uint64_t acc = 0;
    unsigned bits = 0;
    for (int k = 0; k < 8; k++) {
        acc |= g[k] << bits;
        bits += bw;
        while (bits >= 8) {
            *p++ = (uint8_t)acc;
            acc >>= 8;
            bits -= 8;
        }
    }
    return p;
}
static inline uint8_t *pack_group(uint8_t *p, const uint64_t g[8], unsigned bw) {
    if (bw <= 8) return pack_group_small(p, g, bw);
    if ((bw & 7) == 0) return pack_group_bytes(p, g, bw / 8);
    return pack_group_bits(p, g, bw);
}
#define PUT_PACKED(T)                                                                           \
    static void put_packed_##T(pq_buf *out, const T *v, size_t n, size_t groups, unsigned bw) { \
        pq_buf_uvarint(out, (uint64_t)groups << 1 | 1);                                        \
        if (!pq_buf_reserve(out, groups * bw + 8)) return;                                     \
        uint8_t *p = out->p + out->len;                                                         \
        out->len += groups * bw;                                                                \
        size_t i = 0, full = n & ~(size_t)7;                                                    \
        if (bw <= 8) {                                                                          \
            for (; i < full; i += 8) {                                                          \
                const T *g = v + i;                                                             \
                uint64_t acc = (uint64_t)g[0] | (uint64_t)g[1] << bw | (uint64_t)g[2] << 2 * bw |     \
                               (uint64_t)g[3] << 3 * bw | (uint64_t)g[4] << 4 * bw |                 \
                               (uint64_t)g[5] << 5 * bw | (uint64_t)g[6] << 6 * bw |                 \
                               (uint64_t)g[7] << 7 * bw;                                        \
                memcpy(p, &acc, 8); /* the low bw bytes count: the rest is overwritten or spare */ \
                p += bw;                                                                        \
            }                                                                                   \
        } else if ((bw & 7) == 0) {                                                             \
            unsigned nb = bw / 8;                                                               \
            for (; i < full; i++, p += nb) {                                                    \
                uint32_t x = (uint32_t)v[i];                                                    \
                memcpy(p, &x, 4); /* the low nb bytes count: the rest is overwritten or spare */ \
            }                                                                                   \
        } else {                                                                                \
            uint64_t g[8];                                                                      \
            for (; i < full; i += 8) {                                                          \
                for (int k = 0; k < 8; k++) g[k] = v[i + k];                                    \
                p = pack_group_bits(p, g, bw);                                                  \
            }                                                                                   \
        }                                                                                       \
        if (i < n) { /* the last group, short of 8: padded with zeros */                        \
            uint64_t g[8];                                                                      \
            for (int k = 0; k < 8; k++) g[k] = i + (size_t)k < n ? v[i + (size_t)k] : 0;        \
            pack_group(p, g, bw);                                                               \
        }                                                                                       \
    }

/* Runs of >= 8 equal values as RLE; between them, bit-packed groups of 8 (a group boundary is
 * where a long run may start, so groups stay whole except the very last one). */
#define ENCODE(T)                                                                               \
    /* a run's length, compared 32 bytes a step while it lasts (a page's identity columns are \
     * one run of 64 Ki values: a compare a value was ~4 instructions a value) */              \
    static size_t run_##T(const T *v, size_t i, size_t n) {                                    \
        const T x = v[i];                                                                       \
        const uint64_t splat = (uint64_t)x * (UINT64_MAX / (T) ~(T)0);                          \
        const size_t step = 32 / sizeof(T);                                                     \
        size_t j = i + 1;                                                                       \
        for (; j + step <= n; j += step) {                                                      \
            uint64_t w[4];                                                                      \
            memcpy(w, v + j, 32);                                                               \
            if (((w[0] ^ splat) | (w[1] ^ splat) | (w[2] ^ splat) | (w[3] ^ splat)) != 0) break; \
        }                                                                                       \
        while (j < n && v[j] == x) j++;                                                         \
        return j - i;                                                                           \
    }                                                                                           \
    /* run_T(v, i, n) >= 8, its 8th value compared first: a group of varied values (indexes   \
     * of durations, of workers taking turns) is told by one compare, not a scan */            \
    static inline bool run8_##T(const T *v, size_t i, size_t n) {                              \
        if (i + 8 > n || v[i + 7] != v[i]) return false;                                        \
        for (size_t k = 1; k < 7; k++)                                                          \
            if (v[i + k] != v[i]) return false;                                                 \
        return true;                                                                            \
    }                                                                                           \
    static void encode_##T(pq_buf *out, const T *v, size_t n, unsigned bw) {                   \
        size_t i = 0;                                                                           \
        while (i < n) {                                                                         \
            if (run8_##T(v, i, n)) {                                                            \
                size_t run = run_##T(v, i, n);                                                  \
                put_rle_run(out, (uint32_t)v[i], run, bw);                                      \
                i += run;                                                                       \
                continue;                                                                       \
            }                                                                                   \
            size_t start = i, groups = 0;                                                       \
            while (i < n) {                                                                     \
                if (i > start && run8_##T(v, i, n)) break;                                      \
                i += 8;                                                                         \
                groups++;                                                                       \
            }                                                                                   \
            if (i > n) i = n;                                                                   \
            put_packed_##T(out, v + start, i - start, groups, bw);                              \
        }                                                                                       \
    }

PUT_PACKED(uint32_t)
PUT_PACKED(uint8_t)
ENCODE(uint32_t)
ENCODE(uint8_t)

void pq_rle_encode(pq_buf *out, const uint32_t *v, size_t n, unsigned bw) { encode_uint32_t(out, v, n, bw); }

void pq_rle_encode_u8(pq_buf *out, const uint8_t *v, size_t n, unsigned bw) { encode_uint8_t(out, v, n, bw); }
