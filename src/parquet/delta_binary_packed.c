/* DELTA_BINARY_PACKED encoder (delta_binary_packed.h). Deltas wrap as the format says: the
 * arithmetic is on unsigned 64 bits (32 for INT32 columns, whose readers wrap at 32). */
#include "parquet/delta_binary_packed.h"

#include <string.h>

#define BLOCK 128
#define MINIBLOCKS 4
#define PER_MINI (BLOCK / MINIBLOCKS)

static uint64_t zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }

static unsigned width64(uint64_t v) { return v ? 64u - (unsigned)__builtin_clzll(v) : 0; }

/* d[0..n) deltas (n <= BLOCK, d holding BLOCK), each already relative to nothing: one block.
 * The last miniblock is padded with the smallest delta (packed as 0), so that no loop tests
 * for the end of the values. */
/* Inlined (as encode is) into each width's encoder: the loops test no width per delta
 * (~6 instructions a value of dial9 fold's DELTA columns). */
/* smin: the smallest delta (signed), smax[m] each miniblock's largest, found as the deltas
 * were taken: a miniblock's deltas above smin are smax[m] - smin at most, so the OR of them
 * all (its width) has the width of that one (no pass over the deltas for it: ~6 instructions
 * a value). */
static inline __attribute__((always_inline)) void put_block(pq_buf *out, uint64_t *d, size_t n, int64_t smin,
                                                            const int64_t *smax, unsigned bits, unsigned slack) {
    uint64_t min = (uint64_t)smin;
    pq_buf_uvarint(out, zigzag(smin));
    uint64_t mask = bits == 32 ? 0xffffffffull : ~0ull;
    uint8_t widths[MINIBLOCKS] = {0};
    size_t minis = (n + PER_MINI - 1) / PER_MINI;
    for (size_t i = n; i < minis * PER_MINI; i++) d[i] = min;
    for (size_t m = 0; m < minis; m++) {
        uint64_t top = ((uint64_t)smax[m] - min) & mask;
        unsigned exact = width64(top), whole = (exact + 7) & ~7u;
        widths[m] = (uint8_t)(whole - exact <= slack ? whole : exact);
    }
    /* the block's bytes written in place: at most 8 bytes a delta, and 8 of room for a
     * whole-byte width's 8-byte store */
    if (!pq_buf_reserve(out, MINIBLOCKS + BLOCK * 8 + 8)) return;
    uint8_t *p = out->p + out->len;
    memcpy(p, widths, MINIBLOCKS);
    p += MINIBLOCKS;
    for (size_t m = 0; m < minis; m++) {
        unsigned bw = widths[m];
        size_t i0 = m * PER_MINI, i1 = i0 + PER_MINI;
        if ((bw & 7) == 0) { /* whole bytes: each delta's low bw/8 bytes, little-endian */
            unsigned nb = bw / 8;
            for (size_t i = i0; i < i1; i++) {
                uint64_t x = (d[i] - min) & mask;
                memcpy(p, &x, 8);
                p += nb;
            }
            continue;
        }
        /* exact widths: 64 bits stored at a time (32 deltas of bw bits are 4 * bw whole
         * bytes, so the miniblock ends on a byte) */
        uint64_t acc = 0;
        unsigned have = 0; /* bits in acc, < 64 */
        for (size_t i = i0; i < i1; i++) {
            uint64_t x = (d[i] - min) & mask;
            acc |= x << have;
            if (have + bw < 64) {
                have += bw;
                continue;
            }
            memcpy(p, &acc, 8);
            p += 8;
            unsigned used = 64 - have; /* x's bits that went in */
            acc = used < 64 ? x >> used : 0;
            have = have + bw - 64;
        }
        memcpy(p, &acc, 8); /* the rest, have / 8 bytes of it (the block's 8 bytes of room) */
        p += have / 8;
    }
    out->len = (size_t)(p - out->p);
}

static inline __attribute__((always_inline)) void encode(pq_buf *out, const void *values, size_t n, unsigned bits,
                                                         unsigned slack) {
    pq_buf_uvarint(out, BLOCK);
    pq_buf_uvarint(out, MINIBLOCKS);
    pq_buf_uvarint(out, n);
    if (!n) {
        pq_buf_uvarint(out, 0);
        return;
    }
#define AT(i) (bits == 32 ? (uint64_t)(uint32_t)((const int32_t *)values)[i] : (uint64_t)((const int64_t *)values)[i])
    int64_t first = bits == 32 ? (int64_t)((const int32_t *)values)[0] : ((const int64_t *)values)[0];
    pq_buf_uvarint(out, zigzag(first));
    uint64_t d[BLOCK];
    for (size_t i = 1; i < n; i += BLOCK) { /* a block's deltas and their smallest in one loop */
        size_t k = n - i < BLOCK ? n - i : BLOCK;
        int64_t smin = INT64_MAX, smax[MINIBLOCKS];
        for (size_t m = 0, j = 0; j < k; m++) {
            size_t j1 = k - j < PER_MINI ? k : j + PER_MINI;
            int64_t mx = INT64_MIN;
            for (; j < j1; j++) {
                uint64_t x = AT(i + j) - AT(i + j - 1);
                d[j] = x;
                int64_t sx = bits == 32 ? (int64_t)(int32_t)x : (int64_t)x;
                smin = sx < smin ? sx : smin;
                mx = sx > mx ? sx : mx;
            }
            smax[m] = mx;
        }
        put_block(out, d, k, smin, smax, bits, slack);
    }
#undef AT
}

void pq_delta_encode(pq_buf *out, const int64_t *v, size_t n, unsigned slack) { encode(out, v, n, 64, slack); }
void pq_delta_encode_i32(pq_buf *out, const int32_t *v, size_t n, unsigned slack) { encode(out, v, n, 32, slack); }
