/* The collector's side of d9_src_batch (sources only see d9_src_batch_add in source.h). */
#ifndef D9_CORE_SOURCE_BATCH_H
#define D9_CORE_SOURCE_BATCH_H

#include "core/source.h"

struct arena_chunk;
struct d9_src_batch {
    d9_src_event *events;
    size_t count, cap;
    struct arena_chunk *chunks, *cur;
    d9_src_event *scratch; /* the sort's merge buffer, kept across drains (scratch_cap entries; the
                            * sort may leave the events in it and this the events' old buffer) */
    size_t scratch_cap;
};

void d9_src_batch_reset(d9_src_batch *b);
void d9_src_batch_free(d9_src_batch *b);
/* Order by time, stable (equal timestamps keep the order sources added them in). */
void d9_src_batch_sort(d9_src_batch *b);

#endif
