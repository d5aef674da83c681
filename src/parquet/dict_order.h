/* An integer column chunk's dictionary put in order of value before it is written. Parquet
 * leaves a dictionary's order to the writer; sorted, an entry's index grows with its value,
 * so the indexes of durations are a dense renumbering of them (small, frequent durations get
 * nearby small indexes), which zstd codes in fewer bytes than the 8-byte PLAIN values or the
 * first-seen order's indexes (docs/fleet-tables.md, "Measured"), and the dictionary page
 * itself is a sorted run of close values. */
#ifndef D9_PARQUET_DICT_ORDER_H
#define D9_PARQUET_DICT_ORDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct pq_dict_order {
    struct pq_dict_key *keys; /* scratch, reused from chunk to chunk */
    uint32_t *rank;           /* rank[old index] = its index in value order */
    size_t cap;
} pq_dict_order;

/* entries: n PLAIN values of `width` bytes (4: INT32, 8: INT64), signed, all distinct,
 * reordered in place by value; index[0..nindex) renumbered to match. false: no memory
 * (nothing changed). */
bool pq_dict_sort_ints(pq_dict_order *o, uint8_t *entries, size_t n, size_t width, uint32_t *index, size_t nindex);
void pq_dict_order_free(pq_dict_order *o);

#endif
