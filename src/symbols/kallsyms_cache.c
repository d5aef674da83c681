#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "symbols/kallsyms_cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define CACHE_PREFIX "kallsyms-"
#define MAX_CACHE_BYTES (64u << 20) /* ~4.5 MB for 120 k symbols: anything far larger is not ours */
#define VISIBLE_SCAN_BYTES (256u << 10)

void d9_kallsyms_cache_dir(char *out, size_t len) {
    const char *run = getenv("XDG_RUNTIME_DIR"), *tmp = getenv("TMPDIR");
    int n = run && run[0] == '/' ? snprintf(out, len, "%s/dial9", run)
                                 : snprintf(out, len, "%s/dial9-%u", tmp && tmp[0] == '/' ? tmp : "/tmp",
                                            (unsigned)geteuid());
    if (n < 0 || (size_t)n >= len) out[0] = 0;
}

/* A boot id names a file: only what /proc gives (hex digits and dashes). */
static bool boot_id_ok(const char *id) {
    size_t n = strlen(id);
    if (n == 0 || n > 64) return false;
    for (size_t i = 0; i < n; i++)
        if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f') || id[i] == '-')) return false;
    return true;
}

/* The directory is a real one, this user's, closed to everyone else. */
static bool own_dir(const char *dir) {
    struct stat st;
    return lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() && (st.st_mode & 077) == 0;
}

static bool file_path(char *out, size_t len, const char *dir, const char *boot_id) {
    int n = snprintf(out, len, "%s/" CACHE_PREFIX "%s", dir, boot_id);
    return n > 0 && (size_t)n < len;
}

/* Whether /proc/kallsyms shows this process real addresses now: the first text symbol's is
 * not zero (the per-CPU symbols before it are at 0 even when addresses show). */
static bool kallsyms_visible(void) {
    int fd = open("/proc/kallsyms", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    char buf[4096 + 1];
    size_t have = 0, seen = 0;
    int verdict = -1;
    while (verdict < 0 && seen < VISIBLE_SCAN_BYTES) {
        ssize_t r = read(fd, buf + have, sizeof buf - 1 - have);
        if (r <= 0) break;
        have += (size_t)r;
        seen += (size_t)r;
        buf[have] = 0;
        char *line = buf, *nl;
        while (verdict < 0 && (nl = strchr(line, '\n')) != NULL) {
            char *end;
            unsigned long long addr = strtoull(line, &end, 16);
            if (end > line && end[0] == ' ' && (end[1] == 't' || end[1] == 'T') && end[2] == ' ') verdict = addr != 0;
            line = nl + 1;
        }
        have -= (size_t)(line - buf); /* keep a partial line for the next read */
        memmove(buf, line, have);
        if (have == sizeof buf - 1) have = 0; /* a line longer than the buffer: not a symbol line */
    }
    close(fd);
    return verdict == 1;
}

d9_kallsyms *d9_kallsyms_cache_read(const char *dir, const char *boot_id, char *err, size_t errlen) {
    char path[PATH_MAX];
    if (!dir || !dir[0] || !boot_id_ok(boot_id) || !file_path(path, sizeof path, dir, boot_id)) {
        snprintf(err, errlen, "no kallsyms cache (no directory or boot id)");
        return NULL;
    }
    if (!own_dir(dir)) {
        snprintf(err, errlen, "%s: not a directory of this user's alone", dir);
        return NULL;
    }
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    d9_kallsyms *k = NULL;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || st.st_size <= 0 ||
        (uint64_t)st.st_size > MAX_CACHE_BYTES) {
        snprintf(err, errlen, "%s: not a cache file of this user's", path);
        close(fd);
        return NULL;
    }
    /* Checked after the file (a miss costs nothing more), before trusting it: the cache must
     * not show addresses that /proc/kallsyms would hide from this process now. */
    if (!kallsyms_visible()) {
        snprintf(err, errlen, "/proc/kallsyms shows no addresses (kernel.kptr_restrict)");
        close(fd);
        return NULL;
    }
    /* Used in place, its pages mapped in one call: a copy, or a fault per page, costs more
     * than the rest of the load on a virtual machine. Files are replaced by rename, never
     * changed, so the mapping stays what was checked. */
    size_t size = (size_t)st.st_size;
    void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) {
        snprintf(err, errlen, "%s: mmap: %s", path, strerror(errno));
        return NULL;
    }
    k = d9_kallsyms_from_bytes(map, size, true, err, errlen);
    if (!k) munmap(map, size);
    return k;
}

/* Files of other boots (each boot needs one), and files a writer left half-written when it was
 * killed (a writer at work now loses its rename: it only fails to write the cache). */
static void remove_others(const char *dir, const char *keep) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        bool other = strncmp(e->d_name, CACHE_PREFIX, sizeof CACHE_PREFIX - 1) == 0 && strcmp(e->d_name, keep) != 0;
        bool partial = strncmp(e->d_name, "." CACHE_PREFIX, sizeof CACHE_PREFIX) == 0;
        if (other || partial) (void)unlinkat(dirfd(d), e->d_name, 0);
    }
    closedir(d);
}

bool d9_kallsyms_cache_write(const char *dir, const char *boot_id, const d9_kallsyms *full) {
    char path[PATH_MAX], tmp[PATH_MAX];
    if (!dir || !dir[0] || !boot_id_ok(boot_id) || !file_path(path, sizeof path, dir, boot_id)) return false;
    int n = snprintf(tmp, sizeof tmp, "%s/." CACHE_PREFIX "XXXXXX", dir);
    if (n < 0 || (size_t)n >= sizeof tmp) return false;
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) return false;
    if (!own_dir(dir)) return false;
    d9_kallsyms *part = d9_kallsyms_image_part(full);
    size_t len = 0;
    void *bytes = part ? d9_kallsyms_serialize(part, &len) : NULL;
    d9_kallsyms_free(part);
    if (!bytes) return false;
    int fd = mkostemp(tmp, O_CLOEXEC); /* 0600 */
    bool ok = fd >= 0;
    for (size_t done = 0; ok && done < len;) {
        ssize_t w = write(fd, (const char *)bytes + done, len - done);
        if (w < 0 && errno == EINTR) continue;
        ok = w > 0;
        if (ok) done += (size_t)w;
    }
    free(bytes);
    if (fd >= 0 && close(fd) != 0) ok = false;
    if (ok) ok = rename(tmp, path) == 0; /* readers see the whole file or none */
    if (!ok) {
        if (fd >= 0) (void)unlink(tmp);
        return false;
    }
    remove_others(dir, path + strlen(dir) + 1);
    return true;
}
