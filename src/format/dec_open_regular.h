/* Opening a trace file for reading without ever blocking on it: a FIFO, a device or a socket
 * given as a trace path would make open() or read() wait forever (a FIFO until a writer comes)
 * or have side effects (a tape device rewinds). Only regular files are trace files. */
#ifndef D9_FORMAT_DEC_OPEN_REGULAR_H
#define D9_FORMAT_DEC_OPEN_REGULAR_H

#include <stddef.h>
#include <sys/types.h>

/* "a FIFO", "a directory", "a character device", ... for the message. */
const char *d9_file_kind_name(mode_t mode);

/* open(path, flags | O_CLOEXEC) of a regular file, in blocking mode once open. Anything else
 * is refused before it is opened (stat) and again after (fstat of what was opened with
 * O_NONBLOCK, so a swap in between cannot make it block). -1 with "PATH: why" in err. */
int d9_open_regular(const char *path, int flags, char *err, size_t errlen);

#endif
