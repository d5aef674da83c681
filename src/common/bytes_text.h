/* A byte count as people read it: "12.3 MiB", "-512 B" (binary units, one decimal above bytes),
 * for the readers' text (analyze's HEAP section, diff's heap section). */
#ifndef D9_COMMON_BYTES_TEXT_H
#define D9_COMMON_BYTES_TEXT_H

#include <stddef.h>

/* Into buf (len bytes); returns buf. */
const char *d9_bytes_text(char *buf, size_t len, double bytes);

#endif
