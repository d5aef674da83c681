/* Every thread of the program gets its recorder buffer as it starts, before it runs any of
 * the program's code: CPU samples and off-CPU intervals are kept only for threads that have
 * one, and a thread that would first record deep inside a loop would lose what came before.
 * The recorder's own threads (created through --wrap=pthread_create) are left alone.
 *
 * The program's threads are also counted. glibc ends a process with exit(0) when its last
 * thread ends (main may leave with pthread_exit), but the recorder's own threads would keep
 * such a process alive forever: so when the last of the program's threads ends, the shim
 * calls exit(0) itself, on that thread, as glibc would have (the final flush follows).
 *
 * A thread's name is read when it registers, so renames of the calling thread
 * (pthread_setname_np(pthread_self(), ...), prctl(PR_SET_NAME)) are copied to its buffer. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "core/thread_buffer.h"
#include "preload.h"

static _Atomic long g_program_threads = 1; /* main */
static pthread_key_t g_exit_key;
static _Atomic bool g_counting;

static void on_program_thread_exit(void *unused) {
    (void)unused;
    if (atomic_fetch_sub(&g_program_threads, 1) == 1) exit(0);
}

void d9p_threads_count_start(void) {
    if (atomic_load(&g_counting)) return;
    if (pthread_key_create(&g_exit_key, on_program_thread_exit) != 0) return;
    pthread_setspecific(g_exit_key, (void *)1);
    atomic_store(&g_counting, true);
}

void d9p_threads_forget_after_fork(void) {
    /* only the forking thread goes on in the child */
    atomic_store(&g_program_threads, 1);
    if (atomic_load(&g_counting)) pthread_setspecific(g_exit_key, (void *)1);
}

void d9p_thread_register_self(void) {
    if (D9__ACTIVE() && atomic_load_explicit(&d9p_recording, memory_order_relaxed))
        (void)d9_thread_current();
}

typedef struct start_args {
    void *(*fn)(void *);
    void *arg;
} start_args;

static void *start_thread(void *p) {
    start_args a = *(start_args *)p;
    free(p);
    if (atomic_load(&g_counting)) pthread_setspecific(g_exit_key, (void *)1);
    /* a thread created while the recorder starts waits a little for it, to register now */
    d9p_start_wait(100);
    d9p_thread_register_self();
    return a.fn(a.arg);
}

int __wrap_pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *),
                          void *arg);
int __wrap_pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *),
                          void *arg) {
    return D9P_NEXT(pthread_create)(thread, attr, fn, arg);
}

D9P_EXPORT int pthread_create(pthread_t *thread, const pthread_attr_t *attr,
                              void *(*fn)(void *), void *arg) {
    d9p_maybe_start_child();
    __typeof__(&pthread_create) real = D9P_NEXT(pthread_create);
    bool counting = atomic_load(&g_counting);
    if (!counting) return real(thread, attr, fn, arg);
    start_args *a = malloc(sizeof *a);
    if (!a) return real(thread, attr, fn, arg); /* uncounted: it may end before the process */
    a->fn = fn;
    a->arg = arg;
    if (counting) atomic_fetch_add(&g_program_threads, 1);
    int rc = real(thread, attr, start_thread, a);
    if (rc != 0) {
        free(a);
        if (counting) atomic_fetch_sub(&g_program_threads, 1);
    }
    return rc;
}

static void copy_name(const char *name) {
    d9_thread *t = d9_thread_peek();
    if (!t || !name) return;
    /* a plain byte copy: the collector reads it when it describes the thread */
    size_t n = strnlen(name, sizeof t->name - 1);
    memcpy(t->name, name, n);
    t->name[n] = 0;
}

D9P_EXPORT int pthread_setname_np(pthread_t thread, const char *name) {
    int rc = D9P_NEXT(pthread_setname_np)(thread, name);
    if (rc == 0 && pthread_equal(thread, pthread_self())) copy_name(name);
    return rc;
}

D9P_EXPORT int prctl(int option, ...) {
    va_list ap;
    va_start(ap, option);
    unsigned long a2 = va_arg(ap, unsigned long), a3 = va_arg(ap, unsigned long),
                  a4 = va_arg(ap, unsigned long), a5 = va_arg(ap, unsigned long);
    va_end(ap);
    int rc = D9P_NEXT(prctl)(option, a2, a3, a4, a5);
    if (rc == 0 && option == PR_SET_NAME) {
        int saved = errno;
        char name[16];
        strncpy(name, (const char *)a2, sizeof name - 1);
        name[sizeof name - 1] = 0;
        copy_name(name);
        errno = saved;
    }
    return rc;
}
