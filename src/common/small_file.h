/* A small text file of the kernel's (/proc, /sys) read whole with open and read: no stdio
 * stream, no buffer to allocate. Each fopen costs a FILE, a buffer and an fstat, which is
 * much of what a short program pays for the few such files the recorder reads at its start. */
#ifndef D9_COMMON_SMALL_FILE_H
#define D9_COMMON_SMALL_FILE_H

#include <stddef.h>
#include <sys/types.h>

/* Up to size - 1 bytes of `path` into buf, NUL-terminated: the length, or -1 (buf = "") when
 * it cannot be opened or read. */
ssize_t d9_read_small_file(const char *path, char *buf, size_t size);

#endif
