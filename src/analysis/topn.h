/* Keep the N elements with the largest keys seen so far, in fixed memory. Slots are stable
 * (an element stays in its slot until a larger key replaces it), so other structures can refer
 * to a kept element by (slot, generation) and notice when it was replaced. N is small (the
 * --top of a report), so finding the smallest kept key is a linear scan, done only when an
 * element is replaced. */
#ifndef D9_ANALYSIS_TOPN_H
#define D9_ANALYSIS_TOPN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct d9a_topn {
    size_t cap;        /* N */
    size_t n;          /* slots in use */
    size_t elem_size;
    unsigned char *items;
    uint64_t *keys;
    uint64_t *seq;     /* arrival order: ties keep the earlier element first */
    uint32_t *gen;     /* bumped each time a slot gets a new element */
    size_t min_slot;
    uint64_t next_seq;
} d9a_topn;

/* 0, or -1 when out of memory. cap may be 0 (keeps nothing). */
int d9a_topn_init(d9a_topn *t, size_t cap, size_t elem_size);
void d9a_topn_free(d9a_topn *t);

/* Whether an element with `key` would be kept (it beats the smallest kept key, or there is
 * room). Cheap: call it before building the element. */
static inline bool d9a_topn_wants(const d9a_topn *t, uint64_t key) {
    return t->n < t->cap || (t->cap > 0 && key > t->keys[t->min_slot]);
}

/* The slot for a new element with `key` (its bytes are the caller's to fill), or -1 when it is
 * not kept. *replaced (may be NULL) says whether the slot held an element before: the caller
 * releases whatever that element owned first, since it is about to be overwritten. */
long d9a_topn_place(d9a_topn *t, uint64_t key, bool *replaced);

static inline void *d9a_topn_at(const d9a_topn *t, size_t slot) {
    return t->items + slot * t->elem_size;
}

/* Slots in order of decreasing key (ties: earlier first); `order` has room for t->n. */
void d9a_topn_order(const d9a_topn *t, size_t *order);

#endif
