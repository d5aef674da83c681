/* For the loaders of optional libraries (libz_loader.c, libzstd_loader.c): dlsym over a list of
 * functions, keeping the name of the first one missing for the error message. */
#ifndef D9_COMMON_DL_SYM_H
#define D9_COMMON_DL_SYM_H

#include <dlfcn.h>

static inline void *d9_dlsym_or_note(void *handle, const char *name, const char **first_missing) {
    void *p = dlsym(handle, name);
    if (!p && !*first_missing) *first_missing = name;
    return p;
}

#endif
