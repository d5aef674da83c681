/* Interned source locations: each d9_loc gets a small id on first use (cached in the struct),
 * and the collector looks the id's name up when it writes the string pool. */
#ifndef D9_CORE_LOCATIONS_H
#define D9_CORE_LOCATIONS_H

#include <stdbool.h>
#include <stdint.h>

#include "dial9/dial9.h"

#define D9_LOC_UNKNOWN 0u /* id of "unknown": a NULL location */

/* Id of `loc`, interning it on first use. Returns D9_LOC_UNKNOWN for NULL or on no memory. */
static inline uint32_t d9_loc_id(const d9_loc *loc);
uint32_t d9_loc_id_slow(const d9_loc *loc);

/* fork(): hold (true) or release the registry's lock (core/fork_guard.c). */
void d9_locations_fork_hold(bool hold);

/* The name of an id ("file:line", or the name given to d9_loc_intern). Never NULL. */
const char *d9_loc_name(uint32_t id);

static inline uint32_t d9_loc_id(const d9_loc *loc) {
    if (!loc) return D9_LOC_UNKNOWN;
    uint32_t id = __atomic_load_n(&loc->id, __ATOMIC_ACQUIRE);
    return __builtin_expect(id != 0, 1) ? id : d9_loc_id_slow(loc);
}

#endif
