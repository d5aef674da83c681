#include "real_symbol.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

void *d9a_real_symbol_slow(void *_Atomic *slot, const char *name) {
    /* RTLD_NEXT is relative to the object holding this code: the adapter library itself. */
    void *p = dlsym(RTLD_NEXT, name);
    if (!p) {
        fprintf(stderr, "dial9: cannot find the real %s (is its library loaded after the "
                        "dial9 adapter?): %s\n", name, dlerror());
        abort();
    }
    atomic_store_explicit(slot, p, memory_order_relaxed);
    return p;
}
