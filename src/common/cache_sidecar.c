/* The key sidecar of a cached S3 object (cache_sidecar.h). */
#include "common/cache_sidecar.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* A key is at most 1024 bytes in S3: anything longer is no sidecar of ours. */
#define KEY_MAX 2048

bool d9_cache_sidecar_path(const char *path, char *out, size_t len) {
    const char *slash = strrchr(path, '/');
    size_t dl = slash ? (size_t)(slash - path + 1) : 0;
    return snprintf(out, len, "%.*s.%s.key", (int)dl, path, path + dl) < (int)len;
}

bool d9_cache_is_sidecar(const char *path) {
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    size_t n = strlen(base);
    return base[0] == '.' && n > 5 && !strcmp(base + n - 4, ".key");
}

bool d9_cache_sidecar_names(int fd, const char *key) {
    if (fd < 0) return false;
    char have[KEY_MAX];
    size_t kl = strlen(key);
    ssize_t n = kl < sizeof have ? read(fd, have, sizeof have) : -1;
    close(fd);
    return n == (ssize_t)kl && memcmp(have, key, kl) == 0;
}

int d9_cache_sidecar_write(const char *path, const char *key, char *err, size_t errlen) {
    char side[2 * PATH_MAX + 16], tmp[2 * PATH_MAX + 32];
    if (!d9_cache_sidecar_path(path, side, sizeof side)) {
        snprintf(err, errlen, "%s: path too long", path);
        return -1;
    }
    snprintf(tmp, sizeof tmp, "%s.part", side);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    size_t kl = strlen(key);
    bool ok = fd >= 0 && write(fd, key, kl) == (ssize_t)kl;
    if (fd >= 0 && close(fd) != 0) ok = false;
    if (ok && rename(tmp, side) == 0) return 0;
    snprintf(err, errlen, "%s: %s", side, strerror(errno));
    unlink(tmp);
    return -1;
}
