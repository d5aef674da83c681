/* The switch the zero-code LD_PRELOAD shim flips: with it on, the adapters record every loop
 * of the process (no d9_*_instrument call needed; loops are named "uv", "libevent", "libev"
 * with indexes 0, 1, ...). With it off (the default) only instrumented loops are recorded.
 * Objects registered while it was off stay unrecorded. */
#ifndef D9_ADAPTERS_INSTRUMENT_ALL_H
#define D9_ADAPTERS_INSTRUMENT_ALL_H

#include <stdbool.h>

#include "real_symbol.h"

D9A_HIDDEN void d9_adapters_instrument_all(bool on);

#endif
