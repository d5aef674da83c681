/* libz.so.1, loaded with dlopen the first time gzip is written or read: libdial9 (the compress
 * step) and the `dial9` command (gzip traces, pprof) link only libc, so `dial9 run` and the
 * programs it records start without loading zlib. One loader for every part that uses zlib. */
#ifndef D9_COMMON_LIBZ_LOADER_H
#define D9_COMMON_LIBZ_LOADER_H

#include <zlib.h>

typedef struct d9_libz {
    /* deflateInit2 and inflateInit2 are macros over these: pass ZLIB_VERSION, sizeof(z_stream) */
    __typeof__(deflateInit2_) *deflateInit2_;
    __typeof__(deflate) *deflate;
    __typeof__(deflateBound) *deflateBound;
    __typeof__(deflateEnd) *deflateEnd;
    __typeof__(inflateInit2_) *inflateInit2_;
    __typeof__(inflate) *inflate;
    __typeof__(inflateReset) *inflateReset;
    __typeof__(inflateEnd) *inflateEnd;
} d9_libz;

/* The loaded functions, or NULL with the reason in d9_libz_error() (the same every call): it
 * names libz.so.1 and the Debian package, or the function the library lacks. */
const d9_libz *d9_libz_get(void);
const char *d9_libz_error(void);

#endif
