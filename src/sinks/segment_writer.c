/* Rotating segment writer (contract in segment_writer.h, behaviour in docs/files-on-disk.md).
 *
 * Disk accounting: the bytes the index holds (sealed files of this run, every trace file of
 * earlier runs), the bytes it may not delete (pinned), the open segment and the pending write
 * must fit in max_total_size; the oldest indexed files are deleted until they do. The index is
 * built once at open and kept up to date in memory, so a write costs one fstat and one pwrite. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "sinks/segment_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/flight_crash.h"
#include "core/hand_over_files.h"
#include "sinks/run_claim.h"
#include "sinks/segment_buffer.h"
#include "sinks/trace_dir.h"
#include "sinks/trace_files.h"

struct d9_segment_writer {
    char *trace_dir;
    char *run_id;
    uint64_t max_file_size;
    uint64_t max_total_size;
    uint64_t rotation_ns;

    char run_dir[PATH_MAX];
    int trace_fd;               /* the trace directory's handle and the run directory's */
    int run_fd;                 /* (trace_dir.h): every file of the run is reached through them */
    dev_t trace_dev, run_dev;   /* what they were opened on: a program that closes every fd */
    ino_t trace_ino, run_ino;   /* may reuse the numbers (ensure_handles) */
    char active_path[PATH_MAX]; /* meaningful while fd >= 0 */
    char active_name[D9_SEGMENT_NAME_MAX]; /* its name in run_fd */
    int fd;                     /* the open segment, -1 when none */
    dev_t fd_dev;               /* identity of the file fd was opened on: a program that */
    ino_t fd_ino;               /* closes every fd may reuse the number for its own file */
    uint64_t seq;               /* N of the open segment, or of the next one */
    uint64_t size;              /* bytes in the open segment, all ending at frame boundaries */
    uint64_t opened_ns;         /* CLOCK_MONOTONIC when the open segment was created */
    int64_t opened_real_ns;     /* ... and the wall clock then */
    uint64_t epoch;
    bool needs_symbols;         /* the open segment holds stacks (d9_segw_note_needs_symbols) */
    bool collect_symbols;       /* d9_segw_collect_symbols */
    d9_sym_input *symbols;      /* the next sealed segment's list, NULL until used */
    bool symbols_lost;          /* a write failed since the last seal: the list is not vouched for */

    d9_tf_index files; /* every trace file under trace_dir except the open segment */
    int run_slot;      /* this run's slot in files.runs */

    d9_segw_stats stats;
    bool count_upload_loss;
    bool upload_loss_said;
    d9_segw_upload_loss upload_loss;
    d9_segw_sealed_fn on_sealed;
    void *on_sealed_ctx;

    /* room held on disk for the last words (see d9_segw_set_final_reserve) */
    uint64_t final_reserve;   /* wanted size, 0 = none */
    uint64_t final_held;      /* bytes the reserve file holds now (0: none) */

    /* sizes of sealed files changed by other threads, applied before the next write */
    uint64_t growth_reserve;
    pthread_mutex_t resize_lock;
    struct resize_note { uint64_t seq, size; } *resizes;
    size_t nresizes, resizes_cap;

    /* memory mode (d9_segw_config.memory): the open segment's bytes, sealed to on_flight */
    bool memory;
    bool mem_open;
    uint8_t *mem;
    size_t mem_cap;
    d9_segw_flight_fn on_flight;
    void *on_flight_ctx;
    _Atomic uint64_t seal_at; /* d9_segw_request_seal: 0 = none */
    _Atomic uint64_t open_since; /* d9_segw_open_since */
};

static uint64_t monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int64_t realtime_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static bool is_handle(int fd, dev_t dev, ino_t ino) {
    struct stat st;
    return fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == dev && st.st_ino == ino;
}

/* The handles as they are now, for ensure_handles and the index. */
static void note_handles(d9_segment_writer *w) {
    struct stat st;
    if (w->trace_fd >= 0 && fstat(w->trace_fd, &st) == 0) {
        w->trace_dev = st.st_dev;
        w->trace_ino = st.st_ino;
    }
    if (w->run_fd >= 0 && fstat(w->run_fd, &st) == 0) {
        w->run_dev = st.st_dev;
        w->run_ino = st.st_ino;
    }
    w->files.dir_fd = w->trace_fd;
    w->files.own_run_fd = w->run_fd;
    w->files.handles = true;
}

/* Before the handles are used: a program that closed them (a raw close loop, close_range;
 * the preload shim guards files, not directories) may have their numbers for its own files,
 * which must never be used or closed. A lost one is opened again under the rules of the start
 * (trace_dir.h); when that fails it stays -1 and what needs it fails (counted as lost). */
static int ensure_handles(d9_segment_writer *w) {
    bool trace_ok = is_handle(w->trace_fd, w->trace_dev, w->trace_ino);
    bool run_ok = is_handle(w->run_fd, w->run_dev, w->run_ino);
    if (trace_ok && run_ok) return 0;
    char why[1024];
    /* created when missing: a full disk at the start left none (d9_segw_open) */
    if (!trace_ok) w->trace_fd = d9_trace_dir_open(w->trace_dir, true, why, sizeof why);
    if (!run_ok) w->run_fd = w->trace_fd >= 0 ? d9_run_dir_open(w->trace_fd, w->run_id, w->run_dir, why, sizeof why) : -1;
    int e = errno; /* why the one that failed failed (a full disk: ENOSPC) */
    note_handles(w);
    return w->run_fd >= 0 ? 0 : -(e ? e : EBADF);
}

static bool valid_run_id(const char *s) {
    return *s && strchr(s, '/') == NULL && strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
}

static d9_segment_writer *fail_open(d9_segment_writer *w, char *err, size_t errlen,
                                    const char *fmt, const char *arg, int errnum) {
    if (err && errlen) {
        char msg[1024];
        snprintf(msg, sizeof msg, fmt, arg ? arg : "");
        if (errnum) snprintf(err, errlen, "%s: %s", msg, strerror(errnum));
        else snprintf(err, errlen, "%s", msg);
    }
    if (w) {
        if (w->run_fd >= 0) close(w->run_fd);
        if (w->trace_fd >= 0) close(w->trace_fd);
        d9_tf_index_free(&w->files);
        free(w->trace_dir);
        free(w->run_id);
        free(w);
    }
    return NULL;
}

static d9_segment_writer *open_memory(const d9_segw_config *cfg, char *err, size_t errlen);
static int lose_write(d9_segment_writer *w, size_t len);
static d9_sym_input *take_symbols(d9_segment_writer *w);

d9_segment_writer *d9_segw_open(const d9_segw_config *cfg, char *err, size_t errlen) {
    if (!cfg || !cfg->trace_dir || !*cfg->trace_dir || !cfg->run_id)
        return fail_open(NULL, err, errlen, "segment writer: trace_dir and run_id are required%s",
                         NULL, 0);
    if (!valid_run_id(cfg->run_id))
        return fail_open(NULL, err, errlen,
                         "segment writer: run_id '%s' must be a single directory name",
                         cfg->run_id, 0);
    if (cfg->max_file_size == 0)
        return fail_open(NULL, err, errlen, "segment writer: max_file_size must be > 0%s", NULL, 0);
    if (cfg->max_total_size < cfg->max_file_size)
        return fail_open(NULL, err, errlen,
                         "segment writer: max_total_size must be >= max_file_size%s", NULL, 0);
    if (strlen(cfg->trace_dir) + strlen(cfg->run_id) + 2 + D9_SEGMENT_NAME_MAX > PATH_MAX)
        return fail_open(NULL, err, errlen, "segment writer: trace_dir '%s' is too long",
                         cfg->trace_dir, 0);
    if (cfg->memory) return open_memory(cfg, err, errlen);

    d9_segment_writer *w = calloc(1, sizeof *w);
    if (w) pthread_mutex_init(&w->resize_lock, NULL);
    if (!w) return fail_open(NULL, err, errlen, "segment writer: out of memory%s", NULL, 0);
    w->fd = -1;
    w->trace_fd = w->run_fd = -1;
    w->epoch = 1; /* nonzero, so a caller whose "last epoch" starts at 0 begins a stream */
    w->max_file_size = cfg->max_file_size;
    w->max_total_size = cfg->max_total_size;

    w->rotation_ns = cfg->rotation_ns;
    w->trace_dir = strdup(cfg->trace_dir);
    w->run_id = strdup(cfg->run_id);
    if (!w->trace_dir || !w->run_id)
        return fail_open(w, err, errlen, "segment writer: out of memory%s", NULL, 0);
    /* "dir/" and "dir" name the same files: keep the paths handed to on_sealed tidy. */
    for (size_t n = strlen(w->trace_dir); n > 1 && w->trace_dir[n - 1] == '/'; n--)
        w->trace_dir[n - 1] = '\0';
    if (d9_tf_index_init(&w->files, w->trace_dir) != 0)
        return fail_open(w, err, errlen, "segment writer: out of memory%s", NULL, 0);
    snprintf(w->run_dir, sizeof w->run_dir, "%s/%s", w->trace_dir, w->run_id);

    char why[1024];
    w->trace_fd = d9_trace_dir_open(w->trace_dir, true, why, sizeof why);
    if (w->trace_fd >= 0) w->run_fd = d9_run_dir_open(w->trace_fd, w->run_id, w->run_dir, why, sizeof why);
    /* a full disk may free up: open_segment creates the directories when it does */
    bool disk_full = w->run_fd < 0 && (errno == ENOSPC || errno == EDQUOT);
    if (disk_full) w->stats.last_write_errno = errno;
    else if (w->run_fd < 0) return fail_open(w, err, errlen, "%s", why, 0);
    note_handles(w);
    int rc = w->trace_fd >= 0 ? d9_tf_index_scan(&w->files, w->run_id, &w->seq) : 0; /* none yet: nothing to count */
    if (rc != 0 && !(disk_full && rc == -ENOENT))
        return fail_open(w, err, errlen, "segment writer: cannot read %s", w->trace_dir, -rc);
    w->run_slot = d9_tf_index_run(&w->files, w->run_id);
    if (w->run_slot < 0) return fail_open(w, err, errlen, "segment writer: out of memory%s", NULL, 0);
    w->files.own_run = w->run_slot;
    return w;
}

/* Memory mode: no directory is made and no file indexed; the trace directory is only named. */
static d9_segment_writer *open_memory(const d9_segw_config *cfg, char *err, size_t errlen) {
    d9_segment_writer *w = calloc(1, sizeof *w);
    if (!w) return fail_open(NULL, err, errlen, "segment writer: out of memory%s", NULL, 0);
    pthread_mutex_init(&w->resize_lock, NULL);
    w->fd = -1;
    w->trace_fd = w->run_fd = -1;
    w->epoch = 1;
    w->memory = true;
    w->max_file_size = cfg->max_file_size;
    w->max_total_size = cfg->max_total_size;
    w->rotation_ns = cfg->rotation_ns;
    w->trace_dir = strdup(cfg->trace_dir);
    w->run_id = strdup(cfg->run_id);
    if (!w->trace_dir || !w->run_id || d9_tf_index_init(&w->files, w->trace_dir) != 0)
        return fail_open(w, err, errlen, "segment writer: out of memory%s", NULL, 0);
    for (size_t n = strlen(w->trace_dir); n > 1 && w->trace_dir[n - 1] == '/'; n--) w->trace_dir[n - 1] = '\0';
    snprintf(w->run_dir, sizeof w->run_dir, "%s/%s", w->trace_dir, w->run_id);
    w->run_slot = d9_tf_index_run(&w->files, w->run_id);
    if (w->run_slot < 0) return fail_open(w, err, errlen, "segment writer: out of memory%s", NULL, 0);
    return w;
}

/* Memory mode's seal: the bytes and the symbol list go to on_flight (or nowhere). */
static void seal_memory(d9_segment_writer *w) {
    d9_sym_input *symbols = take_symbols(w);
    w->mem_open = false;
    if (w->size == 0 || !w->on_flight) d9_sym_input_destroy(symbols), symbols = NULL;
    if (w->size == 0) return;
    d9_segw_sealed_info info = {.bytes = w->mem, .len = (size_t)w->size, .seq = w->seq++,
                                .start_mono_ns = w->opened_ns, .end_mono_ns = monotonic_ns(), .symbols = symbols};
    w->stats.segments_sealed++;
    d9_segbuf_trim(w->mem, info.len); /* a short segment keeps only its pages */
    w->mem = NULL;
    w->mem_cap = 0;
    w->size = 0;
    if (w->on_flight) {
        w->on_flight(&info, w->on_flight_ctx); /* the crash table has it now: withdrawn as open */
        (void)d9_crash_open_withdraw();
    } else if (d9_crash_open_withdraw()) { /* else a crash dump is reading it */
        d9_segbuf_free(info.bytes);
    }
    atomic_store_explicit(&w->open_since, 0, memory_order_release);
}

static int write_memory(d9_segment_writer *w, const void *buf, size_t len) {
    if (w->size > 0 && len > d9_segw_room(w)) { /* as on disk: the caller overran the segment */
        seal_memory(w);
        return lose_write(w, len);
    }
    if (!w->mem_open) {
        w->mem_open = true;
        w->size = 0;
        w->opened_ns = monotonic_ns();
        w->opened_real_ns = realtime_ns();
        if (w->mem) d9_crash_open_publish(w->mem, w->seq, w->opened_ns); /* a buffer kept from before */
    }
    if (w->size + len > w->mem_cap) {
        /* the whole segment's room at once, so that the open buffer never moves (a crash dump
         * reads it: core/flight_crash.h); pages not written to cost no memory */
        size_t cap = w->size + len > w->max_file_size ? w->size + len : (size_t)w->max_file_size;
        if (w->mem && !d9_crash_open_withdraw()) return lose_write(w, len); /* a crash dump reads it */
        uint8_t *m = d9_segbuf_alloc(cap); /* huge pages: segment_buffer.c */
        if (m && w->mem) memcpy(m, w->mem, (size_t)w->size);
        if (m) d9_segbuf_free(w->mem);
        if (!m) {
            if (w->mem) d9_crash_open_publish(w->mem, w->seq, w->opened_ns), d9_crash_open_written(w->size);
            w->stats.last_write_errno = ENOMEM;
            return lose_write(w, len);
        }
        w->mem = m;
        w->mem_cap = cap;
        d9_crash_open_publish(m, w->seq, w->opened_ns);
        d9_crash_open_written(w->size);
    }
    memcpy(w->mem + w->size, buf, len);
    if (w->size == 0) atomic_store_explicit(&w->open_since, w->opened_ns, memory_order_release);
    w->size += len;
    d9_crash_open_written(w->size);
    w->stats.bytes_written += len;
    return 0;
}

void d9_segw_set_on_flight(d9_segment_writer *w, d9_segw_flight_fn fn, void *ctx) {
    w->on_flight = fn;
    w->on_flight_ctx = ctx;
}

uint64_t d9_segw_open_since(const d9_segment_writer *w) {
    return atomic_load_explicit(&w->open_since, memory_order_acquire);
}

void d9_segw_request_seal(d9_segment_writer *w, uint64_t at_mono_ns) {
    uint64_t cur = atomic_load(&w->seal_at);
    while ((cur == 0 || at_mono_ns < cur) && !atomic_compare_exchange_weak(&w->seal_at, &cur, at_mono_ns)) {
    }
}

/* What a sealed file of `size` bytes is counted as until its final size is noted: room for
 * the growth it may still get (never past max_file_size, which the growth respects). */
static uint64_t counted_size(const d9_segment_writer *w, uint64_t size) {
    if (w->growth_reserve == 0 || size >= w->max_file_size) return size;
    uint64_t left = w->max_file_size - size;
    return size + (left < w->growth_reserve ? left : w->growth_reserve);
}

/* A rename within the run directory that never replaces an existing file (a trace file we
 * did not write). */
static int rename_noreplace(int dir_fd, const char *from, const char *to) {
    if (renameat2(dir_fd, from, dir_fd, to, RENAME_NOREPLACE) == 0) return 0;
    if (errno != EINVAL && errno != ENOSYS) return -1;
    /* A filesystem without RENAME_NOREPLACE: check, then rename (only we name files here). */
    struct stat st;
    if (fstatat(dir_fd, to, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        errno = EEXIST;
        return -1;
    }
    return renameat(dir_fd, from, dir_fd, to);
}

/* Whether w->fd still refers to the file we opened. When the program closed it (and maybe
 * reused the number for a file of its own), we must neither write to it nor close it. */
static bool fd_is_ours(const d9_segment_writer *w, struct stat *st) {
    return fstat(w->fd, st) == 0 && st->st_dev == w->fd_dev && st->st_ino == w->fd_ino;
}

/* Forget an fd that is no longer ours without closing it (it may be the program's now). */
static void disown_fd(d9_segment_writer *w) {
    w->fd = -1;
    w->size = 0;
}

/* The open segment holds no bytes worth keeping: remove it; its N is reused. */
static void discard_segment(d9_segment_writer *w) {
    (void)ensure_handles(w);
    struct stat st;
    if (!fd_is_ours(w, &st)) {
        /* Closed by the program: remove the empty file by name, if it is still the one. */
        if (fstatat(w->run_fd, w->active_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_dev == w->fd_dev &&
            st.st_ino == w->fd_ino && st.st_size == 0)
            (void)unlinkat(w->run_fd, w->active_name, 0);
        disown_fd(w);
        return;
    }
    close(w->fd);
    w->fd = -1;
    (void)unlinkat(w->run_fd, w->active_name, 0);
    w->size = 0;
}

/* The list of the segment being sealed, for on_sealed: NULL when it cannot be trusted. The next
 * segment starts a list of its own. */
static d9_sym_input *take_symbols(d9_segment_writer *w) {
    d9_sym_input *in = w->symbols;
    w->symbols = NULL;
    bool lost = w->symbols_lost;
    w->symbols_lost = false;
    if (!w->collect_symbols) return NULL;
    if (in && (lost || in->oom)) {
        d9_sym_input_destroy(in);
        return NULL;
    }
    if (!in && !lost) in = d9_sym_input_new(); /* nothing was added: the segment holds nothing to name */
    return in;
}

/* Rename the open segment to trace.N.bin, index it and tell on_sealed. */
static void seal_segment(d9_segment_writer *w) {
    (void)ensure_handles(w);
    d9_sym_input *symbols = take_symbols(w);
    struct stat st;
    bool have_stat = fd_is_ours(w, &st);
    if (have_stat) close(w->fd); /* else the number is not ours to close any more */
    w->fd = -1;
    uint64_t seq = w->seq++;
    /* The file's real size: larger than w->size only when a failed write could not be cut off. */
    uint64_t size = have_stat && (uint64_t)st.st_size > w->size ? (uint64_t)st.st_size : w->size;
    w->size = 0;
    if (have_stat && st.st_nlink == 0) { /* deleted under us: nothing left to seal */
        d9_sym_input_destroy(symbols);
        return;
    }

    char sealed[PATH_MAX], sealed_name[D9_SEGMENT_NAME_MAX];
    d9_segment_kind kind = D9_SEGMENT_SEALED;
    d9_tf_path(sealed, sizeof sealed, w->trace_dir, w->run_id, seq, D9_SEGMENT_SEALED);
    d9_segment_name_format(sealed_name, sizeof sealed_name, seq, D9_SEGMENT_SEALED);
    if (rename_noreplace(w->run_fd, w->active_name, sealed_name) != 0) {
        if (errno == ENOENT) { /* deleted between fstat and rename */
            d9_sym_input_destroy(symbols);
            return;
        }
        /* Keep counting the bytes under the name they still have, so the budget stays true. */
        kind = D9_SEGMENT_ACTIVE;
    }
    int64_t mtime = have_stat ? (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec
                              : realtime_ns();
    uint64_t counted = kind == D9_SEGMENT_SEALED ? counted_size(w, size) : size;
    d9_tf_index_add(&w->files, w->run_slot, seq, kind, counted, mtime, w->opened_real_ns);
    w->stats.segments_sealed++;
    if (kind == D9_SEGMENT_SEALED && w->on_flight) { /* before the pipeline may compress it away */
        d9_segw_sealed_info info = {.path = sealed, .seq = seq, .start_mono_ns = w->opened_ns,
                                    .end_mono_ns = monotonic_ns()};
        w->on_flight(&info, w->on_flight_ctx);
    }
    if (kind == D9_SEGMENT_SEALED && w->on_sealed) {
        w->on_sealed(sealed, w->needs_symbols, symbols, w->on_sealed_ctx);
        symbols = NULL; /* the callee's now */
    }
    d9_sym_input_destroy(symbols);
}

static void end_segment(d9_segment_writer *w) {
    if (w->memory) {
        seal_memory(w);
        return;
    }
    if (w->fd < 0) return;
    if (w->size > 0) seal_segment(w);
    else discard_segment(w);
    atomic_store_explicit(&w->open_since, 0, memory_order_release); /* after on_flight heard of it */
}

void d9_segw_close(d9_segment_writer *w) {
    if (!w) return;
    if (!w->memory) (void)ensure_handles(w); /* memory mode has none to make */
    end_segment(w);
    /* not needed: the last words fit. Kept for the next run, or removed. */
    if (w->final_held && !d9_spare_return(w->trace_fd, w->run_fd, D9_SEGW_FINAL_RESERVE_NAME))
        (void)unlinkat(w->run_fd, D9_SEGW_FINAL_RESERVE_NAME, 0);
    /* A run that wrote nothing leaves no empty directory behind (rmdir keeps a non-empty one). */
    if (!w->memory && w->files.runs[w->run_slot].files == 0) (void)unlinkat(w->trace_fd, w->run_id, AT_REMOVEDIR);
    if (w->run_fd >= 0) close(w->run_fd);
    if (w->trace_fd >= 0) close(w->trace_fd);
    d9_tf_index_free(&w->files);
    d9_sym_input_destroy(w->symbols);
    free(w->trace_dir);
    free(w->run_id);
    pthread_mutex_destroy(&w->resize_lock);
    free(w->resizes);
    if (!w->mem || d9_crash_open_withdraw()) d9_segbuf_free(w->mem); /* else a crash dump reads it */
    free(w);
}

void d9_segw_set_on_sealed(d9_segment_writer *w, d9_segw_sealed_fn fn, void *ctx) {
    w->on_sealed = fn;
    w->on_sealed_ctx = ctx;
}

void d9_segw_note_needs_symbols(d9_segment_writer *w) {
    if (w->fd >= 0) w->needs_symbols = true;
}

void d9_segw_collect_symbols(d9_segment_writer *w) { w->collect_symbols = true; }

d9_sym_input *d9_segw_symbols(d9_segment_writer *w) {
    if (!w->collect_symbols) return NULL;
    if (!w->symbols && !(w->symbols = d9_sym_input_new()))
        w->symbols_lost = true; /* what this segment holds is no longer known here */
    return w->symbols;
}

void d9_segw_set_growth_reserve(d9_segment_writer *w, uint64_t bytes) {
    /* Never the whole segment: data must still fit. */
    w->growth_reserve = bytes < w->max_file_size / 2 ? bytes : w->max_file_size / 2;
}


void d9_segw_note_resized(d9_segment_writer *w, const char *path, uint64_t new_size) {
    const char *slash = strrchr(path, '/');
    uint64_t seq;
    d9_segment_kind kind;
    if (!slash || (size_t)(slash - path) != strlen(w->run_dir) || strncmp(path, w->run_dir, (size_t)(slash - path)) != 0 ||
        !d9_segment_name_parse(slash + 1, &seq, &kind) || kind != D9_SEGMENT_SEALED)
        return; /* not a sealed file of this run */
    pthread_mutex_lock(&w->resize_lock);
    if (w->nresizes == w->resizes_cap) {
        size_t cap = w->resizes_cap ? w->resizes_cap * 2 : 16;
        struct resize_note *n = realloc(w->resizes, cap * sizeof *n);
        if (n) {
            w->resizes = n;
            w->resizes_cap = cap;
        }
    }
    if (w->nresizes < w->resizes_cap) w->resizes[w->nresizes++] = (struct resize_note){seq, new_size};
    pthread_mutex_unlock(&w->resize_lock);
}

/* Count the new sizes of the sealed files that other threads changed. */
static void apply_resizes(d9_segment_writer *w) {
    pthread_mutex_lock(&w->resize_lock);
    for (size_t k = 0; k < w->nresizes; k++) {
        for (size_t i = w->files.head; i < w->files.end; i++) {
            d9_tf_entry *e = &w->files.entries[i];
            if (e->run != (uint32_t)w->run_slot || e->seq != w->resizes[k].seq || e->kind != D9_SEGMENT_SEALED) continue;
            w->files.bytes = w->files.bytes - e->size + w->resizes[k].size;
            e->size = w->resizes[k].size;
            break;
        }
    }
    w->nresizes = 0;
    pthread_mutex_unlock(&w->resize_lock);
}

uint64_t d9_segw_epoch(const d9_segment_writer *w) { return w->epoch; }

bool d9_segw_at_segment_start(const d9_segment_writer *w) { return w->size == 0; }

uint64_t d9_segw_room(const d9_segment_writer *w) {
    uint64_t limit = w->max_file_size - w->growth_reserve; /* the rest is for symbols */
    return w->size >= limit ? 0 : limit - w->size;
}

bool d9_segw_rotation_due(const d9_segment_writer *w, uint64_t now_mono_ns) {
    if (!(w->fd >= 0 || w->mem_open) || w->size == 0) return false;
    uint64_t seal_at = atomic_load_explicit(&w->seal_at, memory_order_relaxed);
    if (seal_at && now_mono_ns >= seal_at) return true; /* a dump's window ends */
    return w->rotation_ns != 0 && now_mono_ns >= w->opened_ns && now_mono_ns - w->opened_ns >= w->rotation_ns;
}

void d9_segw_rotate(d9_segment_writer *w) {
    uint64_t seal_at = atomic_load(&w->seal_at), now = monotonic_ns();
    if (seal_at && now >= seal_at) (void)atomic_compare_exchange_strong(&w->seal_at, &seal_at, 0);
    end_segment(w);
    w->epoch++;
}

/* The write's bytes are lost: count them, and change the epoch so the caller's next write
 * starts a new stream (its last frames may be missing from the file). */
static int lose_write(d9_segment_writer *w, size_t len) {
    w->symbols_lost = true; /* rare: the pipeline reads this segment to be sure */
    w->stats.bytes_lost += len;
    w->stats.write_errors++;
    w->epoch++;
    return -1;
}

/* A spare reserve left in the trace directory by an earlier run (spare_reserve.h), moved here:
 * its bytes were counted as the trace directory's, they are this run's now. */
static bool claim_spare(d9_segment_writer *w) {
    unsigned slots = 0;
    for (unsigned k = 0; k < D9_SPARE_SLOTS; k++)
        if (w->files.spare_bytes[k]) slots |= 1u << k;
    int k = slots ? d9_spare_claim(w->trace_fd, slots, w->run_fd, D9_SEGW_FINAL_RESERVE_NAME, w->final_reserve) : -1;
    /* the slots tried (in order, up to the one taken) are taken, gone or removed now */
    int last_tried = k < 0 ? D9_SPARE_SLOTS - 1 : k;
    for (int i = 0; i <= last_tried; i++) {
        w->files.pinned_bytes -= w->files.spare_bytes[i];
        w->files.spare_bytes[i] = 0;
    }
    if (k < 0) return false;
    if (atomic_load(&d9_files_owner)) { /* after a privilege drop's hand-over (hand_over_files.h) */
        int fd = openat(w->run_fd, D9_SEGW_FINAL_RESERVE_NAME, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd >= 0) {
            d9_files_owner_apply(fd);
            close(fd);
        }
    }
    return true;
}

/* Allocate the last words' room while there is space: a hidden file of final_reserve bytes
 * whose blocks are allocated now (posix_fallocate), so writing into it later needs none; or a
 * spare one, allocated so by an earlier run. */
static void hold_final_reserve(d9_segment_writer *w) {
    if (w->final_reserve == 0 || w->final_held) return;
    if (claim_spare(w)) {
        w->final_held = w->final_reserve;
        return;
    }
    int fd = -1;
    for (int attempt = 0; fd < 0 && attempt < 2; attempt++) { /* a leftover of ours is replaced */
        fd = openat(w->run_fd, D9_SEGW_FINAL_RESERVE_NAME, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                    D9_TRACE_FILE_MODE);
        if (fd < 0 && (errno != EEXIST || unlinkat(w->run_fd, D9_SEGW_FINAL_RESERVE_NAME, 0) != 0)) return;
    }
    if (fd < 0) return;
    d9_files_owner_apply(fd); /* after a privilege drop's hand-over (hand_over_files.h) */
    bool ok = posix_fallocate(fd, 0, (off_t)w->final_reserve) == 0;
    close(fd);
    if (ok) w->final_held = w->final_reserve;
    else (void)unlinkat(w->run_fd, D9_SEGW_FINAL_RESERVE_NAME, 0); /* no room now: tried again with the next segment */
}

/* The run directory was deleted under us: made again (and the trace directory, if it went
 * too), checked as at the start. 0 or -errno. */
static int recreate_run_dir(d9_segment_writer *w) {
    char why[1024];
    int fd = d9_run_dir_open(w->trace_fd, w->run_id, w->run_dir, why, sizeof why);
    if (fd < 0 && errno == ENOENT) { /* the trace directory went too */
        int tfd = d9_trace_dir_open(w->trace_dir, true, why, sizeof why);
        if (tfd < 0) return -errno;
        if (w->trace_fd >= 0) close(w->trace_fd); /* ours: ensure_handles checked it */
        w->trace_fd = tfd;
        note_handles(w);
        fd = d9_run_dir_open(w->trace_fd, w->run_id, w->run_dir, why, sizeof why);
    }
    if (fd < 0) return -errno;
    if (w->run_fd >= 0) close(w->run_fd);
    w->run_fd = fd;
    note_handles(w);
    return 0;
}

/* Create trace.{seq}.bin.active, recreating the run directory if it was deleted. 0 or -errno. */
static int open_segment(d9_segment_writer *w) {
    int rc = ensure_handles(w); /* a directory lost or never made (a full disk at start) */
    if (rc != 0) return rc;
    bool dirs_recreated = false;
    /* Bounded: one directory re-creation plus a few names taken by files we did not write. */
    for (int attempt = 0; attempt < 8; attempt++) {
        d9_tf_path(w->active_path, sizeof w->active_path, w->trace_dir, w->run_id, w->seq,
                   D9_SEGMENT_ACTIVE);
        d9_segment_name_format(w->active_name, sizeof w->active_name, w->seq, D9_SEGMENT_ACTIVE);
        int fd = openat(w->run_fd, w->active_name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                        D9_TRACE_FILE_MODE);
        if (fd >= 0) {
            d9_files_owner_apply(fd); /* after a privilege drop's hand-over (hand_over_files.h) */
            (void)d9_tf_lock_active(fd); /* advisory: tells other writers this file is live */
            struct stat st;
            if (fstat(fd, &st) == 0) {
                w->fd_dev = st.st_dev;
                w->fd_ino = st.st_ino;
            }
            w->fd = fd;
            w->size = 0;
            w->needs_symbols = false;
            w->opened_ns = monotonic_ns();
            w->opened_real_ns = realtime_ns();
            hold_final_reserve(w);
            return 0;
        }
        int e = errno;
        if (e == ENOENT && !dirs_recreated) {
            dirs_recreated = true;
            d9_tf_index_forget_vanished(&w->files); /* whatever went with the directory */
            w->final_held = 0;                      /* the reserve too */
            rc = recreate_run_dir(w);
            if (rc != 0) return rc;
        } else if (e == EEXIST) {
            w->seq++; /* never overwrite */
        } else {
            return -e;
        }
    }
    return -EEXIST;
}

/* A sealed file about to be deleted: its path now (.bin, else its .bin.gz or .bin.zst), size and start.
 * false when it is not one whose deletion loses an upload. */
static bool upload_pending(const d9_segment_writer *w, const d9_tf_entry *e, uint64_t *size, int64_t *start) {
    if (e->kind == D9_SEGMENT_ACTIVE) return false; /* never uploaded anyway */
    int rfd = d9_tf_run_fd(&w->files, e->run);
    if (rfd < 0) return false; /* gone */
    struct statx sx;
    char name[D9_SEGMENT_NAME_MAX];
    bool found = false;
    /* an earlier run: only one that was to be uploaded */
    struct stat id;
    if (e->run == (uint32_t)w->run_slot || fstatat(rfd, D9_RUN_IDENTITY_NAME, &id, AT_SYMLINK_NOFOLLOW) == 0) {
        d9_segment_name_format(name, sizeof name, e->seq, (d9_segment_kind)e->kind);
        found = statx(rfd, name, AT_SYMLINK_NOFOLLOW, STATX_SIZE | STATX_BTIME, &sx) == 0;
        for (size_t k = 0; !found && e->kind == D9_SEGMENT_SEALED && k < 2; k++) {
            d9_segment_name_format(name, sizeof name, e->seq, d9_tf_compressed_kinds[k]);
            found = statx(rfd, name, AT_SYMLINK_NOFOLLOW, STATX_SIZE | STATX_BTIME, &sx) == 0;
        }
    }
    d9_tf_run_fd_done(&w->files, rfd);
    if (!found) return false; /* gone: uploaded (and removed) already */
    *size = sx.stx_size;
    *start = e->start_ns ? e->start_ns
                         : (sx.stx_mask & STATX_BTIME) ? (int64_t)sx.stx_btime.tv_sec * 1000000000 + sx.stx_btime.tv_nsec
                                                       : e->mtime_ns;
    return true;
}

static void note_upload_loss(d9_segment_writer *w, const d9_tf_entry *e, uint64_t size, int64_t start) {
    d9_segw_upload_loss *l = &w->upload_loss;
    l->segments++;
    l->bytes += size;
    if (!l->first_start_ns || start < l->first_start_ns) l->first_start_ns = start;
    if (e->mtime_ns > l->last_end_ns) l->last_end_ns = e->mtime_ns;
    if (!w->upload_loss_said) {
        w->upload_loss_said = true;
        fprintf(stderr, "dial9: disk budget (DIAL9_MAX_DISK_USAGE_MB) full while S3 uploads wait: deleting the "
                        "oldest sealed segments not uploaded yet; the loss is counted in the trace "
                        "(UploadLossEvent, shown by dial9 stats)\n");
    }
}

/* Delete the oldest files until the open segment plus len bytes fit in max_total_size.
 * False when they cannot fit even with every deletable file gone. */
static bool make_room(d9_segment_writer *w, size_t len) {
    for (;;) {
        if (len > w->max_total_size) return false;
        /* The open segment as it will be counted once sealed (room for its symbols). */
        uint64_t kept = w->files.pinned_bytes + w->final_held + counted_size(w, w->size + len);
        if (kept > w->max_total_size || kept < w->size) return false;
        if (w->files.bytes <= w->max_total_size - kept) return true;
        /* runs the scan took from the ledger unchecked: checked before deleting by them */
        (void)ensure_handles(w); /* deleting: through handles that are still ours */
        if (d9_tf_index_check(&w->files)) continue;
        bool unlinked, pending = false;
        d9_tf_entry victim;
        uint64_t vsize = 0;
        int64_t vstart = 0;
        if (w->count_upload_loss && d9_tf_index_oldest(&w->files, &victim))
            pending = upload_pending(w, &victim, &vsize, &vstart);
        if (!d9_tf_index_delete_oldest(&w->files, w->run_id, &unlinked)) return false;
        if (unlinked) w->stats.files_deleted++;
        if (unlinked && pending) note_upload_loss(w, &victim, vsize, vstart);
    }
}

/* pwrite all of buf at off, continuing after short writes. 0 or -errno. */
static int pwrite_fully(int fd, const char *buf, size_t len, uint64_t off) {
    size_t done = 0;
    while (done < len) {
        ssize_t n = pwrite(fd, buf + done, len - done, (off_t)(off + done));
        if (n > 0) {
            done += (size_t)n;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else {
            return n < 0 ? -errno : -EIO;
        }
    }
    return 0;
}

/* The program closed our fd (close_range, a raw close syscall loop: nothing a shim can catch)
 * but the file is still there under its name: open it again by path, so the segment is
 * neither lost nor left unsealed. Only the very file we wrote, holding what we wrote. */
static bool reopen_segment(d9_segment_writer *w) {
    int fd = openat(w->run_fd, w->active_name, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return false;
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_dev != w->fd_dev || st.st_ino != w->fd_ino || st.st_nlink == 0 ||
        (uint64_t)st.st_size != w->size) {
        close(fd);
        return false;
    }
    (void)d9_tf_lock_active(fd); /* the lock went with the closed fd */
    w->fd = fd;
    w->stats.fds_reopened++;
    return true;
}

/* Before a write: when the program closed our fd, take the file back by path. If it cannot be
 * (deleted, replaced, changed), seal what is left of it under its name and let the next write
 * start a new segment: false when this write continues that stream and is lost. */
static bool recover_closed_fd(d9_segment_writer *w) {
    (void)ensure_handles(w); /* a program that closed one fd may have closed them all */
    struct stat st;
    w->fd = -1; /* the number may be the program's now: never close it */
    if (reopen_segment(w)) return true;
    if (w->size == 0) return true; /* nothing written: the next file takes these bytes */
    w->symbols_lost = true; /* the file may not be what we wrote */
    if (fstatat(w->run_fd, w->active_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_dev == w->fd_dev &&
        st.st_ino == w->fd_ino)
        seal_segment(w); /* by name: fd is -1, so nothing is closed */
    else
        w->seq++;        /* it is not ours any more: leave it, never reuse its N */
    w->size = 0;
    d9_tf_index_forget_vanished(&w->files);
    return false;
}

int d9_segw_write(d9_segment_writer *w, const void *buf, size_t len) {
    if (len == 0) return 0;
    if (w->memory) return write_memory(w, buf, len);
    apply_resizes(w);

    struct stat st;
    if (w->fd >= 0 && !fd_is_ours(w, &st)) {
        if (!recover_closed_fd(w)) return lose_write(w, len);
        st.st_nlink = 1; /* reopened by name: still linked */
    }
    if (w->fd >= 0 && st.st_nlink == 0) {
        /* Someone removed the file or its directory. Its bytes are gone; the next file must
         * start with a new stream, which these bytes (a continuation) are not. */
        bool had_bytes = w->size > 0;
        close(w->fd);
        w->fd = -1;
        w->size = 0;
        d9_tf_index_forget_vanished(&w->files);
        if (had_bytes) {
            w->seq++;
            return lose_write(w, len);
        }
        /* An empty segment: these bytes start a stream, so a fresh file can take them. */
    }

    if (w->size > 0 && len > d9_segw_room(w)) {
        /* The caller overran the segment. Its bytes continue the current stream, so they cannot
         * open the next file either: drop them and rotate, so that the retry fits. */
        seal_segment(w);
        return lose_write(w, len);
    }

    uint64_t kept = w->files.pinned_bytes + w->final_held + w->size + len;
    if (len > w->max_total_size || kept > w->max_total_size) {
        w->stats.last_write_errno = 0; /* the budget, not the disk */
        return lose_write(w, len);
    }
    int rc = w->fd < 0 ? open_segment(w) : 0;
    if (rc != 0) {
        w->stats.last_write_errno = -rc;
        return lose_write(w, len);
    }
    if (!make_room(w, len)) {
        w->stats.last_write_errno = 0;
        return lose_write(w, len);
    }

    if ((rc = pwrite_fully(w->fd, buf, len, w->size)) != 0) {
        w->stats.last_write_errno = -rc;
        /* Cut any partial bytes off so the file still ends at the last complete write. */
        if (ftruncate(w->fd, (off_t)w->size) != 0) {
            w->symbols_lost = true; /* a partial write stays in it */
            end_segment(w);         /* this file ends here */
        }
        return lose_write(w, len);
    }
    if (w->size == 0) atomic_store_explicit(&w->open_since, w->opened_ns, memory_order_release);
    w->size += len;
    w->stats.bytes_written += len;
    return 0;
}

void d9_segw_get_stats(const d9_segment_writer *w, d9_segw_stats *out) {
    *out = w->stats;
    out->bytes_on_disk = w->files.bytes + w->files.pinned_bytes + w->final_held + (w->fd >= 0 ? w->size : 0);
}

void d9_segw_set_final_reserve(d9_segment_writer *w, uint64_t bytes) {
    /* Only what the budget can spare beside one full segment. */
    uint64_t spare = w->max_total_size - w->max_file_size;
    w->final_reserve = bytes < spare ? bytes : spare;
}

bool d9_segw_has_final_reserve(const d9_segment_writer *w) { return w->final_held > 0; }

int d9_segw_write_final(d9_segment_writer *w, const void *buf, size_t len) {
    if (w->final_held == 0 || len == 0 || w->memory) return -1;
    end_segment(w); /* the last words come after everything else */
    (void)ensure_handles(w);
    /* By path: the program may have closed every fd. Only our own reserve, as we left it. */
    int fd = openat(w->run_fd, D9_SEGW_FINAL_RESERVE_NAME, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != w->final_held) {
        if (fd >= 0) close(fd);
        w->final_held = 0;
        return -1;
    }
    /* Into the allocated blocks (beyond them only if there is space); shrinking needs none. */
    bool ok = pwrite_fully(fd, buf, len, 0) == 0 && ftruncate(fd, (off_t)len) == 0;
    close(fd);
    if (!ok) return -1;
    w->final_held = 0;
    char sealed[PATH_MAX], sealed_name[D9_SEGMENT_NAME_MAX];
    for (int attempt = 0; attempt < 8; attempt++, w->seq++) {
        d9_tf_path(sealed, sizeof sealed, w->trace_dir, w->run_id, w->seq, D9_SEGMENT_SEALED);
        d9_segment_name_format(sealed_name, sizeof sealed_name, w->seq, D9_SEGMENT_SEALED);
        if (rename_noreplace(w->run_fd, D9_SEGW_FINAL_RESERVE_NAME, sealed_name) == 0) {
            d9_tf_index_add(&w->files, w->run_slot, w->seq++, D9_SEGMENT_SEALED, len, realtime_ns(), realtime_ns());
            w->stats.segments_sealed++;
            w->stats.bytes_written += len;
            w->epoch++;
            /* through the pipeline like any sealed segment (d9_pipeline_stop's wait bounds it) */
            if (w->on_sealed) w->on_sealed(sealed, false, NULL, w->on_sealed_ctx); /* counts, no stacks */
            return 0;
        }
        if (errno != EEXIST) break;
    }
    (void)unlinkat(w->run_fd, D9_SEGW_FINAL_RESERVE_NAME, 0);
    return -1;
}

const char *d9_segw_run_dir(const d9_segment_writer *w) { return w->run_dir; }

int d9_segw_run_dir_fd(const d9_segment_writer *w) { return w->run_fd; }

void d9_segw_set_count_upload_loss(d9_segment_writer *w, bool on) { w->count_upload_loss = on; }

void d9_segw_get_upload_loss(const d9_segment_writer *w, d9_segw_upload_loss *out) { *out = w->upload_loss; }

const char *d9_segw_active_path(const d9_segment_writer *w) {
    return w->fd >= 0 ? w->active_path : NULL;
}
