#include "sinks/libzstd_loader.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

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
    lib.createCCtx = (__typeof__(lib.createCCtx))dlsym(h, "ZSTD_createCCtx");
    lib.freeCCtx = (__typeof__(lib.freeCCtx))dlsym(h, "ZSTD_freeCCtx");
    lib.setParameter = (__typeof__(lib.setParameter))dlsym(h, "ZSTD_CCtx_setParameter");
    lib.compressStream2 = (__typeof__(lib.compressStream2))dlsym(h, "ZSTD_compressStream2");
    lib.isError = (__typeof__(lib.isError))dlsym(h, "ZSTD_isError");
    lib.getErrorName = (__typeof__(lib.getErrorName))dlsym(h, "ZSTD_getErrorName");
    if (!lib.createCCtx || !lib.freeCCtx || !lib.setParameter || !lib.compressStream2 || !lib.isError ||
        !lib.getErrorName) {
        /* ZSTD_compressStream2 came with zstd 1.4.0 (2019) */
        snprintf(error, sizeof error, "libzstd.so.1 lacks ZSTD_compressStream2 and its helpers (zstd older than 1.4)");
        dlclose(h);
        return;
    }
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
