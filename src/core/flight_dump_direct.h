/* A memory-mode dump's segment bytes written past the page cache (flight_dump_direct.c). */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* Write len bytes at data to fd (a new, empty file opened for writing, without O_DIRECT), from
 * its start: the page-aligned body with O_DIRECT when data is page-aligned and the filesystem
 * takes it, the rest (and everything otherwise) by plain writes. 0, or -errno. */
int d9_dump_write_bytes(int fd, const uint8_t *data, size_t len);
/* All of len bytes with plain write(2)s (EINTR retried): 0, or -errno (-EIO for a 0 write). */
int d9_dump_write_plain(int fd, const void *data, size_t len);
