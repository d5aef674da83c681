#include "analysis/frame_class.h"

#include <string.h>

#include "model/offcpu_cause.h"

static bool has_prefix(const char *s, const char *p) { return strncmp(s, p, strlen(p)) == 0; }

static bool in_list(const char *s, const char *const *list) {
    for (; *list; list++)
        if (!strcmp(s, *list)) return true;
    return false;
}

static bool prefix_in_list(const char *s, const char *const *list) {
    for (; *list; list++)
        if (has_prefix(s, *list)) return true;
    return false;
}

/* Compiler clones carry suffixes (".isra.0", ".constprop.0"): compare the name before them. */
static bool name_is(const char *symbol, const char *const *exact, const char *const *prefixes) {
    char base[128];
    size_t n = strcspn(symbol, ".");
    if (n >= sizeof base) return false;
    memcpy(base, symbol, n);
    base[n] = 0;
    return (exact && in_list(base, exact)) || (prefixes && prefix_in_list(base, prefixes));
}

bool d9a_is_scheduler_frame(const char *symbol) {
    static const char *const exact[] = {
        "__schedule", "schedule", "__wait_for_common", "wait_for_common", "do_wait_for_common",
        "__wait_rcu_gp", "finish_task_switch", "context_switch", "__switch_to",
        "__switch_to_asm", "__cond_resched", "_cond_resched", "preempt_schedule_common", NULL};
    static const char *const prefixes[] = {"schedule_", "io_schedule", "preempt_schedule",
                                           "wait_for_completion", "futex_wait_queue", NULL};
    return symbol && name_is(symbol, exact, prefixes);
}

bool d9a_is_preemption_frame(const char *symbol) {
    static const char *const exact[] = {"__cond_resched", "_cond_resched",
                                        "prepare_exit_to_usermode", "retint_kernel", NULL};
    static const char *const prefixes[] = {"exit_to_user_mode", "irqentry_exit",
                                           "preempt_schedule", "syscall_exit_to_user_mode", NULL};
    return symbol && name_is(symbol, exact, prefixes);
}

/* One list for every reader: the model's (model/offcpu_cause.h), which the attribution uses. */
bool d9a_is_lock_frame(const char *symbol) { return d9m_is_lock_frame(symbol); }

const char *d9a_basename(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* Shared objects of the C library, the loader and the runtimes: not the application. */
static bool is_system_object(const char *path) {
    static const char *const prefixes[] = {
        "libc.", "libc-", "libpthread", "ld-linux", "ld-", "libm.", "libm-", "libdl", "librt",
        "libgcc_s", "libstdc++", "libuv", "libevent", "libev.", "libev-", "libdial9", "libz.",
        "libssl", "libcrypto", "libresolv", "libnss", "linux-vdso", "[vdso]", "libasan",
        "libubsan", "libtsan", NULL};
    return prefix_in_list(d9a_basename(path), prefixes);
}

/* Source files of the toolchain and of dependencies (Rust's cargo registry, system headers). */
static bool is_dependency_file(const char *file) {
    return has_prefix(file, "/rustc/") || has_prefix(file, "/usr/") ||
           has_prefix(file, "/rust/deps/") || strstr(file, "/.cargo/") ||
           strstr(file, "/.rustup/") || strstr(file, "/glibc") || strstr(file, "/sysdeps/");
}

/* Names of the C library and of the Rust standard library, for frames without a file. */
static bool is_library_name(const char *symbol) {
    static const char *const exact[] = {
        "start_thread", "clone", "clone3", "syscall", "epoll_wait", "epoll_pwait", "poll",
        "ppoll", "select", "pselect", "read", "write", "readv", "writev", "pread", "pwrite",
        "recv", "recvfrom", "recvmsg", "send", "sendto", "sendmsg", "accept", "accept4",
        "connect", "socket", "open", "open64", "openat", "close", "fsync", "fdatasync",
        "nanosleep", "clock_nanosleep", "usleep", "sleep", "malloc", "free", "calloc", "realloc",
        "memcpy", "memmove", "memset", "strlen", "futex", "sched_yield", "mmap", "munmap",
        "pthread_mutex_lock", "pthread_mutex_unlock", "pthread_cond_wait",
        "pthread_cond_timedwait", "pthread_cond_signal", "pthread_join", "pthread_once", NULL};
    static const char *const prefixes[] = {"_", "core::", "std::", "alloc::", "<core::",
                                           "<std::", "<alloc::", NULL};
    return in_list(symbol, exact) || prefix_in_list(symbol, prefixes);
}

bool d9a_is_app_frame(const d9a_frame *f) {
    if (f->kernel || !f->symbol) return false;
    if (f->object && is_system_object(f->object)) return false;
    if (f->file && f->file[0]) return !is_dependency_file(f->file);
    return !is_library_name(f->symbol);
}
