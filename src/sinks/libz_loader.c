#include "sinks/libz_loader.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

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
    lib.deflateInit2_ = (__typeof__(lib.deflateInit2_))dlsym(h, "deflateInit2_");
    lib.deflate = (__typeof__(lib.deflate))dlsym(h, "deflate");
    lib.deflateEnd = (__typeof__(lib.deflateEnd))dlsym(h, "deflateEnd");
    if (!lib.deflateInit2_ || !lib.deflate || !lib.deflateEnd) {
        snprintf(error, sizeof error, "libz.so.1 lacks deflateInit2_/deflate/deflateEnd");
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
