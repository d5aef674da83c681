/* Internal to the libevent adapter. */
#ifndef D9_ADAPTERS_EVENT_ADAPTER_H
#define D9_ADAPTERS_EVENT_ADAPTER_H

#include <event2/event.h>

#include "trampoline.h"

#define D9_EVENT_DEFAULT_NAME "libevent"

/* Roles of an event's callbacks. */
enum { EVENT_ROLE_CB = 0, EVENT_ROLE_FINALIZE = 1 };

/* What the trampoline of an assigned event needs, in one block libevent is given as the
 * callback's argument: the trampoline reads it directly instead of looking the event up in
 * the side table (a hash and a sequence-checked probe, ~100 instructions per callback).
 * Written once at event_assign and never changed; freed when the table's entry goes, after
 * libevent has let go of the event. */
typedef struct d9e_event_cell {
    event_callback_fn fn;
    void *arg;            /* the application's callback argument */
    const d9_loc *loc;
    uint64_t task;
} d9e_event_cell;

/* Entry flags. */
enum {
    EVENT_FLAG_ONCE = 1, /* the key is a malloc'd token of event_base_once: free it */
    EVENT_FLAG_CELL = 2, /* an assigned event: the entry's `arg` is its d9e_event_cell */
};

/* The application's callback argument of entry `o`. */
static inline void *d9e_app_arg(const d9a_object *o) {
    return o->flags & EVENT_FLAG_CELL ? ((const d9e_event_cell *)o->arg)->arg : o->arg;
}
/* The cell of entry `o` (NULL if it has none), to free once libevent no longer holds it. */
static inline d9e_event_cell *d9e_cell_of(const d9a_object *o) {
    return o->flags & EVENT_FLAG_CELL ? (d9e_event_cell *)o->arg : NULL;
}

/* Roles of a bufferevent's (key: the bufferevent) and a listener's callbacks. */
enum { BEV_ROLE_READ = 0, BEV_ROLE_WRITE = 1, BEV_ROLE_EVENT = 2 };
enum { LISTENER_ROLE_CB = 0, LISTENER_ROLE_ERROR = 1 };

/* Entries of a base that is freed: terminate them (and free event_base_once tokens). */
D9A_HIDDEN void d9e_forget_base(struct event_base *base);

#endif
