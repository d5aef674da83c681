/* A fixed-width chunk's dictionary in order of value (dict_order.h). Values become unsigned
 * keys whose order is the dictionary's (a signed integer's sign bit flipped), less the
 * smallest key; then a table over the keys' range (a slot per possible key: marked, numbered
 * in one sweep, read back per value), or a hash table numbering the values as first seen
 * while few are distinct (then those alone sorted, as below, and the numbers made ranks), or
 * an LSD radix sort by key over the bits in which the keys differ (digits of 8 to 16 bits, every pass's counts from one pass over the
 * keys), whose sorted walk numbers the distinct keys. The sort moves words of key and row
 * together where both fit in 64 bits (a duration's ~30 bits and a row group's 20), else the
 * rows alone, each pass reading its row's key (~13 instructions a value a pass, against ~6). */
#include "parquet/dict_order.h"

#include <stdlib.h>
#include <string.h>

/* A pass's digit: 8 to 16 bits, whichever makes the passes over the values (~12 instructions a
 * value each) and over the counts (~4 a count: cleared, summed) cheapest: a pass fewer pays
 * for wider counts from a few thousand values on (61 k values of 27 bits: two passes of 14
 * bits instead of three of 9). */
enum { MIN_DIGIT = 8, MAX_DIGIT = 16, COUNTS = 8 << MAX_DIGIT }; /* COUNTS: every pass's, at most */

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

/* The radix sort's digits: passes of `digit` bits each over `bits` bits. */
typedef struct radix {
    unsigned passes, digit;
    uint64_t mask;
} radix;

static radix radix_of(unsigned bits, size_t n) {
    unsigned best = MIN_DIGIT;
    uint64_t best_cost = UINT64_MAX;
    for (unsigned d = MIN_DIGIT; d <= MAX_DIGIT; d++) {
        uint64_t passes = (bits + d - 1) / d, cost = passes * (12 * (uint64_t)n + (4ull << d));
        if (cost < best_cost) best = d, best_cost = cost;
    }
    unsigned passes = (bits + best - 1) / best;
    unsigned digit = (bits + passes - 1) / passes; /* the passes' bits evened out */
    return (radix){passes, digit, (1ull << digit) - 1};
}

/* Pass p's counts: count + (p << digit). */
static uint32_t *counts_of(pq_dict_order *o, radix x) {
    if (!o->counts && !(o->counts = malloc(COUNTS * sizeof *o->counts))) return NULL;
    memset(o->counts, 0, ((size_t)x.passes << x.digit) * sizeof *o->counts);
    return o->counts;
}

/* Each pass's counts made its digits' first places. */
static void count_to_places(uint32_t *count, radix x) {
    for (unsigned p = 0; p < x.passes; p++) {
        uint32_t at = 0, *c = count + ((size_t)p << x.digit);
        for (uint64_t d = 0; d <= x.mask; d++) {
            uint32_t k = c[d];
            c[d] = at;
            at += k;
        }
    }
}

/* Keys in [lo, lo + range], range wide, each key and its row in one word (the key above the
 * row's bits): the words sorted by an LSD radix sort of the key's bits, then numbered in
 * order. The counting pass takes every pass's digit (unrolled for up to three passes: a
 * duration's 20-33 bits). */
static inline __attribute__((always_inline)) size_t by_sort_packed(pq_dict_order *o, const uint8_t *values,
                                                                   size_t n, size_t width, bool sign, uint32_t *index,
                                                                   uint64_t lo, unsigned bits, unsigned rowbits) {
    if (!grow(&o->keys, &o->keys_cap, 2 * n, sizeof *o->keys)) return 0;
    uint64_t *a = o->keys, *b = o->keys + n;
    radix x = radix_of(bits, n);
    uint32_t *count = counts_of(o, x);
    if (!count) return 0;
    unsigned d = x.digit, s0 = rowbits, s1 = rowbits + d, s2 = rowbits + 2 * d;
    uint32_t *c0 = count, *c1 = count + ((size_t)1 << d), *c2 = count + ((size_t)2 << d);
    uint64_t m = x.mask;
    for (size_t i = 0; i < n; i++) {
        uint64_t w = (key_of(values, i, width, sign) - lo) << rowbits | i;
        a[i] = w;
        c0[(w >> s0) & m]++;
        if (x.passes > 1) c1[(w >> s1) & m]++;
        if (x.passes > 2) c2[(w >> s2) & m]++;
        for (unsigned p = 3; p < x.passes; p++) count[((size_t)p << d) + ((w >> (rowbits + p * d)) & m)]++;
    }
    count_to_places(count, x);
    for (unsigned p = 0; p < x.passes; p++) {
        uint32_t *to = count + ((size_t)p << d);
        unsigned shift = rowbits + p * d;
        for (size_t i = 0; i < n; i++) {
            uint64_t w = a[i];
            b[to[(w >> shift) & m]++] = w;
        }
        uint64_t *t = a;
        a = b;
        b = t;
    }
    uint64_t rowmask = (1ull << rowbits) - 1;
    uint32_t nd = 0;
    uint64_t prev = a[0] >> rowbits;
    put_entry(o->entries, nd++, lo + prev, width, sign);
    for (size_t i = 0; i < n; i++) {
        uint64_t k = a[i] >> rowbits;
        if (k != prev) {
            put_entry(o->entries, nd++, lo + k, width, sign);
            prev = k;
        }
        index[a[i] & rowmask] = nd - 1;
    }
    return nd;
}

/* Keys in [lo, lo + range], too wide to share a word with a row (hashes, such as stack ids):
 * the rows sorted by key, then numbered in order. */
static inline __attribute__((always_inline)) size_t by_sort_rows(pq_dict_order *o, const uint8_t *values, size_t n,
                                                                 size_t width, bool sign, uint32_t *index, uint64_t lo,
                                                                 unsigned bits) {
    if (!grow(&o->keys, &o->keys_cap, n + n / 2 + 1, sizeof *o->keys)) return 0;
    uint64_t *key = o->keys;
    uint32_t *a = (uint32_t *)(key + n), *b = index; /* rows: n in the keys' scratch, n in index */
    radix x = radix_of(bits, n);
    uint32_t *count = counts_of(o, x);
    if (!count) return 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t k = key_of(values, i, width, sign) - lo;
        key[i] = k;
        a[i] = (uint32_t)i;
        for (unsigned p = 0; p < x.passes; p++) count[((size_t)p << x.digit) + ((k >> (p * x.digit)) & x.mask)]++;
    }
    count_to_places(count, x);
    for (unsigned p = 0; p < x.passes; p++) {
        uint32_t *to = count + ((size_t)p << x.digit);
        unsigned shift = p * x.digit;
        for (size_t i = 0; i < n; i++) {
            uint32_t r = a[i];
            b[to[(key[r] >> shift) & x.mask]++] = r;
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

/* Sorted by key, the way their spread allows: n values in [lo, lo + range], range wide. */
static inline __attribute__((always_inline)) size_t by_sort(pq_dict_order *o, const uint8_t *values, size_t n,
                                                            size_t width, bool sign, uint32_t *index, uint64_t lo,
                                                            uint64_t range) {
    unsigned bits = 64 - (unsigned)__builtin_clzll(range), rowbits = n > 1 ? 64 - (unsigned)__builtin_clzll(n - 1) : 1;
    if (bits + rowbits <= 64) return by_sort_packed(o, values, n, width, sign, index, lo, bits, rowbits);
    return by_sort_rows(o, values, n, width, sign, index, lo, bits);
}

enum { NOT_FEW = 4 }; /* "few" distinct values: at most 1 in NOT_FEW */
#define BAILED ((size_t)-1)

/* A value's slot in the hash table of `mask + 1` slots: Fibonacci hashing, linear probing. */
static inline size_t probe(const uint32_t *slot, const uint64_t *skey, size_t mask, unsigned shift, uint64_t k) {
    size_t h = (size_t)((k * 0x9e3779b97f4a7c15ull) >> shift);
    while (slot[h] && skey[h] != k) h = (h + 1) & mask;
    return h;
}

/* Keys in a wide range but few distinct ones (a busy hour's durations: 2-7 % of the polls):
 * each value numbered as first seen through a hash table, then the distinct values alone
 * sorted and the numbers made their ranks, ~15 instructions a value where sorting every value
 * takes two or three radix passes (~45). BAILED once more than 1 in NOT_FEW values are
 * distinct (the sort of all of them is then as cheap), with nothing written; 0 out of memory. */
static inline __attribute__((always_inline)) size_t by_hash(pq_dict_order *o, const uint8_t *values, size_t n,
                                                            size_t width, bool sign, uint32_t *index, uint64_t lo,
                                                            uint64_t range) {
    size_t limit = n / NOT_FEW, cap = 1024;
    if (!grow(&o->uniq, &o->uniq_cap, (limit + 1) * width, 1) || !grow(&o->rank, &o->rank_cap, limit + 1, sizeof *o->rank))
        return 0;
    uint32_t *slot;
    uint64_t *skey;
    unsigned shift;
    uint32_t nd = 0;
    for (;;) { /* (re)built at twice the distinct values' count, from those seen so far */
        if (!grow(&o->slots, &o->slots_cap, cap, sizeof *o->slots) || !grow(&o->skeys, &o->skeys_cap, cap, sizeof *o->skeys))
            return 0;
        slot = o->slots;
        skey = o->skeys;
        shift = 64 - (unsigned)__builtin_ctzll(cap);
        memset(slot, 0, cap * sizeof *slot);
        for (uint32_t e = 0; e < nd; e++) {
            uint64_t k = key_of(o->uniq, e, width, sign);
            size_t h = probe(slot, skey, cap - 1, shift, k);
            slot[h] = e + 1;
            skey[h] = k;
        }
        size_t i = nd ? o->resume : 0;
        for (; i < n; i++) {
            uint64_t k = key_of(values, i, width, sign);
            size_t h = probe(slot, skey, cap - 1, shift, k);
            if (slot[h]) {
                index[i] = slot[h] - 1;
                continue;
            }
            if (nd == limit) return BAILED;
            if (2 * ((size_t)nd + 1) > cap) break; /* grow first */
            memcpy(o->uniq + (size_t)nd * width, values + i * width, width);
            slot[h] = ++nd;
            skey[h] = k;
            index[i] = nd - 1;
        }
        if (i == n) break;
        o->resume = i;
        cap *= 2;
    }
    if (by_sort(o, o->uniq, nd, width, sign, o->rank, lo, range) != nd) return 0; /* nd >= 2: the range is wide */
    for (size_t i = 0; i < n; i++) index[i] = o->rank[index[i]];
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
    size_t nd = by_hash(o, values, n, width, sign, index, lo, range);
    return nd != BAILED ? nd : by_sort(o, values, n, width, sign, index, lo, range);
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
    free(o->skeys);
    free(o->uniq);
    free(o->rank);
    *o = (pq_dict_order){0};
}
