/* A fixed-width chunk's dictionary in order of value (dict_order.h). Values become unsigned
 * keys whose order is the dictionary's (a signed integer's sign bit flipped), less the
 * smallest key; then either a table over the keys' range (a slot per possible key: marked,
 * numbered in one sweep, read back per value) or an LSD radix sort of the rows by key over
 * the bits in which the keys differ (digits of up to 11 bits, every pass's counts from one
 * pass over the keys), whose sorted walk numbers the distinct keys. */
#include "parquet/dict_order.h"

#include <stdlib.h>
#include <string.h>

enum { MAX_PASSES = 6 }; /* of PQ_DICT_DIGIT_BITS: 6 x 11 >= 64 */
#define MAX_DIGIT_BITS PQ_DICT_DIGIT_BITS

static bool grow(void *pp, size_t *cap, size_t need, size_t size) {
    if (need <= *cap) return true;
    void *p = realloc(*(void **)pp, need * size);
    if (!p) return false;
    *(void **)pp = p;
    *cap = need;
    return true;
}

static inline __attribute__((always_inline)) uint64_t key_of(const uint8_t *values, size_t i, size_t width, bool sign) {
    if (width == 4) {
        uint32_t v;
        memcpy(&v, values + i * 4, 4);
        return sign ? (uint64_t)(v ^ 0x80000000u) : v;
    }
    uint64_t v;
    memcpy(&v, values + i * 8, 8);
    return sign ? v ^ (1ull << 63) : v;
}

static inline __attribute__((always_inline)) void put_entry(uint8_t *entries, size_t i, uint64_t key, size_t width,
                                                            bool sign) {
    if (width == 4) {
        uint32_t v = (uint32_t)key ^ (sign ? 0x80000000u : 0);
        memcpy(entries + i * 4, &v, 4);
    } else {
        uint64_t v = key ^ (sign ? 1ull << 63 : 0);
        memcpy(entries + i * 8, &v, 8);
    }
}

/* Keys in [lo, lo + range], range at most a few per value: a slot per key. */
static inline __attribute__((always_inline)) size_t by_table(pq_dict_order *o, const uint8_t *values, size_t n,
                                                             size_t width, bool sign, uint32_t *index, uint64_t lo,
                                                             uint64_t range) {
    if (!grow(&o->slots, &o->slots_cap, range + 1, sizeof *o->slots)) return 0;
    uint32_t *slot = o->slots;
    memset(slot, 0, (range + 1) * sizeof *slot);
    for (size_t i = 0; i < n; i++) slot[key_of(values, i, width, sign) - lo] = 1;
    uint32_t nd = 0;
    for (uint64_t k = 0; k <= range; k++) {
        uint32_t seen = slot[k];
        slot[k] = nd; /* the entry's index, if the key was seen */
        if (seen) put_entry(o->entries, nd++, lo + k, width, sign);
    }
    for (size_t i = 0; i < n; i++) index[i] = slot[key_of(values, i, width, sign) - lo];
    return nd;
}

/* Keys in [lo, lo + range], range wide: the rows sorted by key, then numbered in order. */
static inline __attribute__((always_inline)) size_t by_sort(pq_dict_order *o, const uint8_t *values, size_t n,
                                                            size_t width, bool sign, uint32_t *index, uint64_t lo,
                                                            uint64_t range) {
    if (!grow(&o->keys, &o->keys_cap, n + n / 2 + 1, sizeof *o->keys)) return 0;
    uint64_t *key = o->keys;
    uint32_t *a = (uint32_t *)(key + n), *b = index; /* rows: n in the keys' scratch, n in index */
    unsigned bits = 64 - (unsigned)__builtin_clzll(range);
    unsigned passes = (bits + MAX_DIGIT_BITS - 1) / MAX_DIGIT_BITS, digit = (bits + passes - 1) / passes;
    uint32_t mask = (1u << digit) - 1;
    if (!o->counts && !(o->counts = malloc(sizeof *o->counts * MAX_PASSES))) return 0;
    uint32_t(*count)[1u << MAX_DIGIT_BITS] = o->counts;
    memset(count, 0, passes * sizeof count[0]);
    for (size_t i = 0; i < n; i++) {
        uint64_t k = key_of(values, i, width, sign) - lo;
        key[i] = k;
        a[i] = (uint32_t)i;
        for (unsigned p = 0; p < passes; p++) count[p][(k >> (p * digit)) & mask]++;
    }
    for (unsigned p = 0; p < passes; p++) {
        uint32_t at = 0;
        for (uint32_t d = 0; d <= mask; d++) {
            uint32_t c = count[p][d];
            count[p][d] = at;
            at += c;
        }
        uint32_t *to = count[p];
        unsigned shift = p * digit;
        for (size_t i = 0; i < n; i++) {
            uint32_t r = a[i];
            b[to[(key[r] >> shift) & mask]++] = r;
        }
        uint32_t *t = a;
        a = b;
        b = t;
    }
    if (a == index) { /* an odd number of passes: the order back in the scratch */
        memcpy(b, a, n * sizeof *a);
        a = b;
    }
    uint32_t nd = 0;
    uint64_t prev = key[a[0]];
    put_entry(o->entries, nd++, lo + prev, width, sign);
    for (size_t i = 0; i < n; i++) {
        uint32_t r = a[i];
        uint64_t k = key[r];
        if (k != prev) {
            put_entry(o->entries, nd++, lo + k, width, sign);
            prev = k;
        }
        index[r] = nd - 1;
    }
    return nd;
}

static inline __attribute__((always_inline)) size_t build(pq_dict_order *o, const uint8_t *values, size_t n,
                                                          size_t width, bool sign, uint32_t *index,
                                                          const int64_t *bounds) {
    uint64_t lo = ~0ull, hi = 0;
    if (sign && bounds) { /* the column's statistics: no pass for them */
        lo = width == 4 ? (uint64_t)((uint32_t)bounds[0] ^ 0x80000000u) : (uint64_t)bounds[0] ^ (1ull << 63);
        hi = width == 4 ? (uint64_t)((uint32_t)bounds[1] ^ 0x80000000u) : (uint64_t)bounds[1] ^ (1ull << 63);
    } else {
        for (size_t i = 0; i < n; i++) {
            uint64_t k = key_of(values, i, width, sign);
            lo = k < lo ? k : lo;
            hi = k > hi ? k : hi;
        }
    }
    uint64_t range = hi - lo;
    /* a slot per key while the table costs about what the values' passes do */
    if (range <= 4 * (uint64_t)n + 256) return by_table(o, values, n, width, sign, index, lo, range);
    return by_sort(o, values, n, width, sign, index, lo, range);
}

size_t pq_dict_build(pq_dict_order *o, const uint8_t *values, size_t n, size_t width, bool sign, uint32_t *index,
                     const int64_t *bounds) {
    if (n == 0 || n > UINT32_MAX) return 0;
    if (!grow(&o->entries, &o->entries_cap, n * width, 1)) return 0;
    if (width == 4)
        return sign ? build(o, values, n, 4, true, index, bounds) : build(o, values, n, 4, false, index, NULL);
    return sign ? build(o, values, n, 8, true, index, bounds) : build(o, values, n, 8, false, index, NULL);
}

void pq_dict_order_free(pq_dict_order *o) {
    free(o->keys);
    free(o->slots);
    free(o->entries);
    free(o->counts);
    *o = (pq_dict_order){0};
}
