/* syscall() of numbers the shim does not handle reaches the kernel with its arguments
 * unchanged, all six, and its result and errno come back as glibc's (test_preload_raw_uring.sh).
 * Each check's outcome depends on the argument it names: a futex bitset of 0 is EINVAL where
 * any other is not, FUTEX_CMP_REQUEUE compares its sixth argument with the futex word. No
 * timing: a timeout is an absolute time already past. Prints where syscall() comes from
 * ("syscall from <object>") and one line per check; exits 1 at the first that fails. */
#include <dlfcn.h>
#include <stdbool.h>
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int g_failed;

static void expect(const char *what, long rc, long want_rc, int want_errno) {
    int err = errno;
    bool ok = rc == want_rc && (want_rc != -1 || err == want_errno);
    printf("%s: %s (rc %ld, errno %s)\n", ok ? "ok" : "FAIL", what, rc,
           rc == -1 ? strerror(err) : "-");
    if (!ok) g_failed = 1;
}

static uint32_t g_word = 7, g_other;

static void *on_thread(void *arg) {
    (void)arg;
    long tid = syscall(SYS_gettid);
    expect("SYS_gettid on a thread is gettid() and not the pid",
           tid == gettid() && tid != getpid() ? 0 : 1, 0, 0);
    return NULL;
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    Dl_info di;
    void *fn = dlsym(RTLD_DEFAULT, "syscall");
    const char *from = fn && dladdr(fn, &di) && di.dli_fname ? di.dli_fname : "?";
    printf("syscall from %s\n", strrchr(from, '/') ? strrchr(from, '/') + 1 : from);

    expect("SYS_getpid is getpid()", syscall(SYS_getpid) == getpid() ? 0 : 1, 0, 0);
    pthread_t t;
    pthread_create(&t, NULL, on_thread, NULL);
    pthread_join(t, NULL);

    struct timespec past = {0, 1}; /* CLOCK_MONOTONIC, absolute: long gone */
    errno = 0;
    expect("FUTEX_WAIT_BITSET, word differs: EAGAIN",
           syscall(SYS_futex, &g_word, FUTEX_WAIT_BITSET_PRIVATE, 8, &past, NULL, ~0u), -1,
           EAGAIN);
    expect("FUTEX_WAIT_BITSET, past deadline, bitset ~0: ETIMEDOUT",
           syscall(SYS_futex, &g_word, FUTEX_WAIT_BITSET_PRIVATE, 7, &past, NULL, ~0u), -1,
           ETIMEDOUT);
    expect("FUTEX_WAIT_BITSET, bitset 0 (the sixth argument): EINVAL",
           syscall(SYS_futex, &g_word, FUTEX_WAIT_BITSET_PRIVATE, 7, &past, NULL, 0u), -1, EINVAL);
    expect("FUTEX_WAKE_BITSET, bitset 1, nobody waits: 0",
           syscall(SYS_futex, &g_word, FUTEX_WAKE_BITSET_PRIVATE, 1, NULL, NULL, 1u), 0, 0);
    expect("FUTEX_WAKE_BITSET, bitset 0 (the sixth argument): EINVAL",
           syscall(SYS_futex, &g_word, FUTEX_WAKE_BITSET_PRIVATE, 1, NULL, NULL, 0u), -1, EINVAL);
    expect("FUTEX_CMP_REQUEUE, sixth argument equal to the word: 0",
           syscall(SYS_futex, &g_word, FUTEX_CMP_REQUEUE_PRIVATE, 1, 1, &g_other, 7u), 0, 0);
    expect("FUTEX_CMP_REQUEUE, sixth argument not the word: EAGAIN",
           syscall(SYS_futex, &g_word, FUTEX_CMP_REQUEUE_PRIVATE, 1, 1, &g_other, 8u), -1, EAGAIN);
    /* the io_uring numbers go through the shim's own path: results and errno unchanged */
    char params[120] = {0}; /* struct io_uring_params, zeroed */
    expect("io_uring_setup with 0 entries: EINVAL",
           syscall(SYS_io_uring_setup, 0, params), -1, EINVAL);
    expect("io_uring_enter on a bad fd: EBADF",
           syscall(SYS_io_uring_enter, -1, 0, 1, 1 /* GETEVENTS */, NULL, 0), -1, EBADF);
    expect("io_uring_register on a bad fd: EBADF",
           syscall(SYS_io_uring_register, 999999, 1, NULL, 0), -1, EBADF);
    expect("an unknown number: ENOSYS", syscall(100000), -1, ENOSYS);
    printf(g_failed ? "FAILED\n" : "all checks passed\n");
    return g_failed;
}
