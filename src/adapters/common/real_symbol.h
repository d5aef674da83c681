/* Calling the function that a wrapper interposes: the next definition of the same symbol in
 * the dynamic linker's lookup order (dlsym(RTLD_NEXT)), found once and cached. The adapters
 * define uv_*, event_* and ev_* functions with the libraries' own names, so a program linked
 * with -ldial9-uv before -luv (or a preloaded shim) calls the wrapper, and the wrapper calls
 * the library through this. */
#ifndef D9_ADAPTERS_REAL_SYMBOL_H
#define D9_ADAPTERS_REAL_SYMBOL_H

#include <stdatomic.h>
#include <stddef.h>

/* Wrappers are exported (the libraries' headers do not all say so), everything else in the
 * adapters is compiled with -fvisibility=hidden. */
#define D9A_EXPORT __attribute__((visibility("default")))
#define D9A_HIDDEN __attribute__((visibility("hidden")))

/* Look `name` up with RTLD_NEXT, store it in *slot and return it. Aborts with a message when
 * there is no next definition: a wrapper cannot do its job without the real function, and
 * this only happens when the loop library is not loaded at all. */
D9A_HIDDEN void *d9a_real_symbol_slow(void *_Atomic *slot, const char *name);

static inline void *d9a_real_symbol(void *_Atomic *slot, const char *name) {
    void *p = atomic_load_explicit(slot, memory_order_relaxed);
    return __builtin_expect(p != NULL, 1) ? p : d9a_real_symbol_slow(slot, name);
}

/* D9A_REAL(uv_run)(loop, mode) calls the real uv_run. The cache is one static per use site. */
#define D9A_REAL(name)                                                                     \
    (__extension__({                                                                       \
        static void *_Atomic d9a_real_slot_;                                               \
        (__typeof__(&name))d9a_real_symbol(&d9a_real_slot_, #name);                        \
    }))

/* For wrappers that must stay frameless on their common path (a call that may have to look the
 * symbol up first needs a stack frame): the next definition of `name` in a file-scope slot,
 * looked up out of line the first time.
 *   D9A_NEXT_DEFINE(int, epoll_wait, (int fd, ...), (fd, ...))    once, at file scope
 *   return D9A_NEXT(epoll_wait, (fd, ...));                         in a wrapper: a jump */
#define D9A_NEXT_DEFINE(ret, name, params, args)                                           \
    static void *_Atomic d9a_next_##name;                                                  \
    static __attribute__((noinline)) ret d9a_first_##name params {                         \
        return ((__typeof__(&name))d9a_real_symbol(&d9a_next_##name, #name)) args;         \
    }

#define D9A_NEXT(name, args)                                                               \
    (__extension__({                                                                       \
        __typeof__(&name) d9a_n_ =                                                         \
            (__typeof__(&name))atomic_load_explicit(&d9a_next_##name, memory_order_relaxed); \
        __builtin_expect(d9a_n_ != NULL, 1) ? d9a_n_ args : d9a_first_##name args;         \
    }))

#endif
