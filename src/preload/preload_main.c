/* The shim's constructor: start recording from the DIAL9_* variables, with no change to the
 * program. A bad value (DIAL9_TRACE_CHILDREN included), an unwritable directory or a setuid
 * program end in "record nothing" (with one warning line for the first two), never in an exit
 * or a crash.
 *
 * Before main: the environment (an absolute DIAL9_TRACE_DIR, LD_PRELOAD without the shim
 * unless children are traced), the configuration, the loop adapters' all-loops switch, the
 * count of the program's threads and the main thread's buffer. The recorder itself starts on
 * a thread of its own (preload_start.c), so the program does not wait for it. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "core/run_metadata.h"
#include "core/thread_buffer.h"
#include "core/thread_cpu_clock.h"
#include "instrument_all.h"
#include "preload.h"
#include "start_gate.h"
#include "thread_state.h"

_Atomic bool d9p_recording;
bool d9p_trace_children;
_Atomic bool d9p_child_start_pending;
_Atomic bool d9p_loop_child_pending;

void *d9p_next_symbol(void *_Atomic *slot, const char *name) {
    void *p = dlsym(RTLD_NEXT, name);
    if (p) atomic_store_explicit(slot, p, memory_order_relaxed);
    return p;
}

/* DIAL9_TRACE_CHILDREN, the shim's own variable. d9_config_from_env checks it like every
 * other (a bad value disables recording, with the message); here a bad value is "no". */
static bool trace_children_wanted(void) {
    const char *v = getenv("DIAL9_TRACE_CHILDREN");
    return v && (!strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes") ||
                 !strcasecmp(v, "on"));
}

/* The configuration the constructor read: a forked child records with it, whatever became
 * of the environment meanwhile (nginx's master clears it before it forks its workers). */
static d9_config g_config;
static bool g_have_config;

static const char *keep(const char *s) { return s ? strdup(s) : NULL; }

/* The configuration of a run in this process, or false (nothing to record). */
static bool prepare(d9_config *cfg) {
    if (g_have_config) {
        *cfg = g_config;
    } else {
        if (d9_config_from_env(cfg) != 0) {
            fprintf(stderr, "dial9: recording disabled: %s\n", d9_last_error());
            return false;
        }
        if (!cfg->enabled) return false;
        /* the strings point into the environment, which the program may change meanwhile */
        cfg->trace_dir = keep(cfg->trace_dir);
        /* unset: the program's name as started, before main (a forked worker's run would
         * take the title the server rewrote over argv[0], "nginx: master process ...") */
        cfg->service = keep(cfg->service ? cfg->service : d9_program_name());
        cfg->s3_bucket = keep(cfg->s3_bucket);
        cfg->s3_prefix = keep(cfg->s3_prefix);
        cfg->s3_region = keep(cfg->s3_region);
        cfg->s3_endpoint = keep(cfg->s3_endpoint);
        if (!cfg->trace_dir) return false;
        g_config = *cfg;
        g_have_config = true;
    }

    /* loops created from now on are recorded without any call from the program */
    d9_adapters_instrument_all(true);
    d9p_threads_count_start();
    d9p_start_install_exit();
    /* the main thread's buffer now, so that it is sampled even if it never records an event
     * (within the configured sizes and budget: d9_start sets them again for later threads) */
    uint64_t words = (uint64_t)cfg->buffer_kb * 1024 / 8, p = 1;
    while (p < words) p <<= 1;
    d9_thread_set_ring_limits(p, (uint64_t)cfg->memory_budget_mb << 20);
    (void)d9_thread_current();
    return true;
}

bool d9p_start_now(const d9_config *cfg) {
    d9p_loops_detect();
    d9p_note("preload", "libdial9-preload.so (zero-code); children %s",
             d9p_trace_children ? "traced (DIAL9_TRACE_CHILDREN=1)" : "not traced");
    d9_start_or_disabled(cfg);
    if (!__atomic_load_n(&d9__active, __ATOMIC_RELAXED)) return false;
    atomic_store(&d9p_recording, true);
    d9p_signals_install();
    return true;
}

/* A traced child's loop starts its run before its first callback (start_gate.h). */
static void child_start_gate(void) {
    atomic_store_explicit(&d9a_start_gate, NULL, memory_order_relaxed);
    d9p_maybe_start_child();
}

static void forget_in_child(void) {
    atomic_store(&d9p_recording, false);
    d9p_start_forget_after_fork();
    d9p_fds_forget_after_fork();
    d9p_fd_wakes_forget_after_fork();
    d9p_poll_forget_after_fork();
    d9p_conns_forget_after_fork();
    d9p_signals_forget_after_fork();
    d9p_threads_forget_after_fork();
    d9a_self.worker_loop = NULL; /* the child's run registers its loop worker again */
    /* the recorder disabled itself in the child; a traced child starts its own run later */
    if (d9p_trace_children) {
        atomic_store(&d9p_child_start_pending, true);
        atomic_store(&d9a_start_gate, child_start_gate);
    } else {
        /* the parent records, or its start is in progress: nginx forks its workers before */
        atomic_store(&d9p_loop_child_pending, g_have_config);
    }
}

void d9p_child_start(void) {
    /* the first interposer to see the flag starts the run, here (the child is past fork);
     * the flag is set again only by the next fork, in that fork's child */
    if (!atomic_exchange(&d9p_child_start_pending, false)) return;
    d9_config cfg;
    if (prepare(&cfg)) d9p_start_now(&cfg);
}

void d9p_loop_child_start(void) {
    if (!atomic_exchange(&d9p_loop_child_pending, false)) return;
    d9_config cfg;
    if (prepare(&cfg)) d9p_start_now(&cfg);
}

void d9p_start_pending_child(void) {
    if (atomic_load_explicit(&d9p_child_start_pending, memory_order_relaxed)) d9p_child_start();
    else if (atomic_load_explicit(&d9p_loop_child_pending, memory_order_relaxed)) d9p_loop_child_start();
}

__attribute__((constructor)) static void d9p_init(void) {
    /* setuid, setgid or file capabilities: the loader already restricts LD_PRELOAD there,
     * and an unprivileged user must not get files written with the program's rights */
    if (getauxval(AT_SECURE)) return;

    d9p_notes_register(); /* every run of this process adds the shim's notes */
    d9_thread_cpu_clock_set_fds_guarded(true); /* preload_fds.c: no fstat before each exact read */
    d9p_trace_children = trace_children_wanted();
    d9p_env_absolute_trace_dir();
    d9p_exec_remember();
    if (!d9p_trace_children) d9p_env_drop_self_from_preload();
    pthread_atfork(NULL, NULL, forget_in_child);
    d9_config cfg;
    if (prepare(&cfg)) {
        /* before main: a SIGTERM during the start still seals the run */
        bool serve = d9p_signals_install_for_starter();
        d9p_start_async(&cfg, serve);
    }
}
