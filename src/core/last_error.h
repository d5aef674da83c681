/* d9_last_error(): a per-thread message of the last failure. */
#ifndef D9_CORE_LAST_ERROR_H
#define D9_CORE_LAST_ERROR_H

void d9_set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
