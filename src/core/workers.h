/* Worker identities: each (runtime name, index) pair gets one process-wide id, so runtimes
 * never share ids; the table also feeds the `runtime.<name>` metadata entries. */
#ifndef D9_CORE_WORKERS_H
#define D9_CORE_WORKERS_H

#include <stdbool.h>
#include <stdint.h>

#define D9_MAX_WORKERS 254 /* ids 0..253; 254 = blocking pool, 255 = none */

/* The id of (runtime, index), assigned on first sight; 255 when the table is full. */
uint32_t d9_workers_id_for(const char *runtime, uint32_t index);
/* Runtime name and index of worker `id`; NULL for an unknown id. */
const char *d9_workers_describe(uint32_t id, uint32_t *index);
/* How many ids have been assigned: ids are never reused, so ids below it are all known. */
uint32_t d9_workers_count(void);
/* fork(): hold (true) or release the table's lock (core/fork_guard.c). */
void d9_workers_fork_hold(bool hold);
/* Calls fn once per runtime with the comma-separated list of its worker ids. */
void d9_workers_each_runtime(void (*fn)(const char *runtime, const char *ids, void *ctx), void *ctx);

#endif
