/* A clean final flush when the program dies of SIGINT or SIGTERM, without changing how it
 * handles them.
 *
 *   - A signal the program handles (or ignores) is the program's: dial9 does nothing, and
 *     the program's own exit path flushes (exit() runs the recorder's atexit handler).
 *   - A signal left at its default action gets dial9's handler instead. It only posts a
 *     semaphore: a thread of the shim (all signals blocked) stops the recorder, which seals
 *     the last segment, puts the default action back and sends the signal again, so the
 *     process dies of it as it would have (a second signal meanwhile kills at once).
 *     The handler is in place before main, so a signal that comes while the recorder is
 *     still starting waits for the start and seals that run too.
 *   - The program keeps seeing its own view: sigaction / signal report SIG_DFL where dial9's
 *     handler sits, and a handler it installs later simply replaces dial9's.
 * The recorder's own sigaction calls (SIGPROF) bypass all this (--wrap=sigaction). */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "core/own_thread_name.h"
#include "preload.h"

static const int k_signals[] = {SIGINT, SIGTERM};
#define N_SIGNALS (sizeof k_signals / sizeof k_signals[0])

typedef struct managed {
    _Atomic bool ours_installed;  /* dial9's handler is what the kernel has */
    struct sigaction shown;       /* what the program believes it has (a SIG_DFL action) */
} managed;

static managed g_managed[N_SIGNALS];
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static sem_t g_stop_sem;
static _Atomic int g_stopping;  /* the signal being handled, 0 before */
static _Atomic bool g_stopper_running;
static pid_t g_owner_pid;       /* the process whose recorder the stopper thread stops */

static managed *managed_of(int sig) {
    for (size_t i = 0; i < N_SIGNALS; i++)
        if (k_signals[i] == sig) return &g_managed[i];
    return NULL;
}

static int real_sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
    return D9P_NEXT(sigaction)(sig, act, old);
}

static void set_default(int sig) {
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    real_sigaction(sig, &dfl, NULL);
}

static void on_fatal_signal(int sig) {
    int saved = errno;
    managed *m = managed_of(sig);
    int expected = 0;
    if (!m || getpid() != g_owner_pid || !atomic_load(&g_stopper_running) ||
        !atomic_compare_exchange_strong(&g_stopping, &expected, sig)) {
        /* a second signal, or a process without a stopper: die now, as without dial9 */
        if (m) atomic_store(&m->ours_installed, false);
        set_default(sig);
        raise(sig); /* pending until this handler returns (the signal is blocked in it) */
        errno = saved;
        return;
    }
    sem_post(&g_stop_sem);
    errno = saved;
}

/* Waits for the handler's post, stops the recorder and lets the signal kill the process. */
void d9p_signals_serve(void) {
    d9_name_own_thread("dial9-signals");
    while (sem_wait(&g_stop_sem) != 0) {
    }
    int sig = atomic_load(&g_stopping);
    /* a signal during the asynchronous start (installed before it): let the start finish,
     * so that there is a run to seal, bounded as at exit */
    d9p_start_wait(2000);
    d9_stop();
    managed *m = managed_of(sig);
    if (m) atomic_store(&m->ours_installed, false);
    set_default(sig);
    kill(getpid(), sig);
}

static void *stopper_main(void *arg) {
    (void)arg;
    d9p_signals_serve();
    return NULL;
}

static void install_ours(int sig, managed *m) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal_signal;
    sa.sa_flags = SA_RESTART; /* the program's interrupted calls carry on while dial9 stops */
    sigemptyset(&sa.sa_mask);
    if (real_sigaction(sig, &sa, NULL) == 0) atomic_store(&m->ours_installed, true);
}

bool d9p_signals_spawn_stopper(void) {
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t th;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    int rc = D9P_NEXT(pthread_create)(&th, &attr, stopper_main, NULL);
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) atomic_store(&g_stopper_running, false); /* the handler then dies at once */
    return rc == 0;
}

/* The stopper of this process: a thread of its own, or (`by_starter`) the shim's starter
 * thread once the start is done, which saves creating one more thread at every start. */
static bool start_stopper(bool by_starter, bool *serve) {
    if (atomic_load(&g_stopper_running) && g_owner_pid == getpid()) return true;
    if (sem_init(&g_stop_sem, 0, 0) != 0) return false;
    atomic_store(&g_stopping, 0);
    if (by_starter) *serve = true;
    else if (!d9p_signals_spawn_stopper()) return false;
    g_owner_pid = getpid();
    atomic_store(&g_stopper_running, true);
    return true;
}

static bool install(bool by_starter) {
    pthread_mutex_lock(&g_lock);
    bool any_default = false, serve = false;
    for (size_t i = 0; i < N_SIGNALS; i++) {
        struct sigaction cur;
        if (real_sigaction(k_signals[i], NULL, &cur) == 0 && !(cur.sa_flags & SA_SIGINFO) &&
            cur.sa_handler == SIG_DFL)
            any_default = true;
    }
    if (any_default && start_stopper(by_starter, &serve)) {
        for (size_t i = 0; i < N_SIGNALS; i++) {
            managed *m = &g_managed[i];
            if (atomic_load(&m->ours_installed)) continue; /* installed before the start */
            if (real_sigaction(k_signals[i], NULL, &m->shown) != 0) continue;
            if ((m->shown.sa_flags & SA_SIGINFO) || m->shown.sa_handler != SIG_DFL) continue;
            install_ours(k_signals[i], m);
        }
    }
    pthread_mutex_unlock(&g_lock);
    return serve;
}

void d9p_signals_install(void) { (void)install(false); }

bool d9p_signals_install_for_starter(void) { return install(true); }

void d9p_signals_forget_after_fork(void) {
    /* no stopper thread here and nothing recorded: the default action, as the program set */
    g_lock = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
    atomic_store(&g_stopper_running, false);
    for (size_t i = 0; i < N_SIGNALS; i++) {
        if (!atomic_load(&g_managed[i].ours_installed)) continue;
        atomic_store(&g_managed[i].ours_installed, false);
        set_default(k_signals[i]);
    }
}

/* ---------------------------------------------------------------- the program's calls */

int __wrap_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
int __wrap_sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
    return real_sigaction(sig, act, old);
}

/* The program's sigaction on a managed signal. */
static int managed_sigaction(int sig, managed *m, const struct sigaction *act,
                             struct sigaction *old) {
    pthread_mutex_lock(&g_lock);
    int rc = 0;
    bool ours = atomic_load(&m->ours_installed);
    struct sigaction prev;
    if (ours) prev = m->shown;
    else rc = real_sigaction(sig, NULL, &prev);
    if (rc == 0 && act) {
        bool wants_default = !(act->sa_flags & SA_SIGINFO) && act->sa_handler == SIG_DFL;
        if (wants_default && atomic_load(&g_stopper_running) && g_owner_pid == getpid() &&
            atomic_load_explicit(&d9p_recording, memory_order_relaxed)) {
            m->shown = *act;
            if (!ours) install_ours(sig, m);
        } else {
            rc = real_sigaction(sig, act, NULL);
            if (rc == 0) atomic_store(&m->ours_installed, false);
        }
    }
    pthread_mutex_unlock(&g_lock);
    if (rc == 0 && old) *old = prev;
    return rc;
}

D9P_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
    managed *m = managed_of(sig);
    if (!m) return real_sigaction(sig, act, old);
    return managed_sigaction(sig, m, act, old);
}

/* signal() and its variants set the action through libc's internal sigaction, which the
 * shim cannot see: they are rebuilt on top of the interposed one. */
static __sighandler_t set_handler(int sig, __sighandler_t handler, int flags) {
    if (sig <= 0 || sig >= NSIG || sig == SIGKILL || sig == SIGSTOP) {
        errno = EINVAL;
        return SIG_ERR;
    }
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sa.sa_flags = flags;
    sigemptyset(&sa.sa_mask);
    if (!(flags & SA_NODEFER)) sigaddset(&sa.sa_mask, sig);
    if (sigaction(sig, &sa, &old) != 0) return SIG_ERR;
    return old.sa_handler;
}

D9P_EXPORT __sighandler_t signal(int sig, __sighandler_t handler) {
    if (!managed_of(sig)) return D9P_NEXT(signal)(sig, handler);
    return set_handler(sig, handler, SA_RESTART); /* BSD semantics, glibc's default */
}

__sighandler_t bsd_signal(int sig, __sighandler_t handler);
D9P_EXPORT __sighandler_t bsd_signal(int sig, __sighandler_t handler) {
    return signal(sig, handler);
}

__sighandler_t __sysv_signal(int sig, __sighandler_t handler);
__sighandler_t sysv_signal(int sig, __sighandler_t handler);

D9P_EXPORT __sighandler_t __sysv_signal(int sig, __sighandler_t handler) {
    if (!managed_of(sig)) return D9P_NEXT(__sysv_signal)(sig, handler);
    return set_handler(sig, handler, SA_RESETHAND | SA_NODEFER);
}

D9P_EXPORT __sighandler_t sysv_signal(int sig, __sighandler_t handler) {
    return __sysv_signal(sig, handler);
}
