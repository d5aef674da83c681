/* Internal to the libev adapter. */
#ifndef D9_ADAPTERS_EV_ADAPTER_H
#define D9_ADAPTERS_EV_ADAPTER_H

#include <ev.h>
#include <pthread.h>

#include "trampoline.h"

#define D9_EV_DEFAULT_NAME "libev"

/* Loop registry flag: dial9's release/acquire callbacks are installed on the loop. */
#define D9_EV_HOOKS_INSTALLED 0

/* Record the terminates that libev's own stops deferred (all loops when loop is NULL). */
D9A_HIDDEN void d9ev_flush_deferred(const struct ev_loop *loop);

/* The loop is being destroyed: unwrap its watchers and end their tasks. */
D9A_HIDDEN void d9ev_release_watchers(const struct ev_loop *loop);

/* Entry flag: the key is a token of ev_once, allocated by the adapter. */
#define D9_EV_ONCE_TOKEN 1u

#endif
