/* fork() while another thread is inside one of the core's registries (locations, event
 * types, worker identities) would leave the child a lock that no thread of it will ever
 * release, and perhaps a half-written entry: its first registration would hang. The prepare
 * handler takes those locks, so the forking thread waits for them and the child inherits
 * them whole; parent and child release them. The child then forgets the recorder (its
 * threads' buffers, whose lock it resets: a thread registering or exiting at the fork may
 * hold it), from the first fork on, whether or not anything was ever recorded.
 *
 * They are leaves (nothing else is locked under them), so their order is free. The adapters'
 * locks, held around calls into these registries, must be taken before them: prepare
 * handlers run in the reverse order of registration, and this one is registered first (a
 * constructor of higher priority than the adapters' fork guard in one library; in separate
 * libraries, libdial9.so's constructors run before those of the libraries that need it). */
#include <pthread.h>
#include <stdbool.h>

#include "core/event_types.h"
#include "core/fork_guard.h"
#include "core/locations.h"
#include "core/workers.h"

static void hold_all(void) {
    d9_locations_fork_hold(true);
    d9_event_types_fork_hold(true);
    d9_workers_fork_hold(true);
}

static void release_all(void) {
    d9_workers_fork_hold(false);
    d9_event_types_fork_hold(false);
    d9_locations_fork_hold(false);
}

static void in_child(void) {
    release_all();
    d9_recorder_forget_after_fork();
}

static void install_once(void) { pthread_atfork(hold_all, release_all, in_child); }

void d9_fork_guard_install(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, install_once);
}

/* 150: before the adapters' guard (160, src/adapters/common/fork_guard.c) */
__attribute__((constructor(150))) static void install_at_load(void) { d9_fork_guard_install(); }
