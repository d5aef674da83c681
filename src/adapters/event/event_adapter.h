/* Internal to the libevent adapter. */
#ifndef D9_ADAPTERS_EVENT_ADAPTER_H
#define D9_ADAPTERS_EVENT_ADAPTER_H

#include <event2/event.h>

#include "trampoline.h"

#define D9_EVENT_DEFAULT_NAME "libevent"

/* Roles of an event's callbacks; the entry's `arg` is the application's callback argument
 * (libevent is given the event itself as argument, so the trampoline can find the entry). */
enum { EVENT_ROLE_CB = 0, EVENT_ROLE_FINALIZE = 1 };

/* Entry flags. */
enum { EVENT_FLAG_ONCE = 1 }; /* the key is a malloc'd token of event_base_once: free it */

/* Roles of a bufferevent's (key: the bufferevent) and a listener's callbacks. */
enum { BEV_ROLE_READ = 0, BEV_ROLE_WRITE = 1, BEV_ROLE_EVENT = 2 };
enum { LISTENER_ROLE_CB = 0, LISTENER_ROLE_ERROR = 1 };

/* Entries of a base that is freed: terminate them (and free event_base_once tokens). */
D9A_HIDDEN void d9e_forget_base(struct event_base *base);

#endif
