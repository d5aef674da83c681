#include "common/libz_loader.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "common/dl_sym.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static d9_libz lib;
static const d9_libz *loaded;
static char error[256];

static void load(void) {
    void *h = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(error, sizeof error, "cannot load libz.so.1 (install zlib1g): %s", dlerror());
        return;
    }
    const char *missing = NULL;
#define D9_LIBZ_SYM(f) lib.f = (__typeof__(lib.f))d9_dlsym_or_note(h, #f, &missing)
    D9_LIBZ_SYM(deflateInit2_);
    D9_LIBZ_SYM(deflate);
    D9_LIBZ_SYM(deflateBound);
    D9_LIBZ_SYM(deflateEnd);
    D9_LIBZ_SYM(inflateInit2_);
    D9_LIBZ_SYM(inflate);
    D9_LIBZ_SYM(inflateReset);
    D9_LIBZ_SYM(inflateEnd);
#undef D9_LIBZ_SYM
    if (missing) {
        snprintf(error, sizeof error, "libz.so.1 lacks %s (install zlib1g)", missing);
        dlclose(h);
        return;
    }
    loaded = &lib; /* never closed: other threads may be compressing */
}

const d9_libz *d9_libz_get(void) {
    pthread_once(&once, load);
    return loaded;
}

const char *d9_libz_error(void) {
    pthread_once(&once, load);
    return error;
}
