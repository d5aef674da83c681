/* libzstd.so.1, loaded with dlopen the first time zstd is written (DIAL9_COMPRESS=zstd,
 * `dial9 symbolize` of a .bin.zst) or read: libdial9 and the `dial9` command link only libc,
 * so `dial9 run` and the programs it records start without loading libzstd. One loader for
 * every part that uses libzstd. */
#ifndef D9_COMMON_LIBZSTD_LOADER_H
#define D9_COMMON_LIBZSTD_LOADER_H

#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_Sequence, ZSTD_compressSequences (optional below) */
#include <zstd.h>
#include <zstd_errors.h>

typedef struct d9_libzstd {
    __typeof__(ZSTD_createCCtx) *createCCtx;
    __typeof__(ZSTD_freeCCtx) *freeCCtx;
    __typeof__(ZSTD_CCtx_setParameter) *setParameter;
    __typeof__(ZSTD_compressStream2) *compressStream2;
    __typeof__(ZSTD_compress) *compress;
    __typeof__(ZSTD_compressBound) *compressBound;
    __typeof__(ZSTD_createDStream) *createDStream;
    __typeof__(ZSTD_freeDStream) *freeDStream;
    __typeof__(ZSTD_DCtx_setParameter) *DCtx_setParameter;
    __typeof__(ZSTD_decompressStream) *decompressStream;
    __typeof__(ZSTD_isError) *isError;
    __typeof__(ZSTD_getErrorName) *getErrorName;
    __typeof__(ZSTD_getErrorCode) *getErrorCode;
    /* Optional (NULL when absent): zstd's experimental API, exported by libzstd.so.1 since 1.5.0.
     * The Parquet writer hands it its own sequences (runs of zero bytes) so that zstd entropy
     * codes a page without searching it for matches (pq_writer.h, PQ_ZSTD_ENTROPY). */
    __typeof__(ZSTD_compressSequences) *compressSequences;
} d9_libzstd;

/* The loaded functions, or NULL with the reason in d9_libzstd_error() (the same every call): it
 * names libzstd.so.1 and the Debian package, or the function the library lacks. */
const d9_libzstd *d9_libzstd_get(void);
const char *d9_libzstd_error(void);

#endif
