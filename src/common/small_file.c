#include "common/small_file.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

ssize_t d9_read_small_file(const char *path, char *buf, size_t size) {
    if (size == 0) return -1;
    buf[0] = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    size_t len = 0;
    while (len < size - 1) {
        ssize_t n = read(fd, buf + len, size - 1 - len);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            close(fd);
            buf[0] = 0;
            return -1;
        }
        if (n == 0) break;
        len += (size_t)n;
    }
    close(fd);
    buf[len] = 0;
    return (ssize_t)len;
}
