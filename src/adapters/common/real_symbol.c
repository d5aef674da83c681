/* Finding the real loop-library function behind an adapter's wrapper.
 *
 * RTLD_NEXT (relative to the object holding the wrapper) finds it when the loop library was
 * loaded after us in the global scope: the normal case. A program that dlopens libuv (or
 * libevent, libev) with RTLD_LOCAL, as plugin hosts and language runtimes do, keeps it out of
 * the global scope; the library's calls to its own exported functions still reach our
 * wrappers (the global scope comes first), and RTLD_NEXT then finds nothing. So we fall back to
 * asking every loaded object but ourselves, in load order: the loop library that called the
 * wrapper is among them. Only when no object defines the name (nothing can be called) does the
 * program stop. */
#include "real_symbol.h"

#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_OBJECTS 512

typedef struct object_list {
    char *names[MAX_OBJECTS];
    int count;
    uintptr_t self_base;
} object_list;

static int collect(struct dl_phdr_info *info, size_t size, void *ctx) {
    (void)size;
    object_list *l = ctx;
    if (!info->dlpi_name || !info->dlpi_name[0] || info->dlpi_addr == l->self_base) return 0;
    if (l->count < MAX_OBJECTS) {
        l->names[l->count] = strdup(info->dlpi_name);
        if (l->names[l->count]) l->count++;
    }
    return 0;
}

static void *search_loaded_objects(const char *name) {
    Dl_info self;
    object_list l;
    memset(&l, 0, sizeof l);
    if (dladdr((void *)search_loaded_objects, &self)) l.self_base = (uintptr_t)self.dli_fbase;
    dl_iterate_phdr(collect, &l); /* names first: no dlopen inside the iteration */
    void *found = NULL;
    for (int i = 0; i < l.count && !found; i++) {
        void *h = dlopen(l.names[i], RTLD_LAZY | RTLD_NOLOAD);
        if (!h) continue;
        void *p = dlsym(h, name);
        Dl_info where;
        if (p && dladdr(p, &where) && (uintptr_t)where.dli_fbase != l.self_base) found = p;
        dlclose(h);
    }
    for (int i = 0; i < l.count; i++) free(l.names[i]);
    return found;
}

void *d9a_real_symbol_slow(void *_Atomic *slot, const char *name) {
    void *p = dlsym(RTLD_NEXT, name);
    if (!p) p = search_loaded_objects(name);
    if (!p) {
        fprintf(stderr, "dial9: no loaded library defines %s, which a dial9 loop wrapper must "
                        "call; stopping\n", name);
        abort();
    }
    atomic_store_explicit(slot, p, memory_order_relaxed);
    return p;
}
