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
/* Zero bytes after each text the ledger keeps: a word read at any byte of it stays inside. */
#define TEXT_SLACK 8

struct d9_ledger_text {
    d9_ledger_text *next;
    char bytes[]; /* the text, then TEXT_SLACK zero bytes */
};

/* ------------------------------------------------------------------ parsing */

/* A line parsed word-wise rather than byte by byte: at 1 000 runs kept the ledger's parse was
 * a large part of every start (~80 KB of text). */

#define BYTES_OF(b) (0x0101010101010101ull * (uint8_t)(b)) /* the byte b in each lane */
#define HIGH_BITS BYTES_OF(0x80)

/* Eight bytes with p[0] in the low lane, whatever the byte order. */
static inline uint64_t load_word(const char *p) {
    uint64_t w;
    memcpy(&w, p, sizeof w);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    w = __builtin_bswap64(w);
#endif
    return w;
}

/* Whether every byte of w is '0'..'9': high nibble 3, and a low nibble that 6 does not carry
 * out of (no lane carries into the next once the high nibbles are 3). */
static inline bool all_digits(uint64_t w) {
    return (w & BYTES_OF(0xf0)) == BYTES_OF(0x30) && ((w + BYTES_OF(0x06)) & BYTES_OF(0xf0)) == BYTES_OF(0x30);
}

/* The value of eight digit bytes: neighbouring lanes merged pairwise, 2 digits into 16-bit
 * lanes, 4 into 32-bit ones, then 8 (no lane overflows its width on the way). */
static inline uint64_t eight_digits(uint64_t w) {
    w -= BYTES_OF('0');
    w = (w * 10 + (w >> 8)) & 0x00ff00ff00ff00ffull;
    w = (w * 100 + (w >> 16)) & 0x0000ffff0000ffffull;
    return (w * 10000 + (w >> 32)) & 0xffffffffull;
}

typedef struct cursor {
    char *p, *end; /* end: the line's '\n' */
} cursor;

static bool take_char(cursor *c, char ch) {
    if (c->p >= c->end || *c->p != ch) return false;
    c->p++;
    return true;
}

/* 1 to 20 decimal digits (leading zeros count) whose value fits in 64 bits. */
static bool take_u64(cursor *c, uint64_t *out) {
    char *p = c->p;
    uint64_t v = 0;
    unsigned digits = 0;
    /* two rounds of eight stay under 10^16: nothing to check */
    while (digits < 16 && c->end - p >= 8) {
        uint64_t w = load_word(p);
        if (!all_digits(w)) break;
        v = v * 100000000 + eight_digits(w);
        p += 8;
        digits += 8;
    }
    for (; p < c->end && (unsigned char)(*p - '0') < 10; p++) {
        unsigned d = (unsigned char)(*p - '0');
        /* 19 digits stay under 2^64 (1.8 * 10^19): only the 20th can overflow */
        if (++digits >= 20 &&
            (digits > 20 || v > UINT64_MAX / 10 || (v == UINT64_MAX / 10 && d > UINT64_MAX % 10)))
            return false;
        v = v * 10 + d;
    }
    c->p = p;
    *out = v;
    return digits > 0;
}

static bool take_i64(cursor *c, int64_t *out) {
    bool neg = take_char(c, '-');
    uint64_t v;
    if (!take_u64(c, &v) || v > (uint64_t)INT64_MAX) return false;
    *out = neg ? -(int64_t)v : (int64_t)v;
    return true;
}

static inline bool name_byte_ok(unsigned char b) { return b > ' ' && b != 0x7f && b != '/'; }

/* The high bit of w's lanes that hold a byte a name may not have (name_byte_ok); a borrow may
 * set it in later lanes too, so only the lowest set bit is exact. */
static inline uint64_t bad_name_bytes(uint64_t w) {
    uint64_t below_bang = (w - BYTES_OF('!')) & ~w; /* ~w: not bytes >= 0x80 */
    uint64_t del = w ^ BYTES_OF(0x7f), slash = w ^ BYTES_OF('/');
    del = (del - BYTES_OF(1)) & ~del; /* zero lanes: the DELs */
    slash = (slash - BYTES_OF(1)) & ~slash;
    return (below_bang | del | slash) & HIGH_BITS;
}

/* How many of p's len bytes, from the first, a name may hold. */
static size_t name_span(const char *p, size_t len) {
    size_t i = 0;
    for (; len - i >= 8; i += 8) {
        uint64_t bad = bad_name_bytes(load_word(p + i));
        if (bad) return i + (size_t)__builtin_ctzll(bad) / 8;
    }
    while (i < len && name_byte_ok((unsigned char)p[i])) i++;
    return i;
}

static bool name_length_ok(const char *name, size_t len) {
    return len > 0 && len <= 255 && !(name[0] == '.' && (len == 1 || (len == 2 && name[1] == '.')));
}

bool d9_ledger_name_ok(const char *name) {
    size_t len = strlen(name);
    return name_length_ok(name, len) && name_span(name, len) == len;
}

static inline uint64_t hash_word(uint64_t h, uint64_t w) {
    h = (h ^ w) * 0x9e3779b97f4a7c15ull;
    return h ^ (h >> 32);
}

/* A name's hash, a word at a time. tail_readable: the word holding the name's last bytes may
 * be read whole (a name in a ledger text: its line, then the slack, follow it). */
static inline uint64_t name_hash(const char *name, size_t len, bool tail_readable) {
    uint64_t h = len;
    size_t i = 0;
    for (; len - i >= 8; i += 8) h = hash_word(h, load_word(name + i));
    if (i < len) {
        uint64_t tail;
        if (tail_readable) {
            tail = load_word(name + i) & ((1ull << (8 * (len - i))) - 1);
        } else {
            char word[8] = {0};
            memcpy(word, name + i, len - i);
            tail = load_word(word);
        }
        h = hash_word(h, tail);
    }
    h *= 0xff51afd7ed558ccdull; /* the slot is the low bits: let every byte reach them */
    return h ^ (h >> 29);
}

/* Room for one more file in the pool; false when out of memory. */
static bool reserve_file(d9_ledger *l) {
    if (l->pool_used < l->pool_cap) return true;
    size_t cap = l->pool_cap ? l->pool_cap * 2 : 256;
    d9_ledger_file *pool = realloc(l->file_pool, cap * sizeof *pool);
    if (!pool) return false;
    l->file_pool = pool;
    l->pool_cap = cap;
    return true;
}

/* One line (without its '\n') into r, its files appended to the pool (taken back when the line
 * is bad) and its name cut in place. Returns whether it is a good line; *oom when memory ran out. */
static bool parse_line(d9_ledger *l, cursor c, d9_ledger_run *r, bool *oom) {
    if (!take_char(&c, 'r') || !take_char(&c, ' ')) return false;
    char *name = c.p;
    size_t name_len = name_span(name, (size_t)(c.end - name));
    c.p = name + name_len;
    /* a NUL ends the name (as it ends a C string); the field goes on to the space */
    if (c.p < c.end && *c.p == '\0') {
        char *space = memchr(c.p, ' ', (size_t)(c.end - c.p));
        c.p = space ? space : c.end;
    }
    uint64_t count;
    if (!name_length_ok(name, name_len) || !take_char(&c, ' ') || !take_i64(&c, &r->dir_mtime_ns) ||
        !take_char(&c, ' ') || !take_u64(&c, &count) || count > MAX_FILES_PER_LINE)
        return false;
    r->first_file = l->pool_used;
    for (uint64_t i = 0; i < count; i++) {
        if (!reserve_file(l)) {
            *oom = true;
            goto bad;
        }
        d9_ledger_file *f = &l->file_pool[l->pool_used];
        uint64_t kind;
        if (!take_char(&c, ' ') || !take_u64(&c, &f->seq) || !take_char(&c, '.') || !take_u64(&c, &kind) ||
            kind >= D9_SEGMENT_KINDS || !take_char(&c, '.') || !take_u64(&c, &f->size) || !take_char(&c, '.') ||
            !take_i64(&c, &f->mtime_ns))
            goto bad;
        f->kind = (uint8_t)kind;
        l->pool_used++;
    }
    if (c.p != c.end) goto bad;
    r->nfiles = (size_t)count;
    r->name_hash = name_hash(name, name_len, true);
    name[name_len] = '\0'; /* the ' ' after it, or the NUL that ended it */
    r->name = name;
    r->used = false;
    return true;
bad:
    l->pool_used = r->first_file;
    return false;
}

static bool parse_verified(cursor c, int64_t *ns) {
    return take_char(&c, 'v') && take_char(&c, ' ') && take_i64(&c, ns) && *ns > 0 && c.p == c.end;
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
        const d9_ledger_run *r = &l->runs[i];
        size_t k = (size_t)r->name_hash & l->latest_mask;
        for (; l->latest[k]; k = (k + 1) & l->latest_mask) {
            const d9_ledger_run *o = &l->runs[l->latest[k] - 1];
            if (o->name_hash == r->name_hash && strcmp(o->name, r->name) == 0) break;
        }
        l->latest[k] = (uint32_t)(i + 1); /* a later line replaces an earlier one */
    }
    return true;
}

/* Parse text that the ledger owns (in l->texts, with its slack): names are cut in it. */
static bool parse_owned(d9_ledger *l, char *text, size_t len) {
    char *p = text, *end = text + len;
    while (p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) break; /* a line being appended, or cut: not a line yet */
        size_t line = l->lines++;
        int64_t verified;
        bool oom = false;
        if (*p == 'v') {
            if (parse_verified((cursor){p, nl}, &verified) && verified > l->verified_ns)
                l->verified_ns = verified; /* appenders may race */
        } else if (*p == 'r') {
            if (l->n == l->cap) {
                size_t cap = l->cap ? l->cap * 2 : 64;
                d9_ledger_run *v = realloc(l->runs, cap * sizeof *v);
                if (!v) return false;
                l->runs = v;
                l->cap = cap;
            }
            d9_ledger_run *r = &l->runs[l->n];
            if (parse_line(l, (cursor){p, nl}, r, &oom)) {
                r->line = line;
                l->n++;
            } else if (oom) {
                return false;
            }
        }
        p = nl + 1;
    }
    return l->n == 0 || l->n >= UINT32_MAX || index_latest(l);
}

/* A text of len bytes for l to keep (its slack zeroed by the caller), or NULL. */
static d9_ledger_text *new_text(d9_ledger *l, size_t len) {
    if (len > SIZE_MAX - sizeof(d9_ledger_text) - TEXT_SLACK) return NULL;
    d9_ledger_text *t = malloc(sizeof *t + len + TEXT_SLACK);
    if (!t) return NULL;
    t->next = l->texts;
    l->texts = t;
    return t;
}

bool d9_ledger_parse(d9_ledger *l, const char *text, size_t len) {
    d9_ledger_text *t = new_text(l, len);
    if (!t) return false;
    if (len) memcpy(t->bytes, text, len);
    memset(t->bytes + len, 0, TEXT_SLACK);
    return parse_owned(l, t->bytes, len);
}

void d9_ledger_read(d9_ledger *l, int dirfd) {
    memset(l, 0, sizeof *l);
    int fd = openat(dirfd, D9_LEDGER_NAME, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st;
    d9_ledger_text *t = NULL;
    size_t len = 0;
    bool regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    uint64_t size = regular && st.st_size > 0 ? (uint64_t)st.st_size : 0;
    if (size > 0 && size <= D9_LEDGER_MAX_BYTES && (t = new_text(l, (size_t)size)) != NULL) {
        while (len < size) {
            ssize_t n = read(fd, t->bytes + len, (size_t)(size - len));
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            len += (size_t)n;
        }
        memset(t->bytes + len, 0, TEXT_SLACK);
    }
    close(fd);
    if (t && !parse_owned(l, t->bytes, len)) { /* out of memory: no ledger this time */
        d9_ledger_free(l);
        memset(l, 0, sizeof *l);
    }
    l->file_bytes = size;
    l->oversized = size > D9_LEDGER_MAX_BYTES;
}

static d9_ledger_run *latest_line(d9_ledger *l, const char *name) {
    if (!l->latest) return NULL;
    uint64_t h = name_hash(name, strlen(name), false);
    for (size_t k = (size_t)h & l->latest_mask; l->latest[k]; k = (k + 1) & l->latest_mask) {
        d9_ledger_run *r = &l->runs[l->latest[k] - 1];
        if (r->name_hash == h && strcmp(r->name, name) == 0) return r;
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
    while (l->texts) {
        d9_ledger_text *next = l->texts->next;
        free(l->texts);
        l->texts = next;
    }
    free(l->runs);
    free(l->file_pool);
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
                d9_ledger_add(&all, l->runs[i].name, l->runs[i].dir_mtime_ns, d9_ledger_files(l, &l->runs[i]),
                              l->runs[i].nfiles);
        if (o->len) out_printf(&all, "%.*s", (int)o->len, o->buf);
        char tmp[64];
        snprintf(tmp, sizeof tmp, D9_LEDGER_NAME ".%d.tmp", (int)getpid());
        int fd = all.failed ? -1 : openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0) {
            bool ok = write_all(fd, all.buf ? all.buf : "", all.len);
            ok = close(fd) == 0 && ok;
            /* lines appended meanwhile by others are lost: their runs are only scanned again */
            if (!ok || renameat(dirfd, tmp, dirfd, D9_LEDGER_NAME) != 0) (void)unlinkat(dirfd, tmp, 0);
            else size = all.len; /* exactly what was written */
        }
        free(all.buf);
    } else if (o->len && !o->failed) {
        int fd = openat(dirfd, D9_LEDGER_NAME, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
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
