/* `dial9 fold` (fold.h): identities of the inputs, each segment into the output, then the
 * output renamed in, or nothing on any failure. */
#include "fold/fold.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format/decoder.h"

#include "fold/output.h"
#include "fold/segment.h"

static uint64_t mix(uint64_t h, const void *p, size_t n) {
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return (h ^ 0xff) * 0x100000001b3ull; /* a separator: ("ab", "c") is not ("a", "bc") */
}

static bool keep_metadata(const d9_dec_schema *sc, void *ctx) {
    (void)ctx;
    return sc->bind.role == D9_SCH_SEGMENT_METADATA;
}

/* The hash of run_id, boot_id and host of the segment's metadata; false without a run_id. */
static bool run_identity(const char *path, uint64_t *h) {
    char err[256];
    d9_decoder *d = d9_dec_open_path(path, NULL, err, sizeof err);
    if (!d) return false;
    d9_dec_set_scan(d, &(d9_dec_scan){.keep = keep_metadata, .skip_plans = true});
    d9_event ev;
    bool found = false;
    if (d9_dec_next(d, &ev) > 0 && ev.schema->bind.field[D9_KF_ENTRIES] >= 0) {
        const d9_value *v = &ev.values[ev.schema->bind.field[D9_KF_ENTRIES]];
        d9_dec_str run = {0}, boot = {"", 0}, host = {"", 0};
        for (uint32_t i = 0; v->present && v->type == D9_FT_STRING_MAP && i < v->map.count; i++) {
            const d9_dec_kv *kv = &v->map.items[i];
#define IS(k) (kv->key.len == sizeof k - 1 && memcmp(kv->key.ptr, k, sizeof k - 1) == 0)
            if (IS("run_id")) run = kv->value;
            else if (IS("boot_id")) boot = kv->value;
            else if (IS("host")) host = kv->value;
#undef IS
        }
        if (run.len) {
            found = true;
            *h = mix(mix(mix(0xcbf29ce484222325ull, run.ptr, run.len), boot.ptr, boot.len), host.ptr, host.len);
        }
    }
    d9_dec_close(d);
    return found;
}

int d9f_segment_id(const char *path, char *out, size_t len, uint64_t *size) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    uint64_t h;
    if (run_identity(path, &h)) {
        struct stat st;
        int rc = fstat(fd, &st);
        close(fd);
        if (rc != 0) return -1;
        const char *base = strrchr(path, '/');
        base = base ? base + 1 : path;
        size_t n = strlen(base);
        if (n > 3 && strcmp(base + n - 3, ".gz") == 0) n -= 3;
        else if (n > 4 && strcmp(base + n - 4, ".zst") == 0) n -= 4;
        snprintf(out, len, "r%016" PRIx64, mix(h, base, n));
        *size = (uint64_t)st.st_size;
        return 0;
    }
    static __thread uint8_t buf[1 << 16];
    uint64_t total = 0;
    h = 0x9e3779b97f4a7c15ull;
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) {
        ssize_t i = 0;
        for (; i + 8 <= n; i += 8) {
            uint64_t x;
            memcpy(&x, buf + i, 8);
            h = (h ^ x) * 0xff51afd7ed558ccdull;
            h ^= h >> 31;
        }
        for (; i < n; i++) h = (h ^ buf[i]) * 0x100000001b3ull;
        total += (uint64_t)n;
    }
    int e = errno;
    close(fd);
    if (n < 0) {
        errno = e;
        return -1;
    }
    snprintf(out, len, "c%016" PRIx64 "-%" PRIu64, h, total);
    *size = total;
    return 0;
}

int d9f_fold(char *const *paths, size_t n, const char *dir, const pq_options *opt, FILE *log,
             FILE *info, d9f_result *res, char *err, size_t errlen) {
    *res = (d9f_result){0};
    char **ids = calloc(n ? n : 1, sizeof *ids);
    uint64_t *sizes = calloc(n ? n : 1, sizeof *sizes);
    size_t failed = 0;
    const char *first_bad = NULL;
    char first_why[600] = "";
    if (!ids || !sizes) {
        free(ids);
        free(sizes);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        char id[64];
        size_t plen = strlen(paths[i]);
        if (plen > 7 && strcmp(paths[i] + plen - 7, ".active") == 0) {
            /* still being written: folded now, its rows would stop where the writer is */
            fprintf(log, "dial9 fold: %s: still being written (.active): not folded; fold it once sealed\n",
                    paths[i]);
            ids[i] = NULL;
            continue;
        }
        if (d9f_segment_id(paths[i], id, sizeof id, &sizes[i]) != 0) {
            fprintf(log, "dial9 fold: %s: %s\n", paths[i], strerror(errno));
            if (!failed++) first_bad = paths[i], snprintf(first_why, sizeof first_why, "%s", strerror(errno));
            ids[i] = strdup("");
        } else {
            ids[i] = strdup(id);
        }
        if (!ids[i]) failed++;
    }
    d9f_output *out = NULL;
    if (!failed) out = d9f_output_open(dir, ids, n, opt, err, errlen);
    int rc = failed || !out ? -1 : 0;
    for (size_t i = 0; i < n && out; i++) {
        /* the same segment twice in the input (a copy, another path): folded once */
        if (!ids[i]) continue; /* .active */
        bool dup = false;
        for (size_t j = 0; j < i && !dup; j++) dup = ids[j] && strcmp(ids[i], ids[j]) == 0;
        if (dup) continue;
        d9f_segment_stats st;
        char why[512];
        if (d9f_fold_segment(out, paths[i], ids[i], sizes[i], &st, why, sizeof why) != 0) {
            fprintf(log, "dial9 fold: %s: %s\n", paths[i], why);
            if (!failed++) first_bad = paths[i], snprintf(first_why, sizeof first_why, "%.511s", why);
            continue; /* the others are still read: every bad segment is named */
        }
        res->segments++;
        res->events += st.events;
        res->polls += st.polls;
        if (st.truncated) {
            res->truncated++;
            fprintf(log, "dial9 fold: %s: a torn tail (the last frame cut short): every complete event folded\n",
                    paths[i]);
        }
    }
    if (failed && first_bad) {
        snprintf(err, errlen, "%zu of %zu segment(s) could not be folded (first: %s: %s); nothing was written",
                 failed, n, first_bad, first_why);
        rc = -1;
    }
    if (out && rc == 0) {
        rc = d9f_output_commit(out, info, &res->files_written, &res->partitions_unchanged, &res->rows,
                               err, errlen);
    } else if (out) {
        d9f_output_abort(out);
    }
    for (size_t i = 0; i < n; i++) free(ids[i]);
    free(ids);
    free(sizes);
    return rc;
}
