#include "common/libzstd_loader.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "common/dl_sym.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static d9_libzstd lib;
static const d9_libzstd *loaded;
static char error[256];

static void load(void) {
    void *h = dlopen("libzstd.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(error, sizeof error, "cannot load libzstd.so.1 (install libzstd1): %s", dlerror());
        return;
    }
    const char *missing = NULL;
#define D9_ZSTD_SYM(f) lib.f = (__typeof__(lib.f))d9_dlsym_or_note(h, "ZSTD_" #f, &missing)
    D9_ZSTD_SYM(createCCtx);
    D9_ZSTD_SYM(freeCCtx);
    lib.setParameter = (__typeof__(lib.setParameter))d9_dlsym_or_note(h, "ZSTD_CCtx_setParameter", &missing);
    D9_ZSTD_SYM(compressStream2);
    D9_ZSTD_SYM(compress);
    D9_ZSTD_SYM(compressBound);
    D9_ZSTD_SYM(createDStream);
    D9_ZSTD_SYM(freeDStream);
    D9_ZSTD_SYM(DCtx_setParameter);
    D9_ZSTD_SYM(decompressStream);
    D9_ZSTD_SYM(isError);
    D9_ZSTD_SYM(getErrorName);
    D9_ZSTD_SYM(getErrorCode);
#undef D9_ZSTD_SYM
    if (missing) {
        /* ZSTD_compressStream2 and the *_setParameter functions came with zstd 1.4.0 (2019) */
        snprintf(error, sizeof error, "libzstd.so.1 lacks %s (zstd 1.4 or later is needed: install libzstd1)",
                 missing);
        dlclose(h);
        return;
    }
    /* only from the version the writer's pages were checked with (Debian 12's 1.5.4) */
    unsigned (*version)(void) = (unsigned (*)(void))dlsym(h, "ZSTD_versionNumber");
    if (version && version() >= 10504)
        lib.compressSequences = (__typeof__(lib.compressSequences))dlsym(h, "ZSTD_compressSequences");
    loaded = &lib; /* never closed: other threads may be compressing */
}

const d9_libzstd *d9_libzstd_get(void) {
    pthread_once(&once, load);
    return loaded;
}

const char *d9_libzstd_error(void) {
    pthread_once(&once, load);
    return error;
}
