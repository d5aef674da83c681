/* The sealed-segment pipeline. The collector thread only queues a copy of each sealed path;
 * threads of the lowest scheduling class (SCHED_IDLE, else nice 19) run the configured steps
 * on the files in order. The preparing thread symbolizes (step_symbolize.c) and compresses
 * (step_compress.c) each file; when uploading, a thread of its own uploads the prepared files
 * (step_upload.c, retried with backoff until stored, then the local file is deleted), so an
 * outage holds up uploads only: the segments queued behind it are compressed meanwhile and
 * take their compressed size on disk while they wait.
 * d9_pipeline_stop lifts the threads back to normal priority, lets them finish the queue within
 * its budget and then makes them give up (what is left stays on disk: `dial9 symbolize` can
 * name it offline; unuploaded files stay where they are).
 *
 * Without uploads, the preparing thread is created at the first segment sealed during the
 * run: a short program whose only segment is sealed at its end creates none, and
 * d9_pipeline_stop prepares that segment on the stopping thread, under the same budget (the
 * caller waits for it either way; a thread of its own would only add its creation, its
 * malloc arena and the hand-overs to a start-up that must stay within a few ms). */
#include "sinks/pipeline.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/own_thread_name.h"
#include "sinks/left_on_disk.h"
#include "sinks/run_claim.h"
#include "sinks/step_compress.h"
#include "sinks/step_symbolize.h"
#include "sinks/step_tables.h"
#include "sinks/step_upload.h"
#include "sinks/trace_files.h"
#include "sinks/upload_retry.h"
#include "symbols/symbolize_report.h"

#define QUEUE_CAP 256 /* paths; a longer backlog means the steps cannot keep up */

/* A queued segment: sealed by the writer, then prepared (symbols, compression), then uploaded. */
typedef struct entry {
    char *sealed;  /* the name the writer sealed it under (the disk budget's name for it) */
    char *current; /* after preparing: the file to upload (sealed or its .gz), NULL: nothing */
    uint64_t seq;
    time_t start;
    bool needs_symbols; /* it holds stacks (the writer's word at the seal) */
    d9_sym_input *symbols; /* what it holds to name, as the writer listed it; NULL: read the file */
} entry;

struct d9_pipeline {
    pthread_t thread;        /* prepares: symbolize, compress */
    pthread_t upload_thread; /* uploads (only when uploading) */
    pthread_mutex_t lock;
    pthread_cond_t wake;     /* a segment queued, or stop requested */
    pthread_cond_t prepared_cv; /* a segment prepared, or the preparing thread ended */
    pthread_cond_t idle;     /* the queue drained or a thread ended */
    /* Counts since the start, the ring index of an entry being its count % QUEUE_CAP:
     * taken <= prepared <= pushed, pushed - taken <= QUEUE_CAP. [taken, prepared) wait for
     * the uploader (the one at `taken` is being uploaded), [prepared, pushed) for preparing. */
    entry queue[QUEUE_CAP];
    uint64_t pushed, prepared, taken;
    bool stopping, prepare_finished, upload_finished;
    bool upload_quit;        /* the uploader quit at exit: S3 failing (upload_retry.h) */
    atomic_bool give_up;
    atomic_bool exiting;     /* d9_pipeline_stop began: a failing S3 is not waited for */
    bool thread_started;  /* the preparing thread (eager when uploading, else at the first seal) */
    bool closing;         /* d9_pipeline_closing: later seals are prepared by d9_pipeline_stop */
    uint64_t inline_deadline_ns; /* d9_pipeline_stop preparing on its own thread: CLOCK_MONOTONIC */
    d9_step_symbolize *sym; /* the preparing thread's only; NULL when not symbolizing */
    bool symbolizing, upload;
    d9_compress_mode compress; /* as configured; D9_COMPRESS_NONE: not compressing */
    d9_compress_mode prepare_compress; /* the preparing thread's: NONE when its library is missing */
    d9_config upload_cfg;   /* strings owned below, for the uploader the uploading thread creates */
    char *bucket, *prefix, *region, *endpoint, *service;
    d9_upload_retry up;     /* the uploading thread's only; up.uploader NULL when not (or no longer) uploading */
    uint64_t prepare_budget_ns; /* at stop: symbols and compression (DIAL9_SYMBOLIZE_EXIT_WAIT_SECS) */
    uint64_t stop_budget_ns;    /* at stop, everything: that plus DIAL9_S3_EXIT_WAIT_SECS when uploading */
    char *trace_dir, *run_dir; /* d9_pipeline_set_run */
    int run_fd;                /* the run directory's handle (d9_pipeline_set_run_fd), -1: none */
    dev_t run_dev;             /* what it was opened on (dir_of) */
    ino_t run_ino;
    char run_boot_id[D9_RUN_BOOT_ID_MAX]; /* this run's id in the keys (run_claim.h), "" before */
    int run_lock_fd;           /* our run directory's claim (run_claim.h), -1 when none */
    bool claim_at_seal;        /* the directory did not exist yet (a full disk at start): claimed
                                  at the first seal, so that what is left is adopted later */
    bool leftovers_pending;    /* earlier runs' segments to adopt, once, first */
    d9_pipeline_resized_fn on_resized;
    void *on_resized_ctx;
    uint64_t max_file_size; /* symbols never take a segment past it */
    uint64_t max_growth;    /* nor grow it by more than this */
};

static bool should_give_up(void *ctx) {
    d9_pipeline *p = ctx;
    if (atomic_load_explicit(&p->give_up, memory_order_relaxed)) return true;
    /* set only on the stopping thread, which then is the only one preparing */
    return p->inline_deadline_ns && d9_mono_ns() >= p->inline_deadline_ns;
}

/* At exit an S3 that fails is not waited for: its files stay on disk for the next start or
 * `dial9 upload` (the uploading thread's upload_retry asks). */
static bool exiting(void *ctx) {
    d9_pipeline *p = ctx;
    return atomic_load_explicit(&p->exiting, memory_order_relaxed);
}

static void lower_priority(void) {
    struct sched_param sp = {.sched_priority = 0};
    if (pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp) != 0)
        setpriority(PRIO_PROCESS, (id_t)gettid(), 19); /* per thread on Linux */
}

/* Under the lock: a stop that came first has already asked for normal priority. */
static void start_thread_life(d9_pipeline *p, const char *name) {
    d9_name_own_thread(name);
    pthread_mutex_lock(&p->lock);
    if (!p->stopping) lower_priority();
    pthread_mutex_unlock(&p->lock);
}

/* Called from both threads; the recorder's callback takes its own lock. */
static void report_size(d9_pipeline *p, const char *sealed_path, uint64_t size) {
    if (p->on_resized) p->on_resized(sealed_path, size, p->on_resized_ctx);
}

static void report_resized(const char *sealed_path, uint64_t size, void *ctx) { report_size(ctx, sealed_path, size); }

/* Upload until stored (then the local file is deleted), a fatal answer, or give up. */
static void say_fatal(const d9_pipeline *p) {
    fprintf(stderr, "dial9: S3 upload stopped for this run: %s (sealed segments stay on disk; once this is "
                    "fixed, the next start with this trace directory or `dial9 upload %s` uploads them)\n",
            p->up.fatal, p->trace_dir ? p->trace_dir : "DIR");
}

static void upload_file(d9_pipeline *p, const entry *e) {
    char boot[D9_RUN_BOOT_ID_MAX];
    pthread_mutex_lock(&p->lock);
    memcpy(boot, p->run_boot_id, sizeof boot);
    pthread_mutex_unlock(&p->lock);
    d9_upload_retry_file(&p->up, e->sealed, e->current, e->seq, e->start, NULL, boot[0] ? boot : NULL);
    if (!p->up.uploader) say_fatal(p);
}

/* A sealed file's directory handle and its name there: the run directory's, never a path
 * another user could redirect (trace_dir.h); by path only when no handle was given. */
static bool run_fd_ours(const d9_pipeline *p) {
    struct stat st;
    /* the program may have closed it (a raw close loop, close_range) and have the number now */
    return p->run_fd >= 0 && fstat(p->run_fd, &st) == 0 && st.st_dev == p->run_dev && st.st_ino == p->run_ino;
}

static int dir_of(const d9_pipeline *p, const char *path, const char **name) {
    const char *slash = strrchr(path, '/');
    if (!slash || !run_fd_ours(p)) {
        *name = path;
        return AT_FDCWD;
    }
    *name = slash + 1;
    return p->run_fd;
}

static bool gone(const d9_pipeline *p, const char *path) {
    struct stat st;
    const char *name;
    int dfd = dir_of(p, path, &name);
    return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT;
}

/* Symbolize and compress e->sealed; e->current is what is left to upload (NULL: nothing). */
static void prepare(d9_pipeline *p, entry *e) {
    const char *sealed_path = e->sealed;
    const char *slash = strrchr(sealed_path, '/');
    d9_segment_kind kind;
    if (!d9_segment_name_parse(slash ? slash + 1 : sealed_path, &e->seq, &kind)) e->seq = 0;
    if (gone(p, sealed_path)) { /* the disk budget deleted it while it waited (counted in-band) */
        report_size(p, sealed_path, 0);
        return;
    }
    e->start = d9_segment_start_time(sealed_path);
    const char *sealed_name;
    int dfd = dir_of(p, sealed_path, &sealed_name);
    if (p->sym && e->needs_symbols) {
        d9_step_symbolize_run(p->sym, dfd, sealed_name, e->symbols, should_give_up, p);
        d9_sym_input_destroy(e->symbols); /* not held while the file waits for its upload */
        e->symbols = NULL;
    } else if (p->sym) { /* no stack in it: nothing to name, the file is complete as it is */
        d9_symbolize_report r = {.files_symbolized = 1};
        d9_symbolize_report_add(&r);
    }
    char out[4096];
    const char *current = sealed_path, *current_name = sealed_name;
    if (p->prepare_compress != D9_COMPRESS_NONE && !should_give_up(p)) {
        char err[512];
        uint64_t out_size;
        if (d9_step_compress(dfd, sealed_name, p->prepare_compress, out, sizeof out, &out_size, should_give_up, p,
                             err, sizeof err) == 0) {
            /* out: the name in the same directory as sealed_path; current: its path */
            snprintf(out, sizeof out, "%s%s", sealed_path, d9_compress_suffix(p->prepare_compress));
            current = out;
            current_name = dfd == AT_FDCWD ? out : out + (sealed_name - sealed_path);
        } else if (!should_give_up(p) && !gone(p, sealed_path)) {
            fprintf(stderr, "dial9: compressing %s failed, kept as it is: %s\n", sealed_path, err);
        }
    }
    /* Done with the file's size, whatever happened: the writer's disk budget counts it as it
     * is from now on (it held room for the symbols until now). */
    struct stat sb;
    if (fstatat(dfd, current_name, &sb, AT_SYMLINK_NOFOLLOW) == 0) report_size(p, sealed_path, (uint64_t)sb.st_size);
    if (p->upload) e->current = strdup(current); /* NULL when out of memory: stays on disk */
}

/* A dead run's sealed segments, under that run's service and boot id (upload_retry.h). */
static bool adopt_run(const char *run_dir, const char *service, const char *boot_id, void *ctx) {
    d9_pipeline *p = ctx;
    bool go_on = d9_upload_retry_run_dir(&p->up, run_dir, service, boot_id);
    if (!p->up.uploader && p->up.fatal[0]) say_fatal(p);
    return go_on;
}

static void adopt_leftovers(d9_pipeline *p) {
    if (!p->up.uploader || !p->trace_dir) return;
    const char *own = p->run_dir ? strrchr(p->run_dir, '/') : NULL;
    d9_run_adopt_each(p->trace_dir, own ? own + 1 : NULL, adopt_run, p);
}

static void free_entry(entry *e) {
    free(e->sealed);
    free(e->current);
    d9_sym_input_destroy(e->symbols);
    memset(e, 0, sizeof *e);
}

/* The compressor's library, loaded by whoever prepares first (the preparing thread, off the
 * application's threads, unless the run ended before any segment was sealed). */
static void choose_compression(d9_pipeline *p) {
    const char *why = d9_compress_unavailable(p->compress);
    p->prepare_compress = why ? D9_COMPRESS_NONE : p->compress;
    if (why) fprintf(stderr, "dial9: compressing sealed segments with %s: %s: they stay uncompressed\n",
                     p->compress == D9_COMPRESS_ZSTD ? "zstd" : "gzip", why);
}

/* Under the lock, with a segment queued: prepare the oldest (the lock dropped meanwhile). */
static void prepare_oldest(d9_pipeline *p) {
    entry *e = &p->queue[p->prepared % QUEUE_CAP];
    pthread_mutex_unlock(&p->lock);
    if (should_give_up(p)) {
        d9_symbolize_report r = {.files_skipped = p->symbolizing ? 1 : 0};
        d9_symbolize_report_add(&r);
    } else {
        prepare(p, e);
    }
    pthread_mutex_lock(&p->lock);
    p->prepared++;
    if (!p->upload) { /* nothing more to do with it */
        free_entry(e);
        p->taken++;
    }
    pthread_cond_signal(&p->prepared_cv);
}

static void *prepare_main(void *arg) {
    d9_pipeline *p = arg;
    start_thread_life(p, "dial9-pipeline");
    choose_compression(p);
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (p->prepared == p->pushed && !p->stopping) {
            pthread_cond_broadcast(&p->idle);
            pthread_cond_wait(&p->wake, &p->lock);
        }
        if (p->prepared == p->pushed) break; /* stopping with nothing left */
        prepare_oldest(p);
    }
    p->prepare_finished = true;
    pthread_cond_signal(&p->prepared_cv);
    pthread_cond_broadcast(&p->idle);
    pthread_mutex_unlock(&p->lock);
    d9_step_symbolize_free(p->sym);
    p->sym = NULL;
    return NULL;
}

/* Under the lock, on the uploading thread: the uploader quit (S3 failing at exit), so the stop
 * waits for the symbols' time only from now on. */
static void note_quit(d9_pipeline *p) {
    if (!p->up.pace.quit || p->upload_quit) return;
    p->upload_quit = true;
    pthread_cond_broadcast(&p->idle);
}

static void *upload_main(void *arg) {
    d9_pipeline *p = arg;
    start_thread_life(p, "dial9-upload");
    char err[512];
    d9_uploader *u = d9_uploader_new(&p->upload_cfg, err, sizeof err);
    d9_upload_retry_init(&p->up, u, "dial9");
    if (u) p->up.tables = d9_tables_step_new(p->upload_cfg.s3_bucket, p->upload_cfg.s3_prefix);
    p->up.compress = d9_compress_unavailable(p->compress) ? D9_COMPRESS_NONE : p->compress; /* said once, above */
    p->up.pace.give_up = should_give_up;
    p->up.pace.not_waiting = exiting;
    p->up.pace.ctx = p;
    p->up.on_resized = report_resized;
    if (!u) fprintf(stderr, "dial9: S3 upload disabled: %s (sealed segments stay on disk)\n", err);
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (p->taken == p->prepared && !p->prepare_finished && !p->leftovers_pending) {
            pthread_cond_broadcast(&p->idle);
            pthread_cond_wait(&p->prepared_cv, &p->lock);
        }
        if (p->leftovers_pending) { /* also at stop: the stop budget bounds it */
            p->leftovers_pending = false;
            pthread_mutex_unlock(&p->lock);
            adopt_leftovers(p);
            pthread_mutex_lock(&p->lock);
            note_quit(p);
            continue;
        }
        if (p->taken == p->prepared) break; /* the preparing thread ended, nothing left */
        entry *e = &p->queue[p->taken % QUEUE_CAP]; /* stays queued (its slot held) until done */
        pthread_mutex_unlock(&p->lock);
        if (e->current && p->up.uploader && !p->up.pace.quit && !should_give_up(p)) upload_file(p, e);
        pthread_mutex_lock(&p->lock);
        free_entry(e);
        p->taken++;
        note_quit(p);
    }
    p->upload_finished = true;
    pthread_cond_broadcast(&p->idle);
    pthread_mutex_unlock(&p->lock);
    d9_upload_retry_free(&p->up);
    return NULL;
}

/* The application's signals must not reach our threads. 0 or an errno. */
static int create_thread(pthread_t *th, void *(*fn)(void *), d9_pipeline *p) {
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(th, NULL, fn, p);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

static void free_strings(d9_pipeline *p) {
    free(p->trace_dir);
    free(p->run_dir);
    free(p->bucket);
    free(p->prefix);
    free(p->region);
    free(p->endpoint);
    free(p->service);
}

static char *dup_or_null(const char *s, bool *ok) {
    if (!s) return NULL;
    char *d = strdup(s);
    if (!d) *ok = false;
    return d;
}

d9_pipeline *d9_pipeline_start(const d9_config *cfg) {
    bool upload = cfg->s3_bucket != NULL;
    d9_compress_mode compress = cfg->compress == D9_COMPRESS_AUTO ? (upload ? D9_COMPRESS_GZIP : D9_COMPRESS_NONE)
                                                                  : cfg->compress;
    if (!cfg->symbolize && compress == D9_COMPRESS_NONE && !upload) return NULL;
    d9_symbolize_report_reset();
    d9_pipeline *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->max_file_size = cfg->max_file_size;
    p->compress = compress;
    p->symbolizing = cfg->symbolize;
    p->upload = upload;
    p->run_lock_fd = -1;
    p->run_fd = -1;
    /* At stop: the symbols' wait, then the uploads' (the two budgets add up while S3 works;
     * once it fails, the symbols' wait alone) */
    p->prepare_budget_ns = (uint64_t)cfg->symbolize_exit_wait_secs * 1000000000ull;
    p->stop_budget_ns = p->prepare_budget_ns + (upload ? (uint64_t)cfg->s3_exit_wait_secs * 1000000000ull : 0);
    bool ok = true;
    p->upload_cfg = *cfg;
    p->upload_cfg.s3_bucket = p->bucket = dup_or_null(cfg->s3_bucket, &ok);
    p->upload_cfg.s3_prefix = p->prefix = dup_or_null(cfg->s3_prefix, &ok);
    p->upload_cfg.s3_region = p->region = dup_or_null(cfg->s3_region, &ok);
    p->upload_cfg.s3_endpoint = p->endpoint = dup_or_null(cfg->s3_endpoint, &ok);
    p->upload_cfg.service = p->service = dup_or_null(cfg->service, &ok);
    p->upload_cfg.trace_dir = NULL; /* not the uploader's business */
    if (cfg->symbolize) {
        /* Symbols take a few KB per segment: 1/32 of a large one is plenty, up to half of a
         * small one (what does not fit can still be named offline by `dial9 symbolize -o`). */
        uint64_t growth = cfg->max_file_size / 32;
        if (growth < 65536) growth = cfg->max_file_size / 2 < 65536 ? cfg->max_file_size / 2 : 65536;
        p->max_growth = growth ? growth : 1;
        p->sym = d9_step_symbolize_new(cfg->max_file_size, p->max_growth);
        if (!p->sym) ok = false;
    }
    if (!ok) {
        d9_step_symbolize_free(p->sym);
        free_strings(p);
        free(p);
        return NULL;
    }
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->prepared_cv, NULL);
    /* d9_pipeline_stop's deadline must not move with the wall clock. */
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&p->idle, &attr);
    pthread_condattr_destroy(&attr);
    atomic_init(&p->give_up, false);
    atomic_init(&p->exiting, false);
    /* Uploading: both threads now (earlier runs' leftovers are uploaded from the start). */
    int rc = upload ? create_thread(&p->upload_thread, upload_main, p) : 0;
    if (rc == 0 && upload) {
        rc = create_thread(&p->thread, prepare_main, p);
        p->thread_started = rc == 0;
        if (rc != 0) { /* end the uploader: nothing will be prepared */
            pthread_mutex_lock(&p->lock);
            p->prepare_finished = true;
            atomic_store(&p->give_up, true);
            pthread_cond_signal(&p->prepared_cv);
            pthread_mutex_unlock(&p->lock);
            pthread_join(p->upload_thread, NULL);
        }
    }
    if (rc != 0) {
        pthread_mutex_destroy(&p->lock);
        pthread_cond_destroy(&p->wake);
        pthread_cond_destroy(&p->prepared_cv);
        pthread_cond_destroy(&p->idle);
        d9_step_symbolize_free(p->sym);
        free_strings(p);
        free(p);
        return NULL;
    }
    return p;
}

/* The run directory the segment writer created after a full disk at the start: opened by its
 * path (the writer checked the trace directory above it, trace_dir.h; the last name is not
 * followed) and kept only when it is ours and no one else may write in it. Under p->lock. */
static void take_run_fd(d9_pipeline *p) {
    int fd = open(p->run_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0) return;
    if (fstat(fd, &st) != 0 || st.st_uid != geteuid() || (st.st_mode & 022)) {
        close(fd);
        return;
    }
    if (run_fd_ours(p)) close(p->run_fd);
    p->run_fd = fd;
    p->run_dev = st.st_dev;
    p->run_ino = st.st_ino;
}

void d9_pipeline_set_run(d9_pipeline *p, const char *trace_dir, const char *run_dir) {
    if (!p || !p->upload) return;
    char *td = strdup(trace_dir), *rd = strdup(run_dir);
    char boot[D9_RUN_BOOT_ID_MAX];
    d9_run_boot_id(run_dir, boot, sizeof boot);
    /* through the run directory's handle (trace_dir.h); without it, what this run leaves
     * behind is not adopted later; nothing else changes. No handle yet (a full disk at the
     * start left no directory): claimed at the first seal. */
    bool later = !run_fd_ours(p);
    int fd = later ? -1 : d9_run_claim_at(p->run_fd, ".");
    if (fd >= 0) d9_run_identity_write(p->run_fd, p->service ? p->service : "unknown", boot);
    pthread_mutex_lock(&p->lock);
    p->claim_at_seal = later;
    memcpy(p->run_boot_id, boot, sizeof boot);
    p->trace_dir = td;
    p->run_dir = rd;
    p->run_lock_fd = fd;
    p->leftovers_pending = td && rd;
    pthread_cond_signal(&p->prepared_cv); /* the uploading thread adopts them */
    pthread_mutex_unlock(&p->lock);
}

void d9_pipeline_set_run_fd(d9_pipeline *p, int run_fd) {
    if (!p || run_fd < 0) return;
    int fd = fcntl(run_fd, F_DUPFD_CLOEXEC, 0);
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) != 0) {
        close(fd);
        fd = -1;
    }
    pthread_mutex_lock(&p->lock);
    p->run_fd = fd;
    if (fd >= 0) {
        p->run_dev = st.st_dev;
        p->run_ino = st.st_ino;
    }
    pthread_mutex_unlock(&p->lock);
}

uint64_t d9_pipeline_max_growth(const d9_pipeline *p) { return p ? p->max_growth : 0; }

void d9_pipeline_set_on_resized(d9_pipeline *p, d9_pipeline_resized_fn fn, void *ctx) {
    if (!p) return;
    pthread_mutex_lock(&p->lock);
    p->on_resized = fn;
    p->on_resized_ctx = ctx;
    pthread_mutex_unlock(&p->lock);
}

void d9_pipeline_on_sealed(const char *path, bool needs_symbols, d9_sym_input *symbols, void *pipeline) {
    d9_pipeline *p = pipeline;
    char *copy = strdup(path);
    pthread_mutex_lock(&p->lock);
    if (p->claim_at_seal && p->run_dir) { /* the run directory exists now: claim it, say whose it is */
        p->claim_at_seal = false;
        take_run_fd(p);
        p->run_lock_fd = run_fd_ours(p) ? d9_run_claim_at(p->run_fd, ".") : -1;
        if (p->run_lock_fd >= 0) d9_run_identity_write(p->run_fd, p->service ? p->service : "unknown", p->run_boot_id);
    }
    if (!copy || p->pushed - p->taken == QUEUE_CAP || p->prepare_finished) {
        /* left on disk as sealed; uploads of it are not attempted in this run */
        d9_symbolize_report r = {.files_dropped = p->symbolizing ? 1 : 0};
        d9_symbolize_report_add(&r);
        free(copy);
        d9_sym_input_destroy(symbols);
    } else {
        if (!p->symbolizing) { /* the list is of no use */
            d9_sym_input_destroy(symbols);
            symbols = NULL;
        }
        p->queue[p->pushed % QUEUE_CAP] = (entry){.sealed = copy, .needs_symbols = needs_symbols, .symbols = symbols};
        p->pushed++;
        /* the first seal of a run still going on: the preparing thread from now on (if it
         * cannot be created, the queue waits for d9_pipeline_stop) */
        if (!p->thread_started && !p->closing) p->thread_started = create_thread(&p->thread, prepare_main, p) == 0;
        pthread_cond_signal(&p->wake);
    }
    pthread_mutex_unlock(&p->lock);
}

void d9_pipeline_closing(d9_pipeline *p) {
    if (!p) return;
    pthread_mutex_lock(&p->lock);
    p->closing = true;
    pthread_mutex_unlock(&p->lock);
}

static void finish_stop(d9_pipeline *p);

/* d9_pipeline_stop without a preparing thread: the queue prepared here, by the deadline. */
static void prepare_inline(d9_pipeline *p, uint64_t budget_ns) {
    pthread_mutex_lock(&p->lock);
    p->stopping = true;
    bool any = p->prepared != p->pushed;
    pthread_mutex_unlock(&p->lock);
    if (any) {
        p->inline_deadline_ns = d9_mono_ns() + budget_ns;
        if (p->inline_deadline_ns == 0) p->inline_deadline_ns = 1;
        choose_compression(p);
    }
    pthread_mutex_lock(&p->lock);
    while (p->prepared != p->pushed) prepare_oldest(p);
    p->prepare_finished = true;
    pthread_mutex_unlock(&p->lock);
    d9_step_symbolize_free(p->sym);
    p->sym = NULL;
}

static void deadline_after(struct timespec *ts, uint64_t ns) {
    clock_gettime(CLOCK_MONOTONIC, ts); /* the clock of the idle condition */
    uint64_t t = (uint64_t)ts->tv_nsec + ns;
    ts->tv_sec += (time_t)(t / 1000000000u);
    ts->tv_nsec = (long)(t % 1000000000u);
}

void d9_pipeline_stop(d9_pipeline *p) {
    if (!p) return;
    if (!p->thread_started) { /* never uploading: no thread at all */
        prepare_inline(p, p->stop_budget_ns);
        finish_stop(p);
        return;
    }
    struct timespec until, prepared_until;
    deadline_after(&until, p->stop_budget_ns);
    deadline_after(&prepared_until, p->prepare_budget_ns);
    atomic_store_explicit(&p->exiting, true, memory_order_relaxed);
    pthread_mutex_lock(&p->lock);
    p->stopping = true;
    /* The caller waits for us now: SCHED_IDLE could starve on a busy machine. (Where only
     * nice 19 could be set, an unprivileged thread cannot undo it.) */
    struct sched_param sp = {.sched_priority = 0};
    pthread_setschedparam(p->thread, SCHED_OTHER, &sp);
    if (p->upload) pthread_setschedparam(p->upload_thread, SCHED_OTHER, &sp);
    pthread_cond_signal(&p->wake);
    pthread_cond_signal(&p->prepared_cv);
    while (!p->prepare_finished || (p->upload && !p->upload_finished)) {
        /* S3 failing: nothing prepared now would be uploaded, symbols get their own wait only */
        if (pthread_cond_timedwait(&p->idle, &p->lock, p->upload_quit ? &prepared_until : &until) != 0 &&
            (!p->prepare_finished || (p->upload && !p->upload_finished))) {
            atomic_store(&p->give_up, true); /* out of time: skip what is left */
            break;
        }
    }
    pthread_mutex_unlock(&p->lock);
    pthread_join(p->thread, NULL);
    if (p->upload) pthread_join(p->upload_thread, NULL);
    finish_stop(p);
}

/* The queue prepared (or given up on) and the threads ended: report and free. */
static void finish_stop(d9_pipeline *p) {
    d9_symbolize_report r = {.files_skipped = p->symbolizing ? p->pushed - p->prepared : 0};
    d9_symbolize_report_add(&r);
    d9_symbolize_report_get(&r);
    if (r.files_skipped > 0) /* the user can still name them: say which run */
        fprintf(stderr, "dial9: symbols not added in the time allowed at exit: %llu sealed segment(s) of %s "
                        "left without them (dial9 symbolize names them offline)\n",
                (unsigned long long)r.files_skipped, p->run_dir ? p->run_dir : "this run");
    for (uint64_t i = p->taken; i < p->pushed; i++) free_entry(&p->queue[i % QUEUE_CAP]);
    /* every file an outage or the exit wait left, not only the one being uploaded then */
    if (p->upload) d9_say_left_on_disk(stderr, "dial9", p->run_dir, p->trace_dir);
    if (p->run_lock_fd >= 0) {
        d9_run_release_if_empty(p->run_dir); /* all uploaded: nothing for a later start to adopt */
        close(p->run_lock_fd);
    }
    if (run_fd_ours(p)) close(p->run_fd); /* else the number is not ours to close any more */
    free_strings(p);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->prepared_cv);
    pthread_cond_destroy(&p->idle);
    free(p);
}
