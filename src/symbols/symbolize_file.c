#include "symbols/symbolize_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/host_boot_id.h"
#include "symbols/trace_scan.h"

static int by_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Addresses to resolve, sorted (so the output does not depend on hash order). */
static uint64_t *wanted(const d9_sym_input *in, bool all, size_t *n, d9_symbolize_stats *st) {
    uint64_t *list = malloc((in->addrs.count ? in->addrs.count : 1) * sizeof *list);
    if (!list) return NULL;
    size_t k = 0;
    uint64_t addr, flags;
    for (size_t pos = 0; d9_u64_map_next(&in->addrs, &pos, &addr, &flags);) {
        if (!(flags & (D9_ADDR_RETURN | D9_ADDR_EXACT))) continue;
        if ((flags & D9_ADDR_NAMED) && !all) {
            st->skipped++;
            continue;
        }
        list[k++] = addr;
    }
    qsort(list, k, sizeof *list, by_u64);
    *n = k;
    return list;
}

bool d9_symbolize_input(d9_symbolizer *sym, const d9_sym_input *in, bool all, d9_symbol_stream *out,
                        d9_symbolize_stats *st) {
    size_t n;
    uint64_t *list = wanted(in, all, &n, st);
    if (!list || !d9_symbolizer_set_maps(sym, in->maps, in->map_count)) {
        free(list);
        return false;
    }
    char boot[64];
    d9_host_boot_id(boot, sizeof boot);
    /* Kernel addresses are this boot's only if the trace says it is this boot. */
    d9_symbolizer_use_kallsyms(sym, boot[0] && strcmp(boot, in->boot_id) == 0);
    d9_sym_result *r = malloc(sizeof *r);
    if (!r) {
        free(list);
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t *flags = d9_u64_map_get(&in->addrs, list[i]);
        uint64_t f = flags ? *flags : D9_ADDR_RETURN;
        d9_symbolizer_resolve(sym, list[i], f, r);
        if ((f & D9_ADDR_FALLBACK) && !r->named && !all) {
            st->skipped++; /* still no better name than the one the file has */
            continue;
        }
        if (!d9_symbol_stream_add(out, list[i], r)) {
            st->no_room++; /* `dial9 symbolize -o` can still name it in a copy */
            continue;
        }
        st->addresses++;
        if (r->named) st->named++;
        else st->fallback++;
    }
    free(r);
    free(list);
    return true;
}

int d9_append_stream(int fd, const void *data, size_t len, uint64_t old_size) {
    size_t done = 0;
    while (done < len) {
        ssize_t w = write(fd, (const char *)data + done, len - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            int e = w < 0 ? errno : EIO;
            if (ftruncate(fd, (off_t)old_size) != 0) { /* nothing more we can do */ }
            return -e;
        }
        done += (size_t)w;
    }
    return 0;
}

/* A file grown in place leaves its directory's mtime as it was: touch it, so that a listing
 * that wrote down the directory's files with their sizes (sinks/run_ledger.h) reads them again. */
static void touch_directory_of(int dir_fd, const char *path) {
    const char *slash = strrchr(path, '/');
    char dir[PATH_MAX];
    if (!slash && dir_fd != AT_FDCWD) {
        (void)futimens(dir_fd, NULL); /* the run directory's handle itself */
        return;
    }
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if ((size_t)(slash - path) < sizeof dir) snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    else return;
    (void)utimensat(dir_fd, dir[0] ? dir : "/", NULL, 0); /* not ours to touch: the listing may miss the growth */
}

bool d9_symbolize_check_given;

/* The file's own list of what to symbolize: read from its bytes (mapped for the scan). */
static bool scan_file(int fd, size_t size, const char *path, d9_sym_input *in, char *err, size_t errlen) {
    void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
        snprintf(err, errlen, "%s: mmap: %s", path, strerror(errno));
        return false;
    }
    d9_scan_result res;
    d9_trace_scan(map, size, in, &res);
    munmap(map, size);
    if (res.status != D9_SCAN_END) {
        /* Appending after a partial frame would hide our stream from readers. */
        snprintf(err, errlen, "%s: not symbolized: %s", path, res.message);
        return false;
    }
    return true;
}

int d9_symbolize_file_in_place(d9_symbolizer *sym, int dir_fd, const char *path, const d9_sym_input *given,
                               uint64_t max_size, uint64_t max_growth, d9_symbolize_stats *st,
                               bool (*stop)(void *ctx), void *stop_ctx, char *err, size_t errlen) {
    memset(st, 0, sizeof *st);
    /* Never through a link, and only a regular file (a FIFO would block the open): the file
     * of the run, reached through its directory's handle (sinks/trace_dir.h). */
    int fd = openat(dir_fd, path, O_RDWR | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat reg;
    if (fd < 0 || fstat(fd, &reg) != 0 || !S_ISREG(reg.st_mode)) {
        snprintf(err, errlen, "%s: %s", path, fd < 0 ? strerror(errno) : "not a regular file");
        if (fd >= 0) close(fd);
        return -1;
    }
    int rc = -1;
    struct stat sb;
    d9_sym_input in;
    d9_sym_input_init(&in);
    d9_symbol_stream *out = NULL;
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        snprintf(err, errlen, "%s: in use by another process", path);
        goto done;
    }
    if (fstat(fd, &sb) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        goto done;
    }
    if (sb.st_size == 0) {
        rc = 0;
        goto done;
    }
    if (given && !given->oom) {
        st->from_writer = true;
        if (d9_symbolize_check_given) {
            if (!scan_file(fd, (size_t)sb.st_size, path, &in, err, errlen)) goto done;
            st->given_short = !d9_sym_input_covers(given, &in);
        }
    } else {
        given = NULL;
        if (!scan_file(fd, (size_t)sb.st_size, path, &in, err, errlen)) goto done;
    }
    const d9_sym_input *want = given ? given : &in;
    if (stop && stop(stop_ctx)) {
        snprintf(err, errlen, "%s: not symbolized: stopping", path);
        goto done;
    }
    if (want->addrs.count == 0 && !want->oom) { /* no stack in it (a short program's): nothing to name */
        rc = 0;
        goto done;
    }
    out = d9_symbol_stream_new();
    if (out && (max_size || max_growth)) {
        uint64_t size = (uint64_t)sb.st_size, limit = max_growth ? max_growth : UINT64_MAX;
        uint64_t left = max_size > size ? max_size - size : 0;
        if (max_size && left < limit) limit = left;
        d9_symbol_stream_set_limit(out, limit);
    }
    if (!out || !d9_symbolize_input(sym, want, false, out, st)) {
        snprintf(err, errlen, "%s: out of memory", path);
        goto done;
    }
    if (stop && stop(stop_ctx)) {
        snprintf(err, errlen, "%s: not symbolized: stopping", path);
        goto done;
    }
    size_t len;
    const uint8_t *bytes = d9_symbol_stream_bytes(out, &len, &st->entries);
    if (!bytes) {
        snprintf(err, errlen, "%s: out of memory", path);
        goto done;
    }
    struct stat now;
    if (fstat(fd, &now) != 0 || now.st_dev != sb.st_dev || now.st_ino != sb.st_ino) {
        /* The program closed our fd meanwhile (and may have reused the number): never write
         * to it or close it. The file stays unsymbolized. */
        snprintf(err, errlen, "%s: not symbolized: its fd was closed behind our back", path);
        fd = -1;
        goto done;
    }
    if (len > 0) {
        int e = d9_append_stream(fd, bytes, len, (uint64_t)sb.st_size);
        if (e != 0) {
            snprintf(err, errlen, "%s: append: %s", path, strerror(-e));
            goto done;
        }
        st->bytes = len;
        touch_directory_of(dir_fd, path);
    }
    rc = 0;
done:
    d9_symbol_stream_free(out);
    d9_sym_input_free(&in);
    if (fd >= 0) close(fd);
    return rc;
}
