/* A caller's d9_config as this library's: the caller's struct may be shorter (an older header)
 * or longer (a newer one) than ours; its struct_size says which (docs/abi.md). */
#ifndef D9_CORE_CONFIG_ABI_H
#define D9_CORE_CONFIG_ABI_H

#include "dial9/dial9.h"

/* Copy the first in->struct_size bytes of `in` over the defaults into `out` (a whole
 * d9_config of this version). D9_OK, or D9_ERR_INVALID with d9_last_error() for a NULL `in`, a
 * struct_size no d9_config_init wrote, or options of a newer header that this library would
 * ignore. */
int d9_config_from_caller(const d9_config *in, d9_config *out);

#endif
