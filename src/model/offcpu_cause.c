#include "model/offcpu_cause.h"

#include <string.h>

/* The name a frame is compared by: leading underscores, glibc's internal "GI_" and "libc_"
 * prefixes and compiler clone suffixes (".isra.0") taken off, so __GI___libc_read, __read and
 * read are one name. */
static size_t base_name(const char *symbol, char *out, size_t cap) {
    const char *s = symbol;
    for (;;) {
        while (*s == '_') s++;
        if (!strncmp(s, "GI_", 3)) s += 3;
        else if (!strncmp(s, "libc_", 5)) s += 5;
        else break;
    }
    size_t n = strcspn(s, ".");
    if (n >= cap) n = cap - 1;
    memcpy(out, s, n);
    out[n] = 0;
    return n;
}

static bool in_list(const char *s, const char *const *list) {
    for (; *list; list++)
        if (!strcmp(s, *list)) return true;
    return false;
}

static bool has_prefix_in(const char *s, const char *const *list) {
    for (; *list; list++)
        if (!strncmp(s, *list, strlen(*list))) return true;
    return false;
}

/* Compared before base_name's normalization: "__lll_lock_wait" and "lll_lock_wait" alike. */
bool d9m_is_lock_frame(const char *symbol) {
    static const char *const exact[] = {
        "pthread_mutex_lock", "pthread_mutex_timedlock", "pthread_mutex_clocklock",
        "pthread_mutex_lock_full", "pthread_mutex_cond_lock", "lll_lock_wait", "lll_lock_wait_private",
        "pthread_rwlock_rdlock", "pthread_rwlock_wrlock", "pthread_rwlock_timedrdlock",
        "pthread_rwlock_timedwrlock", "pthread_rwlock_clockrdlock", "pthread_rwlock_clockwrlock",
        "mtx_lock", "mtx_timedlock", "flockfile", "IO_flockfile", NULL};
    static const char *const prefixes[] = {"pthread_rwlock_", "pthread_mutex_lock", "lll_lock", NULL};
    if (!symbol) return false;
    char b[128];
    base_name(symbol, b, sizeof b);
    return in_list(b, exact) || has_prefix_in(b, prefixes);
}

static bool is_sleep_frame(const char *b) {
    static const char *const exact[] = {"nanosleep", "clock_nanosleep", "usleep", "sleep",
                                        "thrd_sleep", "hrtimer_nanosleep", "do_nanosleep",
                                        "common_nsleep", NULL};
    return in_list(b, exact) || strstr(b, "sys_nanosleep") || strstr(b, "sys_clock_nanosleep");
}

static bool is_fault_frame(const char *b) {
    static const char *const exact[] = {"exc_page_fault", "asm_exc_page_fault", "do_page_fault",
                                        "do_user_addr_fault", "handle_mm_fault", "handle_page_fault",
                                        "do_translation_fault", "do_mem_abort", "filemap_fault",
                                        "do_fault", "do_read_fault", "do_swap_page", NULL};
    return in_list(b, exact);
}

/* A system call: its kernel entry or handler, or the C library's wrapper of one that blocks
 * (when the stack has no kernel frames). */
static bool is_syscall_frame(const char *b) {
    static const char *const kernel_exact[] = {"do_syscall_64", "do_syscall_x64", "entry_SYSCALL_64",
                                               "entry_SYSCALL_64_after_hwframe", "do_fast_syscall_32",
                                               "el0_svc", "do_el0_svc", "invoke_syscall", NULL};
    static const char *const kernel_prefixes[] = {"x64_sys_", "se_sys_", "do_sys_", "ia32_sys_",
                                                  "x32_sys_", "arm64_sys_", "ksys_", NULL};
    static const char *const wrappers[] = {
        "read", "write", "pread", "pread64", "pwrite", "pwrite64", "readv", "writev", "preadv",
        "pwritev", "recv", "recvfrom", "recvmsg", "recvmmsg", "send", "sendto", "sendmsg", "sendmmsg",
        "accept", "accept4", "connect", "open", "open64", "openat", "openat64", "close", "fsync",
        "fdatasync", "sync_file_range", "poll", "ppoll", "select", "pselect", "epoll_wait",
        "epoll_pwait", "epoll_pwait2", "waitpid", "wait4", "waitid", "futex", "syscall", "ioctl",
        "sendfile", "splice", "getrandom", "flock", "fcntl", "fcntl64", NULL};
    return in_list(b, kernel_exact) || has_prefix_in(b, kernel_prefixes) || in_list(b, wrappers);
}

d9m_part d9m_offcpu_cause(bool preempted, const char *const *symbols, size_t n) {
    if (preempted) return D9M_PART_RUNNABLE;
    bool sleep = false, fault = false, io = false;
    char b[128];
    for (size_t i = 0; i < n; i++) {
        if (!symbols[i]) continue;
        if (d9m_is_lock_frame(symbols[i])) return D9M_PART_LOCK;
        base_name(symbols[i], b, sizeof b);
        sleep = sleep || is_sleep_frame(b);
        fault = fault || is_fault_frame(b);
        io = io || is_syscall_frame(b);
    }
    if (sleep) return D9M_PART_SLEEP;
    if (fault) return D9M_PART_FAULT;
    if (io) return D9M_PART_IO;
    return D9M_PART_BLOCKED_OTHER;
}
