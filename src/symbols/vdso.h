/* This process's vDSO image (mapped by the kernel in full, so its symbols and notes are
 * readable in memory): base, size and build id. */
#ifndef D9_SYMBOLS_VDSO_H
#define D9_SYMBOLS_VDSO_H

#include <stdbool.h>
#include <stddef.h>

/* False when the process has no vDSO we can read. */
bool d9_own_vdso(const void **base, size_t *size, char *build_id, size_t build_id_len);

#endif
