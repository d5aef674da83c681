#include "aws/libcurl_loader.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

static pthread_once_t once = PTHREAD_ONCE_INIT;
static d9_libcurl lib;
static const d9_libcurl *loaded;
static char error[256];

#define SYM(field, name)                                                  \
    if (!(lib.field = (__typeof__(lib.field))dlsym(h, name))) {           \
        snprintf(error, sizeof error, "libcurl.so.4 lacks %s", name);     \
        dlclose(h);                                                       \
        return;                                                           \
    }

static void load(void) {
    void *h = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(error, sizeof error, "cannot load libcurl.so.4 (install libcurl4): %s", dlerror());
        return;
    }
    __typeof__(curl_global_init) *global_init;
    if (!(global_init = (__typeof__(global_init))dlsym(h, "curl_global_init"))) {
        snprintf(error, sizeof error, "libcurl.so.4 lacks curl_global_init");
        dlclose(h);
        return;
    }
    SYM(easy_init, "curl_easy_init")
    SYM(easy_setopt, "curl_easy_setopt")
    SYM(easy_perform, "curl_easy_perform")
    SYM(easy_cleanup, "curl_easy_cleanup")
    SYM(easy_getinfo, "curl_easy_getinfo")
    SYM(easy_reset, "curl_easy_reset")
    SYM(easy_strerror, "curl_easy_strerror")
    SYM(slist_append, "curl_slist_append")
    SYM(slist_free_all, "curl_slist_free_all")
    /* Not thread-safe in old versions; done once, on the pipeline thread. SSL only: no signal
     * handlers are touched (CURL_GLOBAL_ALL adds nothing else that matters here). */
    if (global_init(CURL_GLOBAL_SSL) != CURLE_OK) {
        snprintf(error, sizeof error, "curl_global_init failed");
        return;
    }
    loaded = &lib; /* never closed */
}

const d9_libcurl *d9_libcurl_get(void) {
    pthread_once(&once, load);
    return loaded;
}

const char *d9_libcurl_error(void) {
    pthread_once(&once, load);
    return error;
}
