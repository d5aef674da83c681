/* libzstd.so.1, loaded with dlopen the first time zstd compression is needed (DIAL9_COMPRESS=zstd):
 * libdial9 itself links only libc and pthreads. */
#ifndef D9_SINKS_LIBZSTD_LOADER_H
#define D9_SINKS_LIBZSTD_LOADER_H

#include <zstd.h>

typedef struct d9_libzstd {
    __typeof__(ZSTD_createCCtx) *createCCtx;
    __typeof__(ZSTD_freeCCtx) *freeCCtx;
    __typeof__(ZSTD_CCtx_setParameter) *setParameter;
    __typeof__(ZSTD_compressStream2) *compressStream2;
    __typeof__(ZSTD_isError) *isError;
    __typeof__(ZSTD_getErrorName) *getErrorName;
} d9_libzstd;

/* The loaded functions, or NULL with the reason in d9_libzstd_error() (the same every call). */
const d9_libzstd *d9_libzstd_get(void);
const char *d9_libzstd_error(void);

#endif
