/* glibc's syscall(), interposed for the io_uring system calls a program makes without
 * liburing (preload_uring_raw.c). Every other number goes on to glibc with its arguments
 * unchanged after one compare.
 *
 * syscall() is variadic, but on the ABIs Linux uses (x86-64 SysV, AArch64, ...) a variadic
 * call passes its integer arguments where a call with fixed arguments does: the interposer
 * takes the number and six arguments as fixed ones, so its fast path is a compare and a jump
 * into glibc, with no va_list spilled (~45 instructions with one, at -O2 with frame pointers).
 * A caller that passes fewer than six leaves the rest as whatever its registers and stack slot
 * hold, which glibc's own syscall() passes to the kernel too. The C name differs from
 * <unistd.h>'s variadic declaration; the symbol is "syscall". The shim's own calls never come
 * here (--wrap=syscall, preload_fds.c). */
#include <sys/syscall.h>

#include "preload.h"
#include "preload_uring_cq.h"

#if !defined(__x86_64__) && !defined(__aarch64__) && !defined(__riscv) && !defined(__i386__)
#error "syscall()'s variadic arguments are read as fixed ones: check this ABI first"
#endif

/* io_uring_setup, io_uring_enter, io_uring_register: three numbers in a row (425..427) */
_Static_assert(SYS_io_uring_enter == SYS_io_uring_setup + 1 &&
                   SYS_io_uring_register == SYS_io_uring_setup + 2,
               "the io_uring system calls are consecutive");

typedef long glibc_syscall(long number, ...);
long d9p_syscall_fixed(long number, long a1, long a2, long a3, long a4, long a5, long a6)
    __asm__("syscall");

static __attribute__((noinline)) long io_uring_call(long number, long a1, long a2, long a3,
                                                    long a4, long a5, long a6,
                                                    const void *caller) {
    const long a[6] = {a1, a2, a3, a4, a5, a6};
    return d9p_uring_syscall(number, a, caller);
}

static glibc_syscall *_Atomic g_next;

static __attribute__((noinline)) glibc_syscall *next_syscall(void) {
    return (glibc_syscall *)d9p_next_symbol((void *_Atomic *)&g_next, "syscall");
}

D9P_EXPORT long d9p_syscall_fixed(long number, long a1, long a2, long a3, long a4, long a5,
                                  long a6) {
    if (__builtin_expect((unsigned long)(number - SYS_io_uring_setup) <= 2, 0))
        return io_uring_call(number, a1, a2, a3, a4, a5, a6, __builtin_return_address(0));
    glibc_syscall *next = atomic_load_explicit(&g_next, memory_order_relaxed);
    if (__builtin_expect(!next, 0)) next = next_syscall();
    return next(number, a1, a2, a3, a4, a5, a6);
}
