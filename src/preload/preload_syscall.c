/* glibc's syscall(), interposed for the io_uring system calls a program makes without
 * liburing (preload_uring_raw.c). Every other number goes on to glibc with its six
 * arguments unchanged, after one compare: syscall() is variadic, and a caller that passes
 * fewer leaves the rest as whatever its registers and stack slots hold, which glibc's own
 * syscall() passes to the kernel too. The shim's own calls never come here (--wrap=syscall,
 * preload_fds.c). */
#include <stdarg.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload.h"
#include "preload_uring_cq.h"

/* io_uring_setup, io_uring_enter, io_uring_register: three numbers in a row (425..427) */
_Static_assert(SYS_io_uring_enter == SYS_io_uring_setup + 1 &&
                   SYS_io_uring_register == SYS_io_uring_setup + 2,
               "the io_uring system calls are consecutive");

D9P_EXPORT long syscall(long number, ...) {
    va_list ap;
    va_start(ap, number);
    long a[6];
    for (int i = 0; i < 6; i++) a[i] = va_arg(ap, long);
    va_end(ap);
    if (__builtin_expect((unsigned long)(number - SYS_io_uring_setup) <= 2, 0))
        return d9p_uring_syscall(number, a, __builtin_return_address(0));
    return D9P_NEXT(syscall)(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}
