/* The flight recorder's thread, store and dump policy (flight_recorder.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "core/flight_recorder.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/json_writer.h"
#include "common/segment_name.h"
#include "core/collector_wake.h"
#include "core/flight_control.h"
#include "core/flight_crash.h"
#include "core/flight_dump.h"
#include "core/flight_rule_check.h"
#include "core/flight_rule_wake.h"
#include "core/flight_upload.h"
#include "core/last_error.h"
#include "core/own_thread_name.h"
#include "dial9/dial9.h"
#include "sinks/segment_buffer.h"
#include "sinks/step_dump_symbolize.h"
#include "sinks/trace_files.h"

/* A sealed segment as the flight thread keeps it: its bytes (memory mode) or its file's
 * sequence number (disk: the name is trace.{seq}.bin, or the compressed one since). */
typedef struct seg {
    uint64_t seq, start_ns, end_ns;
    uint8_t *bytes;
    size_t len;
    bool on_disk;
    d9_sym_input *symbols; /* memory mode: what it holds to name, as the writer listed it */
} seg;

typedef struct seg_list {
    seg *items;
    size_t count, cap;
} seg_list;

/* One dump under way: its directory is made and the segments of its window so far are in it. */
typedef struct dump {
    d9_dump_dir dir;
    char trigger_kind[16];   /* "api", "control", "rule" */
    char rule[96], what[160], reason[128];
    uint64_t at_ns, from_ns, to_ns;   /* trigger and window, CLOCK_MONOTONIC */
    uint64_t lookback_ns, lookforward_ns;
    uint64_t begun_ns;        /* when it began: the give-up bound counts from here too */
    uint64_t held_from_ns, held_to_ns; /* what the segments in it cover */
    uint64_t next_seq;       /* segments below this were considered */
    uint64_t merged;         /* rule triggers that joined it (debounce) */
    uint64_t requested_after_ns; /* rule: from the event's end to this dump's start */
    uint64_t matched_after_ns;   /* rule: from the event's end to the collector's match */
    bool matched_in_woken_drain; /* rule: in a drain its poll's end asked for (flight_rule_wake.h) */
    uint32_t missing;        /* segments of the window that could not be added */
    bool evicted_before;     /* the store had dropped part of the look-back already */
    bool gave_up;            /* ended by the give-up bound (DIAL9_DUMP_GIVE_UP_MS), not covered */
    int client_fd;           /* the control socket client waiting for it, -1: none */
    char *files_json;        /* the segments' entries of the manifest, as they were added */
    size_t files_len;
    FILE *files;
    d9_dump_symbols symbols; /* memory mode: what its segments got */
    uint64_t symbolize_until_ns; /* the names' time bound */
} dump;

#define REQ_SLOTS 16
typedef struct req_slot {
    _Atomic int state; /* 0 free, 1 being filled, 2 ready */
    uint64_t at_ns, lookback_ns, lookforward_ns;
    char reason[128];
} req_slot;

/* A rule's match, posted by the collector as it merges (flight_rule_check.h). */
#define HIT_SLOTS 64
typedef struct hit_slot {
    _Atomic int state; /* 0 free, 1 being filled, 2 ready */
    d9_flight_rule_kind kind;
    uint64_t begin_ns, end_ns, value, worker;
    uint64_t matched_ns;    /* when the collector matched it: the latency's first part */
    bool woken;             /* in a drain a poll end or an unpark asked for, not a periodic one */
    const char *event_name; /* a registered type's name: lives as long as the process */
} hit_slot;

#define MAX_DUMPS 8
#define MAX_DISK_SEGS 4096

typedef struct flight {
    _Atomic int active;
    d9_flight_config cfg;
    char run_id[96];
    pthread_t thread;
    int wake_fd, listen_fd, run_fd;
    int wake_rd;                 /* the wake-up pipe's read end (wake_fd: its write end) */
    dev_t wake_dev, listen_dev, run_dev; /* what they were opened on: a program that closes */
    ino_t wake_ino, listen_ino, run_ino; /* every fd may reuse the numbers for files of its own */

    pthread_mutex_t lock;  /* incoming and col: never held across I/O */
    seg_list incoming;     /* sealed by the collector, not yet taken */
    d9_collector *col;     /* NULL once it closes */
    bool stop;

    req_slot req[REQ_SLOTS];
    hit_slot hits[HIT_SLOTS];
    _Atomic uint64_t hits_lost; /* matches with every slot full: counted as merged triggers */

    /* the flight thread's own */
    seg_list store;
    uint64_t store_bytes;
    uint64_t evicted_to_ns;    /* the newest end of a segment dropped from the store */
    dump *dumps[MAX_DUMPS];
    size_t ndumps;
    uint64_t dump_count;
    uint64_t last_rule_at_ns, last_rule_to_ns;
    dump *last_rule_dump;      /* while it is under way */
    uint64_t rule_times[1024]; /* triggers of the last hour that made dumps (ring) */
    size_t rule_times_n, rule_times_head;
    uint64_t suppressed;
    uint64_t seal_asked_ns;
    uint64_t last_seal_ns; /* the collector's: when it sealed last (at first: when recording started) */
    bool had_segment; /* a sealed segment has come in this recording: before that, the collector
                       * holding no bytes means it has not written its first segment yet */
    d9_dump_symbolizer *symbolizer; /* memory mode's dumps get their names (NULL: DIAL9_SYMBOLIZE=0) */
} flight;

static flight g_flight = {.wake_fd = -1, .wake_rd = -1, .listen_fd = -1, .run_fd = -1, .lock = PTHREAD_MUTEX_INITIALIZER};

static uint64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int64_t mono_to_unix_ns(uint64_t mono) {
    struct timespec rt, mt;
    clock_gettime(CLOCK_REALTIME, &rt);
    clock_gettime(CLOCK_MONOTONIC, &mt);
    int64_t off = ((int64_t)rt.tv_sec - (int64_t)mt.tv_sec) * 1000000000 + (rt.tv_nsec - mt.tv_nsec);
    return (int64_t)mono + off;
}

static bool seg_push(seg_list *l, seg s) {
    if (l->count == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        seg *n = realloc(l->items, cap * sizeof *n);
        if (!n) return false;
        l->items = n;
        l->cap = cap;
    }
    l->items[l->count++] = s;
    return true;
}

/* fd is still the file (pipe, socket) we opened as (dev, ino). */
static bool still_ours(int fd, dev_t dev, ino_t ino) {
    struct stat st;
    return fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == dev && st.st_ino == ino;
}

static void note_identity(int fd, dev_t *dev, ino_t *ino) {
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0) *dev = st.st_dev, *ino = st.st_ino;
}

/* One byte down the pipe, only while it is ours (never into a file the program opened under
 * the same number); without it the flight thread still looks every 50 ms. */
static void wake(flight *f) {
    int fd = f->wake_fd;
    if (still_ours(fd, f->wake_dev, f->wake_ino)) (void)!write(fd, "", 1);
}

/* ---------------------------------------------------------------- the collector's side */

/* On the collector's thread, at every seal: a pointer moved under the lock, nothing else. */
static void on_sealed(const d9_segw_sealed_info *info, void *ctx) {
    flight *f = ctx;
    /* a segment holds events from the previous seal on (they waited in the threads' buffers
     * while it was not open yet), the first one from the recording's start: its window starts
     * there, not when its first bytes were written (a dump asked for before then ended empty) */
    uint64_t start = info->start_mono_ns < f->last_seal_ns ? info->start_mono_ns : f->last_seal_ns;
    f->last_seal_ns = info->end_mono_ns;
    seg s = {.seq = info->seq, .start_ns = start, .end_ns = info->end_mono_ns,
             .bytes = info->bytes, .len = info->len, .on_disk = info->path != NULL, .symbols = info->symbols};
    d9_crash_seg_add(s.bytes, s.len, s.seq, s.start_ns, s.end_ns); /* a crash dump's from now on (disk: its file) */
    pthread_mutex_lock(&f->lock);
    bool ok = seg_push(&f->incoming, s);
    pthread_mutex_unlock(&f->lock);
    if (!ok && (!s.bytes || d9_crash_seg_remove(s.bytes))) { /* out of memory: not kept (a dump would say so) */
        d9_segbuf_free(s.bytes);
    }
    if (!ok) d9_dump_segment_symbols_free(s.symbols);
    wake(f);
}

static void ask_seal(flight *f, uint64_t at_ns) {
    if (f->seal_asked_ns && f->seal_asked_ns <= at_ns && f->seal_asked_ns > mono_ns()) return;
    pthread_mutex_lock(&f->lock);
    if (f->col) d9_collector_request_seal(f->col, at_ns);
    pthread_mutex_unlock(&f->lock);
    f->seal_asked_ns = at_ns;
    if (at_ns <= mono_ns()) d9_collector_wake(); /* the window has ended: seal now, not a drain period later */
}

/* ---------------------------------------------------------------- the store */

static void seg_free(seg *s) {
    if (s->bytes && d9_crash_seg_remove(s->bytes)) d9_segbuf_free(s->bytes); /* else a crash dump reads them */
    s->bytes = NULL;
    d9_dump_segment_symbols_free(s->symbols);
    s->symbols = NULL;
}

/* A dump's names are bounded in time (5 s, as the pipeline's at exit): what is left over is
 * said in its manifest, for dial9 symbolize. */
static bool symbolize_late(void *ctx) {
    const dump *d = ctx;
    return mono_ns() > d->symbolize_until_ns;
}

/* Drop the oldest segments past the budget (memory: bytes and age; disk: only the list). The
 * newest is always kept. Dumps under way took what they need already. */
static void store_trim(flight *f, uint64_t now) {
    size_t drop = 0;
    uint64_t bytes = f->store_bytes;
    while (drop + 1 < f->store.count) {
        seg *s = &f->store.items[drop];
        bool over = f->cfg.memory ? (bytes > f->cfg.memory_bytes || (now > f->cfg.keep_ns && s->end_ns < now - f->cfg.keep_ns))
                                  : f->store.count - drop > MAX_DISK_SEGS;
        if (!over) break;
        bytes -= s->len;
        if (s->end_ns > f->evicted_to_ns) f->evicted_to_ns = s->end_ns;
        seg_free(s);
        drop++;
    }
    if (!drop) return;
    memmove(f->store.items, f->store.items + drop, (f->store.count - drop) * sizeof(seg));
    f->store.count -= drop;
    f->store_bytes = bytes;
}

/* A disk segment's file as it is named now (sealed, or compressed since). false: gone. */
static bool disk_name(flight *f, uint64_t seq, char *name, size_t len) {
    if (!still_ours(f->run_fd, f->run_dev, f->run_ino)) f->run_fd = -1; /* closed by the program */
    if (f->run_fd < 0) return false;
    static const d9_segment_kind kinds[] = {D9_SEGMENT_SEALED, D9_SEGMENT_GZIP, D9_SEGMENT_ZSTD};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        d9_segment_name_format(name, len, seq, kinds[k]);
        struct stat st;
        if (fstatat(f->run_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) return true;
    }
    return false;
}

/* ---------------------------------------------------------------- dumps */

static void add_segment(flight *f, dump *d, const seg *s) {
    d->next_seq = s->seq + 1;
    if (s->end_ns < d->from_ns || s->start_ns > d->to_ns) return;
    uint64_t size = 0;
    char name[D9_SEGMENT_NAME_MAX];
    int rc;
    if (s->on_disk) {
        rc = disk_name(f, s->seq, name, sizeof name) ? d9_dump_dir_add_file(&d->dir, f->run_fd, name, &size) : -ENOENT;
    } else {
        d9_segment_name_format(name, sizeof name, s->seq, D9_SEGMENT_SEALED);
        rc = s->bytes ? d9_dump_dir_add_bytes(&d->dir, s->seq, s->bytes, s->len) : -ENOENT;
        size = s->len;
        if (rc == 0 && f->symbolizer) { /* names appended, as disk mode's pipeline does (not counted in size) */
            if (!d->symbolize_until_ns) d->symbolize_until_ns = mono_ns() + 5000000000ull;
            d9_dump_symbolize_segment(f->symbolizer, d->dir.fd, name, s->symbols, symbolize_late, d, &d->symbols);
        }
    }
    if (rc != 0) {
        d->missing++;
        return;
    }
    if (!d->held_from_ns || s->start_ns < d->held_from_ns) d->held_from_ns = s->start_ns;
    if (s->end_ns > d->held_to_ns) d->held_to_ns = s->end_ns;
    if (d->files) {
        d9_json j;
        d9_json_init(&j, d->files, false);
        d9_json_object_begin(&j);
        d9_json_key(&j, "file"); d9_json_string(&j, name);
        d9_json_key(&j, "bytes"); d9_json_u64(&j, size);
        d9_json_key(&j, "start_unix_ns"); d9_json_i64(&j, mono_to_unix_ns(s->start_ns));
        d9_json_key(&j, "end_unix_ns"); d9_json_i64(&j, mono_to_unix_ns(s->end_ns));
        d9_json_object_end(&j);
        fputc('\n', d->files);
    }
}

/* Why the held segments start after the window does. A dump that holds nothing because the
 * give-up bound passed before a segment of its window was sealed (a stalled collector) lacks
 * its whole window for that reason, whenever the recording started. */
static const char *lookback_why(const dump *d) {
    if (d->gave_up && d->held_from_ns == 0)
        return "not sealed: no segment of the window was sealed before the give-up bound (DIAL9_DUMP_GIVE_UP_MS)";
    return d->evicted_before ? "older segments were no longer held (DIAL9_FLIGHT_MEMORY_MB, "
                               "DIAL9_FLIGHT_KEEP_SECS, or rotated away on disk)"
                             : "the recording started later";
}

static void write_manifest(flight *f, dump *d, bool stopped) {
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (d->files) fclose(d->files);
    d->files = NULL;
    uint64_t short_back = d->held_from_ns == 0 ? d->lookback_ns
                          : d->held_from_ns > d->from_ns ? d->held_from_ns - d->from_ns : 0;
    uint64_t short_fwd = d->held_to_ns == 0 ? d->lookforward_ns
                         : d->held_to_ns < d->to_ns ? d->to_ns - d->held_to_ns : 0;
    if (m) {
        d9_json j;
        d9_json_init(&j, m, true);
        d9_json_object_begin(&j);
        d9_json_key(&j, "format"); d9_json_string(&j, "dial9-dump");
        d9_json_key(&j, "version"); d9_json_u64(&j, 1);
        d9_json_key(&j, "run_id"); d9_json_string(&j, f->run_id);
        d9_json_key(&j, "pid"); d9_json_u64(&j, (uint64_t)getpid());
        d9_json_key(&j, "mode"); d9_json_string(&j, f->cfg.memory ? "memory" : "disk");
        d9_json_key(&j, "trigger");
        d9_json_object_begin(&j);
        d9_json_key(&j, "kind"); d9_json_string(&j, d->trigger_kind);
        if (d->rule[0]) { d9_json_key(&j, "rule"); d9_json_string(&j, d->rule); }
        if (d->what[0]) { d9_json_key(&j, "event"); d9_json_string(&j, d->what); }
        if (d->reason[0]) { d9_json_key(&j, "reason"); d9_json_string(&j, d->reason); }
        d9_json_key(&j, "at_unix_ns"); d9_json_i64(&j, mono_to_unix_ns(d->at_ns));
        d9_json_key(&j, "at_mono_ns"); d9_json_u64(&j, d->at_ns);
        d9_json_key(&j, "merged_triggers"); d9_json_u64(&j, d->merged);
        if (d->rule[0]) d9_json_key_f64(&j, "requested_after_ms", (double)d->requested_after_ns / 1e6);
        if (d->rule[0]) d9_json_key_f64(&j, "matched_after_ms", (double)d->matched_after_ns / 1e6);
        if (d->rule[0]) { /* which drain matched it: one its event asked for (flight_rule_wake.h), or the periodic one */
            d9_json_key(&j, "drain");
            d9_json_string(&j, d->matched_in_woken_drain ? "woken" : "periodic");
        }
        d9_json_object_end(&j);
        d9_json_key(&j, "window");
        d9_json_object_begin(&j);
        d9_json_key(&j, "lookback_ms"); d9_json_u64(&j, d->lookback_ns / 1000000);
        d9_json_key(&j, "lookforward_ms"); d9_json_u64(&j, d->lookforward_ns / 1000000);
        d9_json_key(&j, "from_unix_ns"); d9_json_i64(&j, mono_to_unix_ns(d->from_ns));
        d9_json_key(&j, "to_unix_ns"); d9_json_i64(&j, mono_to_unix_ns(d->to_ns));
        d9_json_key(&j, "from_mono_ns"); d9_json_u64(&j, d->from_ns);
        d9_json_key(&j, "to_mono_ns"); d9_json_u64(&j, d->to_ns);
        d9_json_object_end(&j);
        d9_json_key(&j, "holds");
        d9_json_object_begin(&j);
        d9_json_key(&j, "segments"); d9_json_u64(&j, d->dir.segments);
        d9_json_key(&j, "bytes"); d9_json_u64(&j, d->dir.bytes);
        if (d->held_from_ns) {
            d9_json_key(&j, "from_unix_ns"); d9_json_i64(&j, mono_to_unix_ns(d->held_from_ns));
            d9_json_key(&j, "to_unix_ns"); d9_json_i64(&j, mono_to_unix_ns(d->held_to_ns));
        }
        d9_json_key(&j, "symbols");
        char symbols[512];
        if (!f->cfg.memory) snprintf(symbols, sizeof symbols, "as the run's files had them when linked");
        else if (!f->symbolizer) snprintf(symbols, sizeof symbols, "none: DIAL9_SYMBOLIZE=0 (dial9 symbolize adds them)");
        else
            snprintf(symbols, sizeof symbols, "appended to each segment at the dump: %" PRIu64 " addresses, %" PRIu64
                     " named; %u segments left without (dial9 symbolize adds them)%s%s", d->symbols.addresses,
                     d->symbols.named, d->symbols.unlisted + d->symbols.failed, d->symbols.failed ? ": " : "",
                     d->symbols.failed ? d->symbols.last_error : "");
        d9_json_string(&j, symbols);
        d9_json_key(&j, "files");
        d9_json_array_begin(&j);
        d9_json_array_end(&j);
        d9_json_object_end(&j);
        d9_json_key(&j, "lacks");
        d9_json_object_begin(&j);
        d9_json_key(&j, "lookback_ms"); d9_json_u64(&j, short_back / 1000000);
        if (short_back)
            d9_json_key(&j, "lookback_why"), d9_json_string(&j, lookback_why(d));
        d9_json_key(&j, "lookforward_ms"); d9_json_u64(&j, short_fwd / 1000000);
        if (short_fwd) d9_json_key(&j, "lookforward_why"), d9_json_string(&j, stopped ? "the recording stopped first" : "not sealed");
        d9_json_key(&j, "segments_missing"); d9_json_u64(&j, d->missing);
        d9_json_object_end(&j);
        d9_json_object_end(&j);
        fputc('\n', m);
        fclose(m);
    }
    /* the file list goes where the empty array was written: one place, in order */
    int rc = -ENOMEM;
    if (buf) {
        const char *marker = "\"files\": []";
        char *at = strstr(buf, marker);
        char *out = NULL;
        size_t outlen = 0;
        FILE *o = at ? open_memstream(&out, &outlen) : NULL;
        if (o) {
            fwrite(buf, 1, (size_t)(at - buf), o);
            fputs("\"files\": [", o);
            for (size_t i = 0, first = 1; d->files_json && i < d->files_len;) {
                char *nl = memchr(d->files_json + i, '\n', d->files_len - i);
                size_t n = nl ? (size_t)(nl - (d->files_json + i)) : d->files_len - i;
                if (n) {
                    fputs(first ? "" : ", ", o);
                    fwrite(d->files_json + i, 1, n, o);
                    first = 0;
                }
                i += n + 1;
            }
            fputs("]", o);
            fputs(at + strlen(marker), o);
            fclose(o);
            if (out) rc = d9_dump_dir_finish(&d->dir, out, outlen);
            free(out);
        }
    }
    free(buf);
    char line[PATH_MAX + 64];
    if (rc == 0) {
        fprintf(stderr, "dial9: dump written: %s (%s%s%s; %u segments)\n", d->dir.path, d->trigger_kind,
                d->rule[0] ? " " : "", d->rule, d->dir.segments);
        snprintf(line, sizeof line, "ok %s\n", d->dir.path);
        const char *slash = strrchr(d->dir.path, '/');
        d9_flight_upload_enqueue(d->dir.path, slash ? slash + 1 : d->dir.path, mono_to_unix_ns(d->at_ns));
    } else {
        d9_dump_dir_abandon(&d->dir);
        fprintf(stderr, "dial9: dump %s: cannot write its manifest: %s\n", d->dir.path, strerror(-rc));
        snprintf(line, sizeof line, "error cannot write the manifest of %s: %s\n", d->dir.path, strerror(-rc));
    }
    d9_control_reply(d->client_fd, line);
    d->client_fd = -1;
}

static void dump_free(dump *d) {
    if (d->files) fclose(d->files);
    free(d->files_json);
    free(d);
}

/* A new dump of [begin - look-back, end + look-forward]: its directory made and what the store
 * holds of the window put in it now. NULL with a message in err. */
static dump *dump_begin(flight *f, const char *kind, uint64_t begin_ns, uint64_t end_ns, uint64_t lookback_ns,
                        uint64_t lookforward_ns, char *err, size_t errlen) {
    if (f->ndumps == MAX_DUMPS) {
        snprintf(err, errlen, "%d dumps are under way already", MAX_DUMPS);
        return NULL;
    }
    dump *d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    d->client_fd = -1;
    snprintf(d->trigger_kind, sizeof d->trigger_kind, "%s", kind);
    d->at_ns = end_ns;
    d->lookback_ns = lookback_ns;
    d->lookforward_ns = lookforward_ns;
    d->from_ns = begin_ns > lookback_ns ? begin_ns - lookback_ns : 0;
    d->to_ns = end_ns + lookforward_ns;
    d->begun_ns = mono_ns();
    d->evicted_before = f->evicted_to_ns >= d->from_ns;
    d->files = open_memstream(&d->files_json, &d->files_len);
    char name[160];
    snprintf(name, sizeof name, "%s.dump%" PRIu64, f->run_id, ++f->dump_count);
    if (d9_dump_dir_create(f->cfg.dump_dir, name, &d->dir, err, errlen) != 0) {
        dump_free(d);
        return NULL;
    }
    for (size_t i = 0; i < f->store.count; i++) add_segment(f, d, &f->store.items[i]);
    f->dumps[f->ndumps++] = d;
    return d;
}

static void take_incoming(flight *f);

/* The collector has no segment with bytes open (it is not closing: then d9_flight_stop ends
 * the dumps). Its last seal was handed over before it said so (d9_segw_open_since). */
static bool nothing_open(flight *f) {
    pthread_mutex_lock(&f->lock);
    bool none = f->col && d9_collector_open_since(f->col) == 0;
    pthread_mutex_unlock(&f->lock);
    return none;
}

/* The collector is closing (d9_stop): its last segment comes before d9_flight_stop. */
static bool collector_closing(flight *f) {
    pthread_mutex_lock(&f->lock);
    bool closing = !f->col && !f->stop;
    pthread_mutex_unlock(&f->lock);
    return closing;
}

/* The dumps whose window is covered (or all, at stop) get their manifest; the others ask
 * the collector to seal at their window's end, so they need not wait for a rotation. */
static void dumps_progress(flight *f, bool stopping) {
    for (size_t i = 0; i < f->ndumps;) {
        dump *d = f->dumps[i];
        for (size_t k = 0; k < f->store.count; k++)
            if (f->store.items[k].seq >= d->next_seq) add_segment(f, d, &f->store.items[k]);
        bool covered = d->held_to_ns >= d->to_ns ||
                       (f->store.count && f->store.items[f->store.count - 1].start_ns > d->to_ns);
        /* (not before the recording's first segment: a dump asked for right at the start would
         * otherwise end empty; it waits for that segment's seal, or the bound below) */
        if (!covered && !stopping && mono_ns() >= d->to_ns && f->had_segment && nothing_open(f)) {
            /* the window has ended and the collector holds no segment with bytes (an idle
             * program): what it sealed last is in incoming now, and then nothing more comes */
            take_incoming(f);
            for (size_t k = 0; k < f->store.count; k++)
                if (f->store.items[k].seq >= d->next_seq) add_segment(f, d, &f->store.items[k]);
            covered = true;
        }
        /* a bound whatever happens (a stalled collector, a segment lost to a write error): the
         * manifest says how much look-forward the dump lacks. Counted from the window's end or
         * the dump's start, whichever is later: a rule matched late (a drain long after its
         * event, the last one at d9_stop) still waits for the seal of the segment holding its
         * event. Never while the collector closes: its last seal is coming, and d9_flight_stop
         * ends every dump right after. */
        uint64_t bound = (d->to_ns > d->begun_ns ? d->to_ns : d->begun_ns) + f->cfg.give_up_ns;
        if (!covered && !stopping && mono_ns() >= bound && !collector_closing(f)) covered = d->gave_up = true;
        if (!covered && !stopping) {
            ask_seal(f, d->to_ns);
            i++;
            continue;
        }
        write_manifest(f, d, !covered);
        if (f->last_rule_dump == d) f->last_rule_dump = NULL;
        dump_free(d);
        f->dumps[i] = f->dumps[--f->ndumps];
    }
}

/* ---------------------------------------------------------------- triggers */

static void on_rule_hit(const d9_flight_hit *hit, void *ctx) {
    flight *f = ctx;
    /* debounce: inside the last rule dump's window, or soon after its trigger, it joins it */
    if (f->last_rule_at_ns && (hit->end_ns <= f->last_rule_to_ns || hit->end_ns < f->last_rule_at_ns + f->cfg.debounce_ns)) {
        if (f->last_rule_dump) f->last_rule_dump->merged++;
        return;
    }
    /* rate limit: at most max_per_hour rule dumps in any hour (by the events' clock) */
    while (f->rule_times_n && f->rule_times[f->rule_times_head] + 3600ull * 1000000000ull <= hit->end_ns) {
        f->rule_times_head = (f->rule_times_head + 1) % (sizeof f->rule_times / sizeof f->rule_times[0]);
        f->rule_times_n--;
    }
    if (f->rule_times_n >= f->cfg.max_per_hour || f->rule_times_n == sizeof f->rule_times / sizeof f->rule_times[0]) {
        if (f->suppressed++ == 0)
            fprintf(stderr, "dial9: trigger %s: %u dumps in the last hour already (DIAL9_DUMP_MAX_PER_HOUR): no dump; "
                            "further ones are counted only\n", hit->rule->text, f->cfg.max_per_hour);
        return;
    }
    char err[512];
    dump *d = dump_begin(f, "rule", hit->begin_ns, hit->end_ns, f->cfg.lookback_ns, f->cfg.lookforward_ns, err, sizeof err);
    if (!d) {
        fprintf(stderr, "dial9: trigger %s: no dump: %s\n", hit->rule->text, err);
        return;
    }
    snprintf(d->rule, sizeof d->rule, "%s", hit->rule->text);
    snprintf(d->what, sizeof d->what, "%s", hit->what);
    f->rule_times[(f->rule_times_head + f->rule_times_n++) % (sizeof f->rule_times / sizeof f->rule_times[0])] = hit->end_ns;
    f->last_rule_at_ns = hit->end_ns;
    f->last_rule_to_ns = d->to_ns;
    f->last_rule_dump = d;
}

/* On the collector's thread, when a rule matched as it merged: a slot filled and the flight
 * thread woken, nothing else (a burst beyond the slots is counted, it would be debounced). */
void d9_flight_rule_matched(d9_flight_rule_kind kind, uint64_t begin_ns, uint64_t end_ns, uint64_t value,
                            uint64_t worker, const char *event_name) {
    flight *f = &g_flight;
    if (!atomic_load_explicit(&f->active, memory_order_acquire)) return;
    for (size_t i = 0; i < HIT_SLOTS; i++) {
        int expected = 0;
        hit_slot *h = &f->hits[i];
        if (!atomic_compare_exchange_strong(&h->state, &expected, 1)) continue;
        h->kind = kind;
        h->begin_ns = begin_ns;
        h->end_ns = end_ns;
        h->value = value;
        h->worker = worker;
        h->matched_ns = mono_ns(); /* a match is rare: one clock read */
        h->woken = d9_rule_wake_in_drain;
        h->event_name = event_name;
        atomic_store_explicit(&h->state, 2, memory_order_release);
        wake(f);
        return;
    }
    atomic_fetch_add(&f->hits_lost, 1);
}

/* The collector's matches, oldest first, through every rule they satisfy. */
static void take_hits(flight *f) {
    hit_slot *ready[HIT_SLOTS];
    size_t n = 0;
    for (size_t i = 0; i < HIT_SLOTS; i++)
        if (atomic_load_explicit(&f->hits[i].state, memory_order_acquire) == 2) ready[n++] = &f->hits[i];
    for (size_t i = 1; i < n; i++) /* insertion sort by the event's time: a handful */
        for (size_t j = i; j > 0 && ready[j - 1]->end_ns > ready[j]->end_ns; j--) {
            hit_slot *t = ready[j];
            ready[j] = ready[j - 1];
            ready[j - 1] = t;
        }
    uint64_t now = mono_ns();
    for (size_t i = 0; i < n; i++) {
        const hit_slot *h = ready[i];
        d9_flight_hit hit = {.begin_ns = h->begin_ns, .end_ns = h->end_ns};
        switch (h->kind) {
        case D9_RULE_POLL_MS:
            snprintf(hit.what, sizeof hit.what, "PollEndEvent: worker %llu polled %.3f ms",
                     (unsigned long long)h->worker, (double)h->value / 1e6);
            break;
        case D9_RULE_SCHED_DELAY_MS:
            snprintf(hit.what, sizeof hit.what, "WorkerUnparkEvent: scheduling delay %.3f ms", (double)h->value / 1e6);
            break;
        case D9_RULE_DROPS:
            snprintf(hit.what, sizeof hit.what, "DroppedEventsEvent: %llu events dropped", (unsigned long long)h->value);
            break;
        case D9_RULE_EVENT:
            snprintf(hit.what, sizeof hit.what, "%s", h->event_name ? h->event_name : "?");
            break;
        }
        /* every rule of its kind it satisfies (the collector compared with the lowest threshold) */
        for (size_t k = 0; k < f->cfg.rules.count; k++) {
            const d9_flight_rule *r = &f->cfg.rules.rule[k];
            if (r->kind != h->kind) continue;
            if ((r->kind == D9_RULE_POLL_MS || r->kind == D9_RULE_SCHED_DELAY_MS) && h->value <= r->threshold_ns) continue;
            if (r->kind == D9_RULE_EVENT && (!h->event_name || strcmp(d9_flight_rule_event_name(r), h->event_name))) continue;
            hit.rule = r;
            dump *before = f->last_rule_dump;
            on_rule_hit(&hit, f);
            if (f->last_rule_dump && f->last_rule_dump != before) {
                f->last_rule_dump->requested_after_ns = now > h->end_ns ? now - h->end_ns : 0;
                f->last_rule_dump->matched_after_ns = h->matched_ns > h->end_ns ? h->matched_ns - h->end_ns : 0;
                f->last_rule_dump->matched_in_woken_drain = h->woken;
            }
        }
        atomic_store_explicit(&((hit_slot *)h)->state, 0, memory_order_release);
    }
    uint64_t lost = atomic_exchange(&f->hits_lost, 0);
    if (lost && f->last_rule_dump) f->last_rule_dump->merged += lost;
}

static void take_requests(flight *f) {
    for (size_t i = 0; i < REQ_SLOTS; i++) {
        req_slot *r = &f->req[i];
        if (atomic_load_explicit(&r->state, memory_order_acquire) != 2) continue;
        char err[512];
        dump *d = dump_begin(f, "api", r->at_ns, r->at_ns, r->lookback_ns, r->lookforward_ns, err, sizeof err);
        if (d) snprintf(d->reason, sizeof d->reason, "%s", r->reason);
        else fprintf(stderr, "dial9: d9_dump: no dump: %s\n", err);
        atomic_store_explicit(&r->state, 0, memory_order_release);
    }
}

static void take_client(flight *f) {
    bool allowed;
    unsigned uid;
    int fd = d9_control_accept(f->listen_fd, &allowed, &uid);
    if (fd < 0) return;
    char line[256], reply[600];
    if (!allowed) {
        snprintf(reply, sizeof reply, "error permission denied: uid %u may not dump a process of uid %u\n", uid,
                 (unsigned)geteuid());
        d9_control_reply(fd, reply);
        return;
    }
    char lbs[24], lfs[24];
    int off = 0;
    uint64_t lb = f->cfg.lookback_ns / 1000000, lf = f->cfg.lookforward_ns / 1000000;
    bool ok = d9_control_read_line(fd, line, sizeof line) && sscanf(line, "dump %23s %23s %n", lbs, lfs, &off) >= 2;
    char *end;
    if (ok && strcmp(lbs, "-")) lb = strtoull(lbs, &end, 10), ok = !*end && lb <= 86400000ull;
    if (ok && strcmp(lfs, "-")) lf = strtoull(lfs, &end, 10), ok = !*end && lf <= 3600000ull;
    if (!ok) {
        d9_control_reply(fd, "error expected: dump LOOKBACK_MS|- LOOKFORWARD_MS|- REASON\n");
        return;
    }
    char err[512];
    uint64_t now = mono_ns();
    dump *d = dump_begin(f, "control", now, now, lb * 1000000ull, lf * 1000000ull, err, sizeof err);
    if (!d) {
        snprintf(reply, sizeof reply, "error %s\n", err);
        d9_control_reply(fd, reply);
        return;
    }
    snprintf(d->reason, sizeof d->reason, "%s", off ? line + off : "");
    d->client_fd = fd;
}

/* ---------------------------------------------------------------- the thread */

/* Segments sealed since the last round: into the store, through the rules, into the dumps. */
static void round_once(flight *f, bool stopping) {
    take_incoming(f);
    take_hits(f);
    take_requests(f);
    dumps_progress(f, stopping);
    store_trim(f, mono_ns());
}

static void take_incoming(flight *f) {
    pthread_mutex_lock(&f->lock);
    seg_list in = f->incoming;
    f->incoming = (seg_list){0};
    pthread_mutex_unlock(&f->lock);
    for (size_t i = 0; i < in.count; i++) {
        if (!seg_push(&f->store, in.items[i])) {
            seg_free(&in.items[i]);
            continue;
        }
        f->store_bytes += in.items[i].len;
        f->had_segment = true;
    }
    free(in.items);
}

static void *flight_main(void *arg) {
    flight *f = arg;
    d9_name_own_thread("dial9-flight");
    for (;;) {
        /* a program that closed our descriptors: forget them (never close or read its own) */
        bool woken = f->wake_rd >= 0 && still_ours(f->wake_rd, f->wake_dev, f->wake_ino);
        if (!woken) f->wake_rd = -1;
        if (f->listen_fd >= 0 && !still_ours(f->listen_fd, f->listen_dev, f->listen_ino)) f->listen_fd = -1;
        struct pollfd p[2] = {{.fd = f->wake_rd, .events = POLLIN}, {.fd = f->listen_fd, .events = POLLIN}};
        int n = poll(p, 2, f->ndumps || !woken ? 50 : 1000);
        if (n > 0 && (p[0].revents & POLLIN)) {
            char buf[256];
            (void)!read(f->wake_rd, buf, sizeof buf);
        }
        pthread_mutex_lock(&f->lock);
        bool stop = f->stop;
        pthread_mutex_unlock(&f->lock);
        if (stop) break;
        round_once(f, false);
        if (n > 0 && f->listen_fd >= 0 && (p[1].revents & POLLIN)) take_client(f);
    }
    return NULL;
}

bool d9_flight_start(const d9_flight_config *fc, d9_collector *col, const char *run_id) {
    flight *f = &g_flight;
    if (!fc->active) return true;
    f->cfg = *fc;
    snprintf(f->run_id, sizeof f->run_id, "%s", run_id);
    f->store = f->incoming = (seg_list){0};
    f->store_bytes = f->evicted_to_ns = 0;
    f->ndumps = 0;
    f->dump_count = f->last_rule_at_ns = f->last_rule_to_ns = f->suppressed = f->seal_asked_ns = 0;
    f->had_segment = false;
    f->last_seal_ns = mono_ns();
    f->rule_times_n = f->rule_times_head = 0;
    f->last_rule_dump = NULL;
    f->stop = false;
    for (size_t i = 0; i < HIT_SLOTS; i++) atomic_store(&f->hits[i].state, 0);
    atomic_store(&f->hits_lost, 0);
    f->run_fd = fc->memory ? -1 : fcntl(d9_collector_run_dir_fd(col), F_DUPFD_CLOEXEC, 0);
    note_identity(f->run_fd, &f->run_dev, &f->run_ino);
    /* made once and never closed: a d9_dump racing d9_stop may still write to it */
    int pipe_fds[2];
    if (!still_ours(f->wake_fd, f->wake_dev, f->wake_ino) && pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) == 0) {
        f->wake_rd = pipe_fds[0];
        f->wake_fd = pipe_fds[1];
        note_identity(f->wake_fd, &f->wake_dev, &f->wake_ino); /* both ends: one pipe inode */
    }
    for (size_t i = 0; i < REQ_SLOTS; i++) atomic_store(&f->req[i].state, 0); /* a request racing the last stop */
    f->listen_fd = d9_control_listen();
    note_identity(f->listen_fd, &f->listen_dev, &f->listen_ino);
    if (f->listen_fd < 0)
        fprintf(stderr, "dial9: flight recorder: no control socket (dial9 trigger will not reach this process): %s\n",
                strerror(errno));
    f->col = col;
    d9_collector_set_on_flight(col, on_sealed, f);
    /* memory mode: what each segment holds to name is listed as it is written, so that a dump
     * names it without reading the segment back (before the collector starts: every segment) */
    f->symbolizer = NULL;
    if (fc->memory && (!fc->recorder_cfg || fc->recorder_cfg->symbolize) && (f->symbolizer = d9_dump_symbolizer_new()))
        d9_collector_collect_symbols(col);
    /* a crash must not lose what memory holds; on disk, the look-back before it is pinned */
    (void)d9_crash_install(fc->dump_dir, run_id, fc->memory ? NULL : d9_collector_run_dir(col), fc->lookback_ns,
                           f->last_seal_ns);
    if (fc->recorder_cfg) (void)d9_flight_upload_start(fc->recorder_cfg, fc->service); /* else: said, dumps stay local */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&f->thread, NULL, flight_main, f);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        fprintf(stderr, "dial9: flight recorder: cannot start its thread: %s\n", strerror(rc));
        d9_collector_set_on_flight(col, NULL, NULL);
        d9_dump_symbolizer_free(f->symbolizer);
        f->symbolizer = NULL;
        d9_flight_upload_stop();
        d9_crash_uninstall();
        f->col = NULL;
        if (f->listen_fd >= 0) close(f->listen_fd);
        if (f->run_fd >= 0) close(f->run_fd);
        f->listen_fd = f->run_fd = -1;
        return false;
    }
    atomic_store(&f->active, 1);
    d9_rule_check_arm(&f->cfg.rules); /* the collector checks the rules from its next drain */
    return true;
}

void d9_flight_collector_closing(void) {
    flight *f = &g_flight;
    if (!atomic_load(&f->active)) return;
    pthread_mutex_lock(&f->lock);
    f->col = NULL;
    pthread_mutex_unlock(&f->lock);
}

void d9_flight_stop(void) {
    flight *f = &g_flight;
    if (!atomic_exchange(&f->active, 0)) return;
    d9_rule_check_disarm();
    pthread_mutex_lock(&f->lock);
    f->stop = true;
    f->col = NULL;
    pthread_mutex_unlock(&f->lock);
    wake(f);
    pthread_join(f->thread, NULL);
    d9_crash_uninstall();
    round_once(f, true); /* the last segments; every dump under way ends with what there is */
    d9_flight_upload_stop(); /* their S3 copies, within the exit wait */
    for (size_t i = 0; i < f->store.count; i++) seg_free(&f->store.items[i]);
    free(f->store.items);
    f->store = (seg_list){0};
    d9_dump_symbolizer_free(f->symbolizer);
    f->symbolizer = NULL;
    if (still_ours(f->listen_fd, f->listen_dev, f->listen_ino)) close(f->listen_fd);
    if (still_ours(f->run_fd, f->run_dev, f->run_ino)) close(f->run_fd);
    f->listen_fd = f->run_fd = -1;
    for (size_t i = 0; i < REQ_SLOTS; i++) atomic_store(&f->req[i].state, 0);
}

void d9_flight_forget_after_fork(void) {
    flight *f = &g_flight;
    atomic_store(&f->active, 0);
    d9_rule_check_disarm();
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    f->lock = m;
    /* the parent's: its memory is ours to drop, its descriptors are copies */
    if (f->wake_fd >= 0) close(f->wake_fd);
    if (f->wake_rd >= 0) close(f->wake_rd);
    if (f->listen_fd >= 0) close(f->listen_fd);
    if (f->run_fd >= 0) close(f->run_fd);
    f->wake_fd = f->wake_rd = f->listen_fd = f->run_fd = -1;
    f->incoming = f->store = (seg_list){0}; /* leaked in the child, never freed twice */
    f->symbolizer = NULL;
    d9_flight_upload_forget_after_fork();
    d9_crash_forget_after_fork();
    f->ndumps = 0;
}

/* ---------------------------------------------------------------- the public call */

int d9_dump(uint32_t lookback_ms, uint32_t lookforward_ms, const char *reason) {
    flight *f = &g_flight;
    if (!atomic_load_explicit(&f->active, memory_order_acquire)) {
        d9_set_error("no flight recorder: d9_dump needs DIAL9_MODE=memory, DIAL9_TRIGGERS or DIAL9_DUMPS=1 at d9_start");
        return D9_ERR_NOT_STARTED;
    }
    uint64_t now = mono_ns();
    for (size_t i = 0; i < REQ_SLOTS; i++) {
        int expected = 0;
        req_slot *r = &f->req[i];
        if (!atomic_compare_exchange_strong(&r->state, &expected, 1)) continue;
        r->at_ns = now;
        r->lookback_ns = (uint64_t)lookback_ms * 1000000ull;
        r->lookforward_ns = (uint64_t)lookforward_ms * 1000000ull;
        snprintf(r->reason, sizeof r->reason, "%s", reason ? reason : "");
        atomic_store_explicit(&r->state, 2, memory_order_release);
        wake(f);
        return D9_OK;
    }
    d9_set_error("d9_dump: %d dumps are waiting to start already", REQ_SLOTS);
    return D9_ERR_INVALID;
}
