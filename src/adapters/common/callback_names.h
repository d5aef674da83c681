/* Where a task "was spawned", as a person recognizes it: the name of the callback function,
 * resolved once per callback address (dladdr, then the ELF symbol table) at registration time
 * and interned with d9_loc_intern, so a trampoline only passes a cached pointer. The
 * application can name the callbacks of its next registration explicitly instead. */
#ifndef D9_ADAPTERS_CALLBACK_NAMES_H
#define D9_ADAPTERS_CALLBACK_NAMES_H

#include "dial9/dial9.h"
#include "real_symbol.h"
#include "thread_state.h"

/* The location of callback `fn`: its symbol name ("on_read"), "libfoo.so.1+0x1a2b" when the
 * object has no symbol for it, NULL only when out of memory. Cached per address. */
D9A_HIDDEN const d9_loc *d9a_callback_loc(const void *fn);

/* Base name of the ELF object that holds `fn` ("libevent-2.1.so.7", the program's name...),
 * "" when unknown. Cached with the location: lets an adapter leave a library's internal
 * callbacks alone. */
D9A_HIDDEN const char *d9a_callback_object(const void *fn);

/* fork(): hold (true) or release the cache's lock (fork_guard.c). */
D9A_HIDDEN void d9a_names_fork_hold(bool hold);

/* Text of the name d9a_callback_loc would use, without caching or interning. */
D9A_HIDDEN void d9a_describe_function(const void *fn, char *out, size_t len);

/* The explicit location set for this thread's next registration, cleared as it is taken.
 * Every wrapper that registers callbacks takes it, used or not, so it never leaks into a
 * later, unrelated registration. */
static inline const d9_loc *d9a_take_next_loc(void) {
    const d9_loc *l = d9a_self.next_loc;
    if (__builtin_expect(l != NULL, 0)) d9a_self.next_loc = NULL;
    return l;
}

static inline void d9a_set_next_loc(const d9_loc *loc) { d9a_self.next_loc = loc; }

/* The location for callback `fn` of a registration that was given `explicit` (may be NULL).
 * The thread's last callback is kept: a server submits its requests with one callback over and
 * over (each uv_write of the demo's: ~20 instructions of the cache's hash probe and a call). */
static inline const d9_loc *d9a_loc_for(const void *fn, const d9_loc *explicit_loc) {
    if (explicit_loc) return explicit_loc;
    d9a_thread *s = &d9a_self;
    if (__builtin_expect(fn == s->last_cb && fn != NULL, 1)) return s->last_cb_loc;
    if (!fn) return NULL;
    const d9_loc *loc = d9a_callback_loc(fn);
    if (loc) {
        s->last_cb = fn;
        s->last_cb_loc = loc;
    }
    return loc;
}

#endif
