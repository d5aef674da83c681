/* Trace file names and the index of trace files under a trace directory (see trace_files.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "sinks/trace_files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sinks/run_ledger.h"

bool d9_tf_path(char *buf, size_t size, const char *trace_dir, const char *run, uint64_t seq,
                d9_segment_kind kind) {
    int n = snprintf(buf, size, "%s/%s/trace.%" PRIu64 "%s", trace_dir, run, seq, d9_segment_kind_suffix(kind));
    return n > 0 && (size_t)n < size;
}

struct d9_tf_name_block {
    d9_tf_name_block *next; /* the block filled before */
    size_t used, cap;
    char bytes[];
};

#define NAME_BLOCK_BYTES 4000 /* ~130 run names of the usual length */

int d9_tf_index_init(d9_tf_index *ix, const char *trace_dir) {
    memset(ix, 0, sizeof *ix);
    ix->sorted = true;
    ix->dir_fd = ix->own_run_fd = ix->own_run = -1;
    ix->trace_dir = strdup(trace_dir);
    return ix->trace_dir ? 0 : -ENOMEM;
}

/* The trace directory, opened again for a read of its entries of its own. */
static int open_top(const d9_tf_index *ix) {
    if (ix->dir_fd >= 0) return openat(ix->dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (ix->handles) {
        errno = EBADF;
        return -1;
    }
    return open(ix->trace_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

int d9_tf_run_fd(const d9_tf_index *ix, uint32_t run) {
    if ((int)run == ix->own_run && ix->own_run_fd >= 0) return ix->own_run_fd;
    if (ix->dir_fd >= 0) return openat(ix->dir_fd, ix->runs[run].name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (ix->handles) {
        errno = EBADF;
        return -1;
    }
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s", ix->trace_dir, ix->runs[run].name) >= (int)sizeof path) return -1;
    return open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

void d9_tf_run_fd_done(const d9_tf_index *ix, int fd) {
    if (fd >= 0 && fd != ix->own_run_fd) close(fd);
}

void d9_tf_index_free(d9_tf_index *ix) {
    while (ix->name_blocks) {
        d9_tf_name_block *next = ix->name_blocks->next;
        free(ix->name_blocks);
        ix->name_blocks = next;
    }
    free(ix->runs);
    free(ix->entries);
    free(ix->trace_dir);
    memset(ix, 0, sizeof *ix);
}

/* A copy of name in the index's name blocks, or NULL when out of memory. */
static const char *keep_name(d9_tf_index *ix, const char *name) {
    size_t size = strlen(name) + 1;
    d9_tf_name_block *b = ix->name_blocks;
    if (!b || b->cap - b->used < size) {
        size_t cap = size > NAME_BLOCK_BYTES ? size : NAME_BLOCK_BYTES;
        b = malloc(sizeof *b + cap);
        if (!b) return NULL;
        *b = (d9_tf_name_block){.next = ix->name_blocks, .cap = cap};
        ix->name_blocks = b;
    }
    char *copy = b->bytes + b->used;
    memcpy(copy, name, size);
    b->used += size;
    return copy;
}

/* A new slot for a run directory name known not to be indexed yet (a scan's: the names in a
 * directory are unique); -1 when out of memory. */
static int add_run_slot(d9_tf_index *ix, const char *run) {
    if (ix->nruns >= INT_MAX) return -1;
    if (ix->nruns == ix->runs_cap) {
        size_t cap = ix->runs_cap ? ix->runs_cap * 2 : 8;
        d9_tf_run *r = realloc(ix->runs, cap * sizeof *r);
        if (!r) return -1;
        ix->runs = r;
        ix->runs_cap = cap;
    }
    const char *name = keep_name(ix, run);
    if (!name) return -1;
    ix->runs[ix->nruns] = (d9_tf_run){.name = name, .files = 0};
    return (int)ix->nruns++;
}

int d9_tf_index_run(d9_tf_index *ix, const char *run) {
    for (size_t i = 0; i < ix->nruns; i++)
        if (strcmp(ix->runs[i].name, run) == 0) return (int)i;
    return add_run_slot(ix, run);
}

/* Oldest first: earliest mtime, then run directory name, then N, then kind. */
static int entry_cmp(const void *a, const void *b, void *ctx) {
    const d9_tf_entry *x = a, *y = b;
    const d9_tf_index *ix = ctx;
    if (x->mtime_ns != y->mtime_ns) return x->mtime_ns < y->mtime_ns ? -1 : 1;
    if (x->run != y->run) {
        int c = strcmp(ix->runs[x->run].name, ix->runs[y->run].name);
        if (c) return c;
    }
    if (x->seq != y->seq) return x->seq < y->seq ? -1 : 1;
    return (int)x->kind - (int)y->kind;
}

/* Make room for one more entry at `end`; false when out of memory. */
static bool reserve_one(d9_tf_index *ix) {
    if (ix->end < ix->cap) return true;
    if (ix->head > 0) { /* reuse the slots that deletions freed at the front */
        memmove(ix->entries, ix->entries + ix->head, (ix->end - ix->head) * sizeof *ix->entries);
        ix->end -= ix->head;
        ix->head = 0;
        return true;
    }
    size_t cap = ix->cap ? ix->cap * 2 : 64;
    d9_tf_entry *e = realloc(ix->entries, cap * sizeof *e);
    if (!e) return false;
    ix->entries = e;
    ix->cap = cap;
    return true;
}

void d9_tf_index_add(d9_tf_index *ix, int run, uint64_t seq, d9_segment_kind kind, uint64_t size,
                     int64_t mtime_ns, int64_t start_ns) {
    if (run < 0 || !reserve_one(ix)) {
        ix->pinned_bytes += size;
        return;
    }
    d9_tf_entry e = {.mtime_ns = mtime_ns, .start_ns = start_ns, .seq = seq, .size = size, .run = (uint32_t)run,
                     .kind = (uint8_t)kind};
    ix->bytes += size;
    ix->runs[run].files++;
    if (!ix->sorted) { /* sorted when the order is needed */
        ix->entries[ix->end++] = e;
        return;
    }
    /* Binary search for the first entry newer than e; new segments usually go at the end. */
    size_t lo = ix->head, hi = ix->end;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (entry_cmp(&ix->entries[mid], &e, ix) <= 0) lo = mid + 1;
        else hi = mid;
    }
    memmove(ix->entries + lo + 1, ix->entries + lo, (ix->end - lo) * sizeof e);
    ix->entries[lo] = e;
    ix->end++;
}

static int64_t mtime_ns_of(const struct stat *st) {
    return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

/* True when another open file description holds the writer's exclusive lock on this file. */
static bool active_file_is_live(int dirfd, const char *name) {
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return false; /* cannot tell: treat as a dead run's leftover */
    bool live = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    close(fd);
    return live;
}

/* Directory entries through getdents64 into one buffer: a run directory costs openat,
 * getdents64 until it returns 0, close (fdopendir would add an fstat and two fcntl). */
typedef struct dir_reader {
    _Alignas(struct dirent64) char buf[16384];
    int fd;
    size_t len, pos;
} dir_reader;

static const struct dirent64 *next_entry(dir_reader *r) {
    if (r->pos >= r->len) {
        ssize_t n = getdents64(r->fd, r->buf, sizeof r->buf);
        if (n <= 0) return NULL;
        r->len = (size_t)n;
        r->pos = 0;
    }
    const struct dirent64 *de = (const struct dirent64 *)(r->buf + r->pos);
    r->pos += de->d_reclen;
    return de;
}

/* What a scan writes down in the ledger (run_ledger.h): the trace files of the run directory
 * being read, and the lines for the settled ones. */
typedef struct ledger_notes {
    d9_ledger_file *files;
    size_t n, cap;
    bool overflow; /* out of memory: that directory is not written down */
    int64_t now_ns;
    d9_ledger_out out;
} ledger_notes;

static void note_file(ledger_notes *ln, uint64_t seq, d9_segment_kind kind, uint64_t size, int64_t mtime_ns) {
    if (ln->overflow) return;
    if (ln->n == ln->cap) {
        size_t cap = ln->cap ? ln->cap * 2 : 16;
        d9_ledger_file *f = realloc(ln->files, cap * sizeof *f);
        if (!f) {
            ln->overflow = true;
            return;
        }
        ln->files = f;
        ln->cap = cap;
    }
    ln->files[ln->n++] = (d9_ledger_file){.seq = seq, .size = size, .mtime_ns = mtime_ns, .kind = (uint8_t)kind};
}

/* Append an entry found by a scan (unsorted: sorted once, when the order is needed). */
static void add_scanned(d9_tf_index *ix, int *run, const char *run_name, uint64_t seq, d9_segment_kind kind,
                        uint64_t size, int64_t mtime_ns) {
    if (*run == -2) *run = add_run_slot(ix, run_name);
    if (*run < 0 || !reserve_one(ix)) {
        ix->pinned_bytes += size;
        return;
    }
    ix->entries[ix->end++] = (d9_tf_entry){.mtime_ns = mtime_ns, .seq = seq, .size = size, .run = (uint32_t)*run,
                                           .kind = (uint8_t)kind};
    ix->sorted = false;
    ix->bytes += size;
    ix->runs[*run].files++;
}

/* A run directory read file by file, into slot `run` (-2: a new slot on its first trace file, so
 * unrelated directories cost nothing); with ln, written down in the ledger when nothing writes
 * to it any more (no live .active file) and it has not changed for D9_LEDGER_SETTLED_NS. */
static void scan_run_dir(d9_tf_index *ix, int top_fd, const char *run_name, int run, const char *current_run,
                         uint64_t *next_seq, dir_reader *r, ledger_notes *ln) {
    r->fd = openat(top_fd, run_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (r->fd < 0) return;
    r->len = r->pos = 0;
    bool is_current = strcmp(run_name, current_run) == 0;
    /* the directory's mtime before its entries: a change while they are read shows later */
    struct stat dst;
    bool settled = ln && !is_current && fstat(r->fd, &dst) == 0 &&
                   ln->now_ns - mtime_ns_of(&dst) >= D9_LEDGER_SETTLED_NS && d9_ledger_name_ok(run_name);
    if (ln) {
        ln->n = 0;
        ln->overflow = false;
    }
    const struct dirent64 *de;
    while ((de = next_entry(r)) != NULL) {
        uint64_t seq;
        d9_segment_kind kind;
        if (!d9_segment_name_parse(de->d_name, &seq, &kind)) continue;
        if (de->d_type != DT_REG && de->d_type != DT_UNKNOWN) continue;
        struct stat st;
        if (fstatat(r->fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (is_current && seq >= *next_seq) *next_seq = seq == UINT64_MAX ? seq : seq + 1;
        uint64_t size = (uint64_t)st.st_size;
        if (kind == D9_SEGMENT_ACTIVE && active_file_is_live(r->fd, de->d_name)) {
            ix->pinned_bytes += size;
            settled = false;
            continue;
        }
        add_scanned(ix, &run, run_name, seq, kind, size, mtime_ns_of(&st));
        if (settled) note_file(ln, seq, kind, size, mtime_ns_of(&st));
    }
    close(r->fd);
    if (settled && !ln->overflow) d9_ledger_add(&ln->out, run_name, mtime_ns_of(&dst), ln->files, ln->n);
}

/* A run directory as the ledger wrote it down; unchecked: its mtime not compared. */
static void add_from_ledger(d9_tf_index *ix, const char *run_name, const d9_ledger *led, const d9_ledger_run *lr,
                            bool unchecked) {
    int run = -2;
    const d9_ledger_file *files = d9_ledger_files(led, lr);
    for (size_t i = 0; i < lr->nfiles; i++) {
        const d9_ledger_file *f = &files[i];
        add_scanned(ix, &run, run_name, f->seq, (d9_segment_kind)f->kind, f->size, f->mtime_ns);
    }
    if (unchecked && run >= 0) {
        ix->runs[run].unchecked = true;
        ix->runs[run].dir_mtime_ns = lr->dir_mtime_ns;
        ix->unchecked_runs++;
    }
}

static int64_t realtime_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts); /* the clock of file mtimes */
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void d9_tf_index_sort(d9_tf_index *ix) {
    if (ix->sorted) return;
    if (ix->end - ix->head > 1)
        qsort_r(ix->entries + ix->head, ix->end - ix->head, sizeof *ix->entries, entry_cmp, ix);
    ix->sorted = true;
}

/* Every run directory's trace files. The file system's entry types say which entries are
 * directories (a stat only where it does not tell). A run the ledger wrote down costs one
 * fstatat (its directory's mtime unchanged), or nothing within the trust window; any other its
 * directory's few calls and one stat per trace file in it: the scan runs at every start, over
 * every run kept. */
int d9_tf_index_scan(d9_tf_index *ix, const char *current_run, uint64_t *next_seq) {
    *next_seq = 0;
    dir_reader *top = malloc(2 * sizeof *top), *run = top + 1;
    if (!top) return -ENOMEM;
    top->fd = open_top(ix);
    if (top->fd < 0) {
        int e = errno;
        free(top);
        return -e;
    }
    top->len = top->pos = 0;
    d9_ledger led;
    d9_ledger_read(&led, top->fd);
    ledger_notes ln = {.now_ns = realtime_now_ns()};
    bool trusted = d9_ledger_trusted(&led, ln.now_ns);
    size_t from_ledger = 0;
    const struct dirent64 *de;
    while ((de = next_entry(top)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
        struct stat st;
        bool have_st = false;
        if (de->d_type != DT_DIR) {
            int slot = d9_spare_slot_of(de->d_name);
            if (slot >= 0) { /* the trace directory's bytes: counted, and the writer may take it */
                if (fstatat(top->fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) {
                    ix->spare_bytes[slot] = (uint64_t)st.st_size;
                    ix->pinned_bytes += (uint64_t)st.st_size;
                }
                continue;
            }
            if (d9_ledger_is_leftover(top->fd, de->d_name, ln.now_ns)) continue;
            if (de->d_type != DT_UNKNOWN ||
                fstatat(top->fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode))
                continue;
            have_st = true;
        }
        if (led.n && strcmp(de->d_name, current_run) != 0) {
            const d9_ledger_run *lr = NULL;
            if (trusted) lr = d9_ledger_latest(&led, de->d_name);
            else if (have_st || (fstatat(top->fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)))
                lr = d9_ledger_find(&led, de->d_name, mtime_ns_of(&st));
            if (lr) {
                add_from_ledger(ix, de->d_name, &led, lr, trusted);
                from_ledger++;
                continue;
            }
        }
        scan_run_dir(ix, top->fd, de->d_name, -2, current_run, next_seq, run, &ln);
    }
    /* every run checked: the next scans may take the lines unchecked for a while (a trace
     * directory with nothing written down gets no ledger for it) */
    if (!trusted && (led.n || ln.out.runs)) d9_ledger_add_verified(&ln.out, ln.now_ns);
    /* mostly dead lines (runs deleted or changed since), or too large to read: written again,
     * with only the live */
    bool rewrite = led.oversized || led.lines - from_ledger > from_ledger + 64;
    ix->pinned_bytes += d9_ledger_write(top->fd, &led, &ln.out, rewrite); /* never deleted */
    free(ln.files);
    d9_ledger_free(&led);
    close(top->fd);
    free(top);
    return 0;
}

/* Drop run slot `run`'s entries (and their bytes) from the index. */
static void drop_run_entries(d9_tf_index *ix, uint32_t run) {
    size_t out = ix->head;
    for (size_t i = ix->head; i < ix->end; i++) {
        if (ix->entries[i].run == run) ix->bytes -= ix->entries[i].size;
        else ix->entries[out++] = ix->entries[i];
    }
    ix->end = out;
    ix->runs[run].files = 0;
}

bool d9_tf_index_check(d9_tf_index *ix) {
    if (ix->unchecked_runs == 0) return false;
    int top_fd = open_top(ix);
    dir_reader *r = malloc(sizeof *r);
    for (size_t i = 0; i < ix->nruns; i++) {
        d9_tf_run *run = &ix->runs[i];
        if (!run->unchecked) continue;
        run->unchecked = false;
        struct stat st;
        if (top_fd >= 0 && fstatat(top_fd, run->name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) &&
            mtime_ns_of(&st) == run->dir_mtime_ns)
            continue;
        /* changed or gone (or cannot tell): what is there now, or nothing */
        drop_run_entries(ix, (uint32_t)i); /* keeps the others' order; what is read again is appended */
        uint64_t unused_seq = 0;
        if (top_fd >= 0 && r) scan_run_dir(ix, top_fd, run->name, (int)i, "", &unused_seq, r, NULL);
    }
    ix->unchecked_runs = 0;
    free(r);
    if (top_fd >= 0) close(top_fd);
    if (ix->head == ix->end) ix->head = ix->end = 0;
    return true;
}

const d9_segment_kind d9_tf_compressed_kinds[2] = {D9_SEGMENT_GZIP, D9_SEGMENT_ZSTD};

bool d9_tf_index_oldest(d9_tf_index *ix, d9_tf_entry *out) {
    if (ix->head == ix->end) return false;
    d9_tf_index_sort(ix);
    *out = ix->entries[ix->head];
    return true;
}

bool d9_tf_index_delete_oldest(d9_tf_index *ix, const char *keep_run, bool *unlinked) {
    *unlinked = false;
    if (ix->head == ix->end) return false;
    d9_tf_index_sort(ix);
    d9_tf_entry e = ix->entries[ix->head++];
    if (ix->head == ix->end) ix->head = ix->end = 0;
    ix->bytes -= e.size;

    char name[D9_SEGMENT_NAME_MAX];
    bool gone = false;
    int rfd = d9_tf_run_fd(ix, e.run);
    if (rfd < 0 && (errno == ENOENT || errno == ENOTDIR)) gone = true; /* its directory went */
    if (rfd >= 0) {
        d9_segment_name_format(name, sizeof name, e.seq, (d9_segment_kind)e.kind);
        if (unlinkat(rfd, name, 0) == 0) {
            *unlinked = gone = true;
        } else if (errno == ENOENT) {
            gone = true; /* already deleted by someone else: nothing left to count */
            for (size_t k = 0; e.kind == D9_SEGMENT_SEALED && k < 2; k++) {
                d9_segment_name_format(name, sizeof name, e.seq, d9_tf_compressed_kinds[k]);
                if (unlinkat(rfd, name, 0) == 0) *unlinked = true;
            }
        }
    }
    if (!gone) ix->pinned_bytes += e.size; /* still on disk and we cannot remove it */

    d9_tf_run *r = &ix->runs[e.run];
    if (r->files > 0) r->files--;
    if (r->files == 0 && (!keep_run || strcmp(r->name, keep_run) != 0) && rfd >= 0) {
        /* A dead run's unused final reserve (segment_writer.h) must not keep it alive. */
        (void)unlinkat(rfd, ".final-accounting", 0);
        /* fails harmlessly if not empty */
        if (ix->dir_fd >= 0) {
            (void)unlinkat(ix->dir_fd, r->name, AT_REMOVEDIR);
        } else {
            char path[PATH_MAX];
            if (snprintf(path, sizeof path, "%s/%s", ix->trace_dir, r->name) < (int)sizeof path) (void)rmdir(path);
        }
    }
    d9_tf_run_fd_done(ix, rfd);
    return true;
}

/* rfd: the entry's run directory, -1 when it could not be opened (err: why). */
static bool entry_exists(const d9_tf_entry *e, int rfd, int err) {
    if (rfd < 0) return err != ENOENT && err != ENOTDIR;
    char name[D9_SEGMENT_NAME_MAX];
    struct stat st;
    d9_segment_name_format(name, sizeof name, e->seq, (d9_segment_kind)e->kind);
    if (fstatat(rfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT) return true;
    for (size_t k = 0; e->kind == D9_SEGMENT_SEALED && k < 2; k++) {
        d9_segment_name_format(name, sizeof name, e->seq, d9_tf_compressed_kinds[k]);
        if (fstatat(rfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT) return true;
    }
    return false;
}

void d9_tf_index_forget_vanished(d9_tf_index *ix) {
    size_t out = ix->head;
    int rfd = -1, rfd_err = 0;
    uint32_t rfd_run = UINT32_MAX;
    for (size_t i = ix->head; i < ix->end; i++) {
        d9_tf_entry *e = &ix->entries[i];
        if (e->run != rfd_run) { /* one handle per run in a row (a run's entries mostly are) */
            d9_tf_run_fd_done(ix, rfd);
            rfd_run = e->run;
            rfd = d9_tf_run_fd(ix, rfd_run);
            rfd_err = rfd < 0 ? errno : 0;
        }
        if (entry_exists(e, rfd, rfd_err)) {
            ix->entries[out++] = *e;
        } else {
            ix->bytes -= e->size;
            if (ix->runs[e->run].files > 0) ix->runs[e->run].files--;
        }
    }
    d9_tf_run_fd_done(ix, rfd);
    ix->end = out;
    if (ix->head == ix->end) ix->head = ix->end = 0;
    char path[PATH_MAX];
    struct stat st;
    for (unsigned k = 0; k < D9_SPARE_SLOTS; k++)
        if (ix->spare_bytes[k] && d9_spare_path(path, sizeof path, ix->dir_fd >= 0 ? "." : ix->trace_dir, k) &&
            fstatat(ix->dir_fd >= 0 ? ix->dir_fd : AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            ix->pinned_bytes -= ix->spare_bytes[k];
            ix->spare_bytes[k] = 0;
        }
}

int d9_tf_lock_active(int fd) {
    return flock(fd, LOCK_EX | LOCK_NB) == 0 ? 0 : -errno;
}
