/* The trace directory's ledger of settled runs (see run_ledger.h). One line per run:
 *
 *   r NAME DIR_MTIME_NS COUNT SEQ.KIND.SIZE.MTIME_NS ...\n
 *
 * numbers in decimal (the mtimes may be negative), COUNT file fields after it; and one line per
 * scan that checked every run:
 *
 *   v SCAN_START_NS\n */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "sinks/run_ledger.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/segment_name.h"

#define MAX_FILES_PER_LINE 100000u

/* ------------------------------------------------------------------ parsing */

typedef struct cursor {
    const char *p, *end;
} cursor;

static bool take_char(cursor *c, char ch) {
    if (c->p >= c->end || *c->p != ch) return false;
    c->p++;
    return true;
}

static bool take_u64(cursor *c, uint64_t *out) {
    uint64_t v = 0;
    const char *start = c->p;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
        unsigned d = (unsigned)(*c->p - '0');
        if (v > (UINT64_MAX - d) / 10) return false;
        v = v * 10 + d;
        c->p++;
    }
    *out = v;
    return c->p > start && c->p - start <= 20;
}

static bool take_i64(cursor *c, int64_t *out) {
    bool neg = take_char(c, '-');
    uint64_t v;
    if (!take_u64(c, &v) || v > (uint64_t)INT64_MAX) return false;
    *out = neg ? -(int64_t)v : (int64_t)v;
    return true;
}

bool d9_ledger_name_ok(const char *name) {
    if (!name[0] || !strcmp(name, ".") || !strcmp(name, "..") || strlen(name) > 255) return false;
    for (const unsigned char *s = (const unsigned char *)name; *s; s++)
        if (*s <= ' ' || *s == 0x7f || *s == '/') return false;
    return true;
}

/* One line (without its '\n') into r; false when it is not a good line. */
static bool parse_line(cursor c, d9_ledger_run *r) {
    memset(r, 0, sizeof *r);
    if (!take_char(&c, 'r') || !take_char(&c, ' ')) return false;
    const char *name = c.p;
    while (c.p < c.end && *c.p != ' ') c.p++;
    size_t name_len = (size_t)(c.p - name);
    uint64_t count;
    if (!take_char(&c, ' ') || !take_i64(&c, &r->dir_mtime_ns) || !take_char(&c, ' ') || !take_u64(&c, &count) ||
        count > MAX_FILES_PER_LINE)
        return false;
    r->name = strndup(name, name_len);
    r->files = calloc(count ? count : 1, sizeof *r->files);
    if (!r->name || !r->files || !d9_ledger_name_ok(r->name)) goto bad;
    for (uint64_t i = 0; i < count; i++) {
        d9_ledger_file *f = &r->files[i];
        uint64_t kind;
        if (!take_char(&c, ' ') || !take_u64(&c, &f->seq) || !take_char(&c, '.') || !take_u64(&c, &kind) ||
            kind >= D9_SEGMENT_KINDS || !take_char(&c, '.') || !take_u64(&c, &f->size) || !take_char(&c, '.') ||
            !take_i64(&c, &f->mtime_ns))
            goto bad;
        f->kind = (uint8_t)kind;
    }
    if (c.p != c.end) goto bad;
    r->nfiles = (size_t)count;
    return true;
bad:
    free(r->name);
    free(r->files);
    memset(r, 0, sizeof *r);
    return false;
}

static bool parse_verified(cursor c, int64_t *ns) {
    return take_char(&c, 'v') && take_char(&c, ' ') && take_i64(&c, ns) && *ns > 0 && c.p == c.end;
}

static uint64_t name_hash(const char *name) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) h = (h ^ *p) * 1099511628211ull;
    return h;
}

/* Build the name -> latest line index: a lookup per listed run costs a hash and one strcmp
 * instead of a binary search of strcmps over names that share their long timestamp prefix
 * (with the sort before it, ~7 % of a start at 1 000 runs kept). False when out of memory. */
static bool index_latest(d9_ledger *l) {
    size_t slots = 16;
    while (slots < 2 * l->n) slots *= 2;
    free(l->latest); /* parsed more text into the same ledger */
    l->latest = calloc(slots, sizeof *l->latest);
    if (!l->latest) return false;
    l->latest_mask = slots - 1;
    for (size_t i = 0; i < l->n; i++) {
        size_t k = (size_t)name_hash(l->runs[i].name) & l->latest_mask;
        while (l->latest[k] && strcmp(l->runs[l->latest[k] - 1].name, l->runs[i].name) != 0)
            k = (k + 1) & l->latest_mask;
        l->latest[k] = (uint32_t)(i + 1); /* a later line replaces an earlier one */
    }
    return true;
}

bool d9_ledger_parse(d9_ledger *l, const char *text, size_t len) {
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) break; /* a line being appended, or cut: not a line yet */
        d9_ledger_run r;
        size_t line = l->lines++;
        int64_t verified;
        if (parse_verified((cursor){p, nl}, &verified)) {
            if (verified > l->verified_ns) l->verified_ns = verified; /* appenders may race */
        } else if (parse_line((cursor){p, nl}, &r)) {
            if (l->n == l->cap) {
                size_t cap = l->cap ? l->cap * 2 : 64;
                d9_ledger_run *v = realloc(l->runs, cap * sizeof *v);
                if (!v) {
                    free(r.name);
                    free(r.files);
                    return false;
                }
                l->runs = v;
                l->cap = cap;
            }
            r.line = line;
            l->runs[l->n++] = r;
        }
        p = nl + 1;
    }
    return l->n == 0 || l->n >= UINT32_MAX || index_latest(l);
}

void d9_ledger_read(d9_ledger *l, int dirfd) {
    memset(l, 0, sizeof *l);
    int fd = openat(dirfd, D9_LEDGER_NAME, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st;
    char *text = NULL;
    size_t len = 0;
    bool regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    uint64_t size = regular && st.st_size > 0 ? (uint64_t)st.st_size : 0;
    if (size > 0 && size <= D9_LEDGER_MAX_BYTES && (text = malloc((size_t)size)) != NULL) {
        while (len < size) {
            ssize_t n = read(fd, text + len, (size_t)(size - len));
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            len += (size_t)n;
        }
    }
    close(fd);
    if (text && !d9_ledger_parse(l, text, len)) { /* out of memory: no ledger this time */
        d9_ledger_free(l);
        memset(l, 0, sizeof *l);
    }
    free(text);
    l->file_bytes = size;
    l->oversized = size > D9_LEDGER_MAX_BYTES;
}

static d9_ledger_run *latest_line(d9_ledger *l, const char *name) {
    if (!l->latest) return NULL;
    for (size_t k = (size_t)name_hash(name) & l->latest_mask; l->latest[k]; k = (k + 1) & l->latest_mask) {
        d9_ledger_run *r = &l->runs[l->latest[k] - 1];
        if (strcmp(r->name, name) == 0) return r;
    }
    return NULL;
}

d9_ledger_run *d9_ledger_latest(d9_ledger *l, const char *name) {
    d9_ledger_run *found = latest_line(l, name);
    if (found) found->used = true;
    return found;
}

d9_ledger_run *d9_ledger_find(d9_ledger *l, const char *name, int64_t dir_mtime_ns) {
    d9_ledger_run *found = latest_line(l, name);
    if (!found || found->dir_mtime_ns != dir_mtime_ns) return NULL;
    found->used = true;
    return found;
}

bool d9_ledger_trusted(const d9_ledger *l, int64_t now_ns) {
    return l->verified_ns > 0 && now_ns >= l->verified_ns && now_ns - l->verified_ns < D9_LEDGER_TRUST_NS;
}

void d9_ledger_free(d9_ledger *l) {
    for (size_t i = 0; i < l->n; i++) {
        free(l->runs[i].name);
        free(l->runs[i].files);
    }
    free(l->runs);
    free(l->latest);
    memset(l, 0, sizeof *l);
}

bool d9_ledger_is_leftover(int dirfd, const char *name, int64_t now_ns) {
    static const char prefix[] = D9_LEDGER_NAME ".", suffix[] = ".tmp";
    size_t len = strlen(name);
    if (len <= sizeof prefix - 1 + sizeof suffix - 1 || strncmp(name, prefix, sizeof prefix - 1) != 0 ||
        strcmp(name + len - (sizeof suffix - 1), suffix) != 0)
        return false;
    struct stat st;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
        now_ns - ((int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec) > 60ll * 1000000000)
        (void)unlinkat(dirfd, name, 0);
    return true;
}

/* ------------------------------------------------------------------ writing */

static void out_printf(d9_ledger_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out_printf(d9_ledger_out *o, const char *fmt, ...) {
    if (o->failed) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = o->cap - o->len;
        int n = vsnprintf(o->buf ? o->buf + o->len : NULL, room, fmt, ap);
        va_end(ap);
        if (n < 0) {
            o->failed = true;
            return;
        }
        if ((size_t)n < room) {
            o->len += (size_t)n;
            return;
        }
        size_t cap = o->cap ? o->cap * 2 : 4096;
        while (cap - o->len <= (size_t)n) cap *= 2;
        char *b = realloc(o->buf, cap);
        if (!b) {
            o->failed = true;
            return;
        }
        o->buf = b;
        o->cap = cap;
    }
}

void d9_ledger_add(d9_ledger_out *o, const char *name, int64_t dir_mtime_ns, const d9_ledger_file *files,
                   size_t n) {
    if (!d9_ledger_name_ok(name) || n > MAX_FILES_PER_LINE) return;
    out_printf(o, "r %s %" PRId64 " %zu", name, dir_mtime_ns, n);
    for (size_t i = 0; i < n; i++)
        out_printf(o, " %" PRIu64 ".%u.%" PRIu64 ".%" PRId64, files[i].seq, (unsigned)files[i].kind, files[i].size,
                   files[i].mtime_ns);
    out_printf(o, "\n");
    o->runs++;
}

void d9_ledger_add_verified(d9_ledger_out *o, int64_t scan_start_ns) {
    if (scan_start_ns > 0) out_printf(o, "v %" PRId64 "\n", scan_start_ns);
}

static bool write_all(int fd, const char *buf, size_t len) {
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        buf += n;
        len -= (size_t)n;
    }
    return true;
}

/* The size of the open file fd (with other writers' appends), or `otherwise`. */
static uint64_t size_of(int fd, uint64_t otherwise) {
    struct stat st;
    return fstat(fd, &st) == 0 && st.st_size >= 0 ? (uint64_t)st.st_size : otherwise;
}

uint64_t d9_ledger_write(int dirfd, const d9_ledger *l, d9_ledger_out *o, bool rewrite) {
    uint64_t size = l ? l->file_bytes : 0;
    if (rewrite && l) {
        d9_ledger_out all = {0};
        for (size_t i = 0; i < l->n; i++)
            if (l->runs[i].used)
                d9_ledger_add(&all, l->runs[i].name, l->runs[i].dir_mtime_ns, l->runs[i].files, l->runs[i].nfiles);
        if (o->len) out_printf(&all, "%.*s", (int)o->len, o->buf);
        char tmp[64];
        snprintf(tmp, sizeof tmp, D9_LEDGER_NAME ".%d.tmp", (int)getpid());
        int fd = all.failed ? -1 : openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd >= 0) {
            bool ok = write_all(fd, all.buf ? all.buf : "", all.len);
            ok = close(fd) == 0 && ok;
            /* lines appended meanwhile by others are lost: their runs are only scanned again */
            if (!ok || renameat(dirfd, tmp, dirfd, D9_LEDGER_NAME) != 0) (void)unlinkat(dirfd, tmp, 0);
            else size = all.len; /* exactly what was written */
        }
        free(all.buf);
    } else if (o->len && !o->failed) {
        int fd = openat(dirfd, D9_LEDGER_NAME, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd >= 0) {
            /* one write: concurrent appenders' lines do not interleave on a local file system
             * (a line cut by a full disk is skipped by readers) */
            (void)write_all(fd, o->buf, o->len);
            size = size_of(fd, size + o->len);
            close(fd);
        }
    }
    free(o->buf);
    memset(o, 0, sizeof *o);
    return size;
}
