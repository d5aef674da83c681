/* libcurl.so.4, loaded with dlopen the first time an upload is configured: libdial9 itself
 * links only libc and pthreads. */
#ifndef D9_AWS_LIBCURL_LOADER_H
#define D9_AWS_LIBCURL_LOADER_H

#define CURL_DISABLE_TYPECHECK 1 /* the function-like setopt macro would clash with the table */
#include <curl/curl.h>

typedef struct d9_libcurl {
    __typeof__(curl_easy_init) *easy_init;
    __typeof__(curl_easy_setopt) *easy_setopt;
    __typeof__(curl_easy_perform) *easy_perform;
    __typeof__(curl_easy_cleanup) *easy_cleanup;
    __typeof__(curl_easy_getinfo) *easy_getinfo;
    __typeof__(curl_easy_reset) *easy_reset;
    __typeof__(curl_easy_strerror) *easy_strerror;
    __typeof__(curl_slist_append) *slist_append;
    __typeof__(curl_slist_free_all) *slist_free_all;
} d9_libcurl;

/* The loaded functions (curl_global_init done), or NULL with the reason in d9_libcurl_error(). */
const d9_libcurl *d9_libcurl_get(void);
const char *d9_libcurl_error(void);

#endif
