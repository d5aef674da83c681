/* A fixed-width column chunk's dictionary, built at the row group's end from its PLAIN values
 * in order of value. Parquet leaves a dictionary's order to the writer; sorted, an entry's
 * index grows with its value, so the indexes of durations are a dense renumbering of them
 * (small, frequent durations get nearby small indexes), which zstd codes in fewer bytes than
 * the 8-byte PLAIN values or the first-seen order's indexes (docs/fleet-tables.md, "Measured"),
 * and the dictionary page itself is a sorted run of close values.
 *
 * Built once per chunk, not looked up per value: a value costs a copy when it is put (as a
 * PLAIN one does) and a few passes over an array here, where a hash table probed per put cost
 * ~30-80 instructions a value (docs/fleet-tables.md). A chunk whose values span a range of at
 * most about 4 per value (workers, threads, small delays, a busy hour's short durations) is
 * numbered through a table indexed by value; a wider one of few distinct values (at most 1 in
 * 4: a busy hour's durations) through a hash table, then its distinct values sorted; any
 * other by an LSD radix sort of its values with their rows, over the bits in which they
 * differ. */
#ifndef D9_PARQUET_DICT_ORDER_H
#define D9_PARQUET_DICT_ORDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct pq_dict_order {
    uint64_t *keys;   /* scratch, reused from chunk to chunk: a value's key, or (sorting) key and row */
    size_t keys_cap;  /* uint64_t's */
    uint32_t *slots;  /* the table by value: rank of each value of the range; or the hash
                         table's: entry + 1 (0 empty) */
    size_t slots_cap;
    uint64_t *skeys;  /* the hash table's: each slot's key */
    size_t skeys_cap;
    uint8_t *uniq;    /* the distinct values as first seen (`width` bytes each) */
    size_t uniq_cap;
    uint32_t *rank;   /* each distinct value's rank */
    size_t rank_cap;
    size_t resume;    /* the value the hash table grew at */
    uint8_t *entries; /* the dictionary built last: entries in order, `width` bytes each */
    size_t entries_cap;
    uint32_t *counts;  /* the sort's counts, pass after pass */
} pq_dict_order;

/* values: n PLAIN values of `width` bytes (4 or 8); sign: signed integers, ordered by value
 * (others by their bits: any order is a valid dictionary). bounds: NULL, or (signed integers)
 * their smallest and largest value, known already (the column's statistics). Writes each
 * value's entry to index[0..n) and the distinct values in order to o->entries. The entries'
 * count (>= 1), or 0 out of memory (or n is 0 or over 4 Gi). */
size_t pq_dict_build(pq_dict_order *o, const uint8_t *values, size_t n, size_t width, bool sign, uint32_t *index,
                     const int64_t *bounds);
void pq_dict_order_free(pq_dict_order *o);

#endif
