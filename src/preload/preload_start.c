/* Starting the recorder off the program's path. d9_start costs a few milliseconds in a fresh
 * process (perf events and their rings, the host probes, the first segment), which would all
 * be added to the program's start. The constructor does only what must precede main (the
 * loop adapters' all-loops switch, the thread count, the main thread's buffer) and hands
 * d9_start to a short-lived thread; events before it finishes are not recorded.
 *
 * What must not race the start waits for it, with a bound (never a deadlock: the start may
 * need the loader lock that a waiting thread holds inside dlopen): the end of the process
 * (atexit), an exec, a fork, each new thread before it registers, and a loop that starts
 * running or submits a request (the adapters' start gate, start_gate.h: every callback a loop runs is
 * in the run, from the first). close() does not wait: the recorder's fds are protected the
 * moment they are opened (preload_fds.c). */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "preload.h"
#include "sources/heap_sampler.h"
#include "sources/sources.h"
#include "start_gate.h"

enum { IDLE, STARTING, DONE };

static _Atomic int g_state = IDLE;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_done = PTHREAD_COND_INITIALIZER;
static d9_config g_cfg;
static bool g_serve_signals;

/* A loop's wait at the start gate. The bound only guards against the dlopen case above: a
 * start takes milliseconds, even on a loaded machine. */
#define LOOP_START_WAIT_MS 10000
static void loop_waits_for_start(void) { (void)d9p_start_wait(LOOP_START_WAIT_MS); }

static void finish(void) {
    atomic_store_explicit(&d9a_start_gate, NULL, memory_order_release);
    pthread_mutex_lock(&g_lock);
    atomic_store(&g_state, DONE);
    pthread_cond_broadcast(&g_done);
    pthread_mutex_unlock(&g_lock);
}

static void *starter_main(void *arg) {
    (void)arg;
    /* Let the program go on first. A new thread often starts on the CPU of the thread that
     * created it, and the kernel may then run it there at once: the whole start (~1 ms) before
     * the program's next instruction. A short program would end only after the start had set
     * up everything for it; given the CPU, it is already in its exit handlers when the start
     * gets here, and the start skips what a program that has ended has no use for. */
    sched_yield();
    d9_heap_exclude_thread(); /* the recorder's own allocations are not the program's */
    d9p_start_now(&g_cfg);
    finish();
    if (g_serve_signals) d9p_signals_serve(); /* the stopper from now on: one thread fewer */
    return NULL;
}

void d9p_start_async(const d9_config *cfg, bool serve_signals) {
    g_cfg = *cfg;
    g_serve_signals = serve_signals;
    atomic_store(&g_state, STARTING);
    atomic_store_explicit(&d9a_start_gate, loop_waits_for_start, memory_order_release);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t th;
    int rc = D9P_NEXT(pthread_create)(&th, &attr, starter_main, NULL);
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) { /* no thread: start here, as a plain constructor would */
        d9p_start_now(&g_cfg);
        finish();
        if (serve_signals) (void)d9p_signals_spawn_stopper();
    }
}

bool d9p_start_wait(unsigned max_ms) {
    if (__builtin_expect(atomic_load_explicit(&g_state, memory_order_acquire) != STARTING, 1))
        return true;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    uint64_t ns = (uint64_t)until.tv_nsec + (uint64_t)max_ms * 1000000u;
    until.tv_sec += (time_t)(ns / 1000000000u);
    until.tv_nsec = (long)(ns % 1000000000u);
    pthread_mutex_lock(&g_lock);
    int rc = 0;
    while (atomic_load(&g_state) == STARTING && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&g_done, &g_lock, &until);
    bool done = atomic_load(&g_state) != STARTING;
    pthread_mutex_unlock(&g_lock);
    return done;
}

/* fork() while the starter thread is inside d9_start would copy a half-started recorder into
 * the child: nginx's master forks its workers right after its own start, and on a busy host a
 * worker could inherit the start in progress and never begin its own run (test_server_nginx
 * saw one worker without a run, once in ~40). A fork waits for the start, bounded as a loop's
 * wait is; the starter itself never forks (posix_spawn runs no fork handlers). */
D9P_EXPORT pid_t fork(void) {
    (void)d9p_start_wait(LOOP_START_WAIT_MS);
    return D9P_NEXT(fork)();
}

void d9p_start_forget_after_fork(void) {
    /* the starter thread does not exist here; the recorder forgot its half-started run */
    g_lock = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
    g_done = (pthread_cond_t)PTHREAD_COND_INITIALIZER;
    atomic_store(&g_state, IDLE);
    atomic_store(&d9a_start_gate, NULL);
}

/* Registered before main: runs after the program's own exit handlers and the recorder's. A
 * start still in progress skips the kernel sources it has not reached (sources.h): a program
 * that ends this soon has nothing left for them to observe. */
static void at_exit(void) {
    d9_sources_process_ending();
    if (d9p_start_wait(2000)) d9_stop();
}

void d9p_start_install_exit(void) {
    static atomic_flag once = ATOMIC_FLAG_INIT;
    if (!atomic_flag_test_and_set(&once)) atexit(at_exit);
}
