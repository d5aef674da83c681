/* Whether an address lies in the code of a given shared object: lets a wrapper tell a call
 * made by the loop library itself (its return address is inside the library) from one the
 * application made, without a dladdr per call. */
#ifndef D9_ADAPTERS_CODE_RANGES_H
#define D9_ADAPTERS_CODE_RANGES_H

#include <stdbool.h>
#include <stdint.h>

#include "real_symbol.h"

#define D9A_MAX_CODE_RANGES 8

typedef struct d9a_code_ranges {
    int count;
    uintptr_t lo[D9A_MAX_CODE_RANGES], hi[D9A_MAX_CODE_RANGES];
} d9a_code_ranges;

/* The executable segments of the object that contains `addr`. False when none does. */
D9A_HIDDEN bool d9a_code_ranges_of(const void *addr, d9a_code_ranges *out);

static inline bool d9a_in_code_ranges(const d9a_code_ranges *r, const void *addr) {
    uintptr_t a = (uintptr_t)addr;
    for (int i = 0; i < r->count; i++)
        if (a >= r->lo[i] && a < r->hi[i]) return true;
    return false;
}

#endif
