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
 * place after one reserve (groups*bw bytes); a whole-byte width stores each value's low bytes
 * (the sorted dictionaries' 16-bit indexes) instead of shifting them out a byte at a time. */
#define PUT_PACKED(T)                                                                           \
    static void put_packed_##T(pq_buf *out, const T *v, size_t n, size_t groups, unsigned bw) { \
        pq_buf_uvarint(out, (uint64_t)groups << 1 | 1);                                        \
        if (!pq_buf_reserve(out, groups * bw + 8)) return;                                     \
        uint8_t *p = out->p + out->len;                                                         \
        out->len += groups * bw;                                                                \
        if ((bw & 7) == 0) {                                                                    \
            unsigned nb = bw / 8;                                                               \
            for (size_t i = 0; i < groups * 8; i++, p += nb) {                                  \
                uint32_t x = i < n ? (uint32_t)v[i] : 0;                                        \
                memcpy(p, &x, 4); /* the low nb bytes count: the rest is overwritten or spare */ \
            }                                                                                   \
            return;                                                                             \
        }                                                                                       \
        uint64_t acc = 0;                                                                       \
        unsigned bits = 0;                                                                      \
        for (size_t i = 0; i < groups * 8; i++) {                                               \
            uint64_t x = i < n ? (uint64_t)v[i] : 0;                                            \
            acc |= x << bits;                                                                   \
            bits += bw;                                                                         \
            while (bits >= 8) {                                                                 \
                *p++ = (uint8_t)acc;                                                            \
                acc >>= 8;                                                                      \
                bits -= 8;                                                                      \
            }                                                                                   \
        }                                                                                       \
    }

/* Runs of >= 8 equal values as RLE; between them, bit-packed groups of 8 (a group boundary is
 * where a long run may start, so groups stay whole except the very last one). */
#define ENCODE(T)                                                                               \
    static size_t run_##T(const T *v, size_t i, size_t n) {                                    \
        size_t j = i + 1;                                                                       \
        while (j < n && v[j] == v[i]) j++;                                                      \
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
