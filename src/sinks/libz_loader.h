/* libz.so.1, loaded with dlopen the first time compression is needed: libdial9 itself links
 * only libc and pthreads. */
#ifndef D9_SINKS_LIBZ_LOADER_H
#define D9_SINKS_LIBZ_LOADER_H

#include <zlib.h>

typedef struct d9_libz {
    __typeof__(deflateInit2_) *deflateInit2_;
    __typeof__(deflate) *deflate;
    __typeof__(deflateEnd) *deflateEnd;
} d9_libz;

/* The loaded functions, or NULL with the reason in d9_libz_error() (the same every call). */
const d9_libz *d9_libz_get(void);
const char *d9_libz_error(void);

#endif
