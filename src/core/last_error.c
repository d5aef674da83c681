#include "core/last_error.h"

#include <stdarg.h>
#include <stdio.h>

#include "dial9/dial9.h"

static __thread char tls_error[512];

void d9_set_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tls_error, sizeof tls_error, fmt, ap);
    va_end(ap);
}

const char *d9_last_error(void) { return tls_error[0] ? tls_error : "no error"; }
