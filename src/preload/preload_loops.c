/* Which loop libraries the adapters can see. A loop library reaches the adapters' wrappers
 * only when it is a shared library loaded after the shim: then the program's calls and the
 * library's own calls through its PLT resolve to the shim first. A loop linked into the
 * program (node bundles libuv; some builds bundle libevent) never calls the shim: its threads
 * still park in epoll_wait / poll, which the poller interposers record as a home-grown loop's
 * (preload_loop_work.c), and the metadata says so (source.libuv / source.libevent / source.libev). */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "code_ranges.h"
#include "preload.h"
#include "sources/sources.h"

typedef struct loop_lib {
    const char *name;  /* metadata: source.<name> */
    const char *probe; /* a function every program of that loop calls */
    const char *file;  /* how the shared library's file name starts */
    bool adapter;      /* this build carries the library's adapter */
    bool interposed;
    d9a_code_ranges code;
} loop_lib;

static loop_lib g_libs[] = {
    {"libuv", "uv_run", "libuv.so", D9P_HAVE_UV, false, {0}},
    {"libevent", "event_base_loop", "libevent", D9P_HAVE_EVENT, false, {0}},
    {"libev", "ev_run", "libev.so", D9P_HAVE_EV, false, {0}},
};
#define N_LIBS (sizeof g_libs / sizeof g_libs[0])

static const char *base_name(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* Which loops' probes the program's own file defines: read once, for all of them, and only
 * when one of them is neither exported nor in a library. */
static unsigned exe_defines(const char *exe) {
    static unsigned mask;
    static bool read;
    if (!read) {
        const char *probes[N_LIBS];
        for (size_t i = 0; i < N_LIBS; i++) probes[i] = g_libs[i].probe;
        mask = d9p_elf_defines(exe, probes, N_LIBS);
        read = true;
    }
    return mask;
}

static void detect(loop_lib *l, const void *self_base, const char *exe) {
    void *first = dlsym(RTLD_DEFAULT, l->probe);
    void *next = dlsym(RTLD_NEXT, l->probe);
    Dl_info fi = {0};
    bool first_known = first && dladdr(first, &fi) && fi.dli_fname;
    bool first_is_self = first_known && fi.dli_fbase == self_base;
    const char *first_obj = first_known && fi.dli_fname[0] ? base_name(fi.dli_fname) : base_name(exe);

    if (first && !first_is_self && (l->adapter || !next || first != next)) {
        /* someone before the shim in lookup order defines it: the program itself (a loop
         * linked in and exported, like node's libuv) or an earlier preloaded library */
        d9p_note_source(l->name, false,
                        "%s defines %s itself (linked in, not the shared library): its callbacks "
                        "cannot be interposed; recorded from the poller (parks, polls per "
                        "connection)",
                        first_obj, l->probe);
        return;
    }
    if (next) {
        Dl_info ni = {0};
        const char *lib = dladdr(next, &ni) && ni.dli_fname ? base_name(ni.dli_fname) : "?";
        if (strncmp(lib, l->file, strlen(l->file)) != 0) {
            /* libev.so exports an emulation of libevent's basic API */
            d9p_note_source(l->name, false, "%s comes from %s, not %s: not loaded", l->probe, lib,
                            l->name);
            return;
        }
        if (!l->adapter) {
            d9p_note_source(l->name, false,
                            "%s is loaded but this dial9 was built without its adapter; "
                            "recorded from the poller (parks, polls per connection)", lib);
            return;
        }
        l->interposed = d9a_code_ranges_of(next, &l->code);
        d9p_note_source(l->name, true,
                        "%s interposed: every loop recorded (per-callback polls, spawns, "
                        "terminates, wakes; parks around its poller)", lib);
        return;
    }
    if (exe_defines(exe) & 1u << (l - g_libs)) {
        d9p_note_source(l->name, false,
                        "linked statically into %s: its callbacks cannot be interposed; "
                        "recorded from the poller (parks, polls per connection)", base_name(exe));
        return;
    }
    d9p_note_source(l->name, false, "not loaded at start");
}

/* preload_uring.c is built only against liburing's header */
#if __has_include(<liburing.h>)
#define D9P_URING_NOTE " and liburing's waits"
#else
#define D9P_URING_NOTE ""
#endif

void d9p_loops_detect(void) {
    if (d9_sources_process_is_ending()) {
        /* A program already in its exit handlers runs no loop any more: nothing to look for. */
        for (size_t i = 0; i < N_LIBS; i++) d9p_note_source(g_libs[i].name, false, "%s", D9_SOURCES_ENDING_NOTE);
    } else {
        Dl_info self;
        if (!dladdr((void *)d9p_loops_detect, &self)) return;
        char exe[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        exe[n > 0 ? n : 0] = 0;
        for (size_t i = 0; i < N_LIBS; i++) detect(&g_libs[i], self.dli_fbase, exe);
    }
    d9p_note_source("poller", true,
                    "epoll_wait, epoll_pwait, epoll_pwait2, poll, ppoll, select, pselect"
                    D9P_URING_NOTE " interposed: a thread that blocks there outside a loop "
                    "library is worker <index> of runtime \"epoll\", \"poll\", \"select\" or "
                    "\"io_uring\"; with fds registered (or a ring), "
                    "a loop whose work is polls, one per connection where seen (LoopEvent), "
                    "and whose runtime is the loop's name, \"function (module)\"");
    if (d9p_loops_interposed())
        d9p_note_source("fd_wakes", true,
                        "a write to an eventfd or pipe that a recorded callback reads is a wake "
                        "of that callback's task");
}

bool d9p_in_loop_library(const void *addr) {
    for (size_t i = 0; i < N_LIBS; i++)
        if (g_libs[i].interposed && d9a_in_code_ranges(&g_libs[i].code, addr)) return true;
    return false;
}

bool d9p_loops_interposed(void) {
    for (size_t i = 0; i < N_LIBS; i++)
        if (g_libs[i].interposed) return true;
    return false;
}
