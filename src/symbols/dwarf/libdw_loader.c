#include "symbols/dwarf/libdw_loader.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static d9_libdw g_libdw;
static const d9_libdw *g_loaded;
static char g_why[256];

#ifdef D9_LIBDW_LINKED
/* Sanitizer builds link libdw instead (CMakeLists.txt): the ASan/LSan runtimes of GCC <= 13
 * and LLVM <= 16 can misread the dynamic TLS of a dlopen'ed library (libdw's, libelf's) and
 * crash in the leak check at exit (google/sanitizers#1322). */
static void load(void) {
#define D9_LIBDW_TAKE(fn) g_libdw.fn = fn;
    D9_LIBDW_FUNCTIONS(D9_LIBDW_TAKE)
#undef D9_LIBDW_TAKE
    g_loaded = &g_libdw;
}
#else
static void load(void) {
    void *lib = dlopen(D9_LIBDW_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *e = dlerror();
        snprintf(g_why, sizeof g_why, "%s", e ? e : D9_LIBDW_SONAME ": cannot be loaded");
        return;
    }
#define D9_LIBDW_RESOLVE(fn)                                                                   \
    {                                                                                          \
        void *p = dlsym(lib, #fn);                                                             \
        if (!p) {                                                                              \
            snprintf(g_why, sizeof g_why, D9_LIBDW_SONAME ": no function " #fn);               \
            dlclose(lib);                                                                      \
            return;                                                                            \
        }                                                                                      \
        g_libdw.fn = (__typeof__(g_libdw.fn))p;                                                \
    }
    D9_LIBDW_FUNCTIONS(D9_LIBDW_RESOLVE)
#undef D9_LIBDW_RESOLVE
    g_loaded = &g_libdw;
}
#endif

const d9_libdw *d9_libdw_load(const char **why) {
    pthread_once(&g_once, load);
    if (!g_loaded && why) *why = g_why;
    return g_loaded;
}
