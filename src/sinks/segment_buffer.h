/* Memory mode's segment buffers: anonymous mappings backed by transparent huge pages where the
 * kernel allows them (MADV_HUGEPAGE: one fault per 2 MiB instead of per 4 KiB), trimmed to
 * what a segment holds when it is sealed. A buffer never moves (a crash dump reads the open
 * one: core/flight_crash.h); whoever ends up with it frees it with d9_segbuf_free, not free. */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* A buffer of cap bytes (zeroed, untouched pages cost nothing), or NULL (errno set). */
uint8_t *d9_segbuf_alloc(size_t cap);

/* The segment is sealed with `used` bytes: the pages past them go back to the kernel. */
void d9_segbuf_trim(uint8_t *buf, size_t used);

/* Give the buffer back (NULL does nothing). */
void d9_segbuf_free(uint8_t *buf);
