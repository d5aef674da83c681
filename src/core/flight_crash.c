/* The crash dump (flight_crash.h): memory mode writes the segments it holds, disk mode links
 * the run's files of the look-back. Everything from crash_handler down runs inside a signal
 * handler: system calls and our own formatting only. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "core/flight_crash.h"

#include "common/segment_name.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SLOTS 1024

typedef struct crash_slot {
    _Atomic int state; /* 0 free, 1 being filled (or abandoned after a crash), 2 ready */
    const uint8_t *bytes;
    size_t len;
    uint64_t seq, start_ns, end_ns;
} crash_slot;

static crash_slot g_slots[SLOTS];
static _Atomic uint64_t g_not_kept; /* sealed segments the full table could not take */
static _Atomic int g_crashing;      /* set once, by the first crash */
static _Atomic long g_crash_tid;
d9_crash_open_view d9_crash_open;

static const int k_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
#define NSIG_OURS (sizeof k_signals / sizeof k_signals[0])
static struct sigaction g_previous[NSIG_OURS];
static bool g_installed[NSIG_OURS];
static pid_t g_pid;
static char g_root[PATH_MAX], g_name[200];
static char g_run_dir[PATH_MAX]; /* disk mode: the run's directory; "" in memory mode */
static uint64_t g_lookback_ns;   /* disk mode: the files of this much before the crash */
static uint64_t g_started_ns;    /* when the recording started: the first segment's start */

/* ---------------------------------------------------------------- the table */

void d9_crash_seg_add(const uint8_t *bytes, size_t len, uint64_t seq, uint64_t start_ns, uint64_t end_ns) {
    for (size_t i = 0; i < SLOTS; i++) {
        crash_slot *s = &g_slots[(seq + i) % SLOTS];
        int expected = 0;
        /* disk mode's entries are never withdrawn (the files are the run's): a newer one takes
         * the slot of one SLOTS segments older, whose file rotation deleted long ago */
        if (!bytes && atomic_load(&s->state) == 2 && !s->bytes && s->seq < seq) expected = 2;
        if (!atomic_compare_exchange_strong(&s->state, &expected, 1)) continue;
        if (expected == 2 && atomic_load(&g_crashing)) { /* the handler may be reading it: as it was */
            atomic_store(&s->state, 2);
            return;
        }
        if (atomic_load(&g_crashing)) return; /* a dump is reading the table: leave it alone */
        s->bytes = bytes;
        s->len = len;
        s->seq = seq;
        s->start_ns = start_ns;
        s->end_ns = end_ns;
        atomic_store(&s->state, 2);
        return;
    }
    atomic_fetch_add(&g_not_kept, 1);
}

bool d9_crash_seg_remove(const uint8_t *bytes) {
    for (size_t i = 0; i < SLOTS; i++) {
        crash_slot *s = &g_slots[i];
        if (atomic_load(&s->state) != 2 || s->bytes != bytes) continue;
        int expected = 2;
        if (!atomic_compare_exchange_strong(&s->state, &expected, 0)) return false;
        return !atomic_load(&g_crashing);
    }
    return !atomic_load(&g_crashing);
}

void d9_crash_open_publish(const uint8_t *bytes, uint64_t seq, uint64_t start_ns) {
    atomic_store_explicit(&d9_crash_open.len, 0, memory_order_relaxed);
    atomic_store_explicit(&d9_crash_open.seq, seq, memory_order_relaxed);
    atomic_store_explicit(&d9_crash_open.start_ns, start_ns, memory_order_relaxed);
    atomic_store(&d9_crash_open.bytes, bytes);
}

bool d9_crash_open_withdraw(void) {
    atomic_store(&d9_crash_open.bytes, NULL);
    return !atomic_load(&g_crashing);
}

/* ---------------------------------------------------------------- inside the handler */

/* Text built in a caller's buffer: the manifest's and the file list's are static (64 KiB); the
 * short ones (a message, a file name) live on the crashing thread's stack, which may be an
 * alternate signal stack of a few KiB (ASan's, a program's sigaltstack). */
typedef struct out {
    char *buf;
    size_t cap, len;
} out;
#define OUT_ON(array) ((out){.buf = (array), .cap = sizeof(array), .len = 0})

static void put(out *o, const char *s) {
    while (*s && o->len + 1 < o->cap) o->buf[o->len++] = *s++;
}

static void put_u64(out *o, uint64_t v) {
    char t[24];
    int n = 0;
    do t[n++] = (char)('0' + v % 10); while ((v /= 10) && n < 24);
    while (n && o->len + 1 < o->cap) o->buf[o->len++] = t[--n];
}

static void put_i64(out *o, int64_t v) {
    if (v < 0) {
        put(o, "-");
        put_u64(o, (uint64_t)0 - (uint64_t)v);
    } else {
        put_u64(o, (uint64_t)v);
    }
}

static void put_hex(out *o, uint64_t v) {
    char t[17];
    int n = 0;
    do t[n++] = "0123456789abcdef"[v & 15]; while ((v >>= 4) && n < 16);
    put(o, "0x");
    while (n && o->len + 1 < o->cap) o->buf[o->len++] = t[--n];
}

static uint64_t clock_ns(clockid_t c) {
    struct timespec ts;
    clock_gettime(c, &ts); /* async-signal-safe (POSIX.1-2008) */
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void say(const char *a, const char *b, const char *c) {
    char text[256];
    out o = OUT_ON(text);
    put(&o, a);
    put(&o, b);
    put(&o, c);
    put(&o, "\n");
    (void)!write(STDERR_FILENO, o.buf, o.len);
}

static bool write_all(int fd, const uint8_t *p, size_t len) {
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        p += n;
        len -= (size_t)n;
    }
    return true;
}

/* name as name.part, renamed once whole. */
static bool write_file(int dir, const char *name, const uint8_t *bytes, size_t len) {
    char partial[96];
    char text[256];
    out o = OUT_ON(text);
    put(&o, name);
    put(&o, ".part");
    if (o.len >= sizeof partial) return false;
    memcpy(partial, o.buf, o.len);
    partial[o.len] = 0;
    int fd = openat(dir, partial, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return false;
    bool ok = write_all(fd, bytes, len);
    ok = close(fd) == 0 && ok;
    if (ok && renameat(dir, partial, dir, name) != 0) ok = false;
    if (!ok) (void)unlinkat(dir, partial, 0);
    return ok;
}

static void seg_name_kind(char *name, size_t size, uint64_t seq, d9_segment_kind kind) {
    char text[256];
    out o = OUT_ON(text);
    put(&o, "trace.");
    put_u64(&o, seq);
    put(&o, d9_segment_kind_suffix(kind)); /* a constant string: safe here */
    size_t n = o.len < size - 1 ? o.len : size - 1;
    memcpy(name, o.buf, n);
    name[n] = 0;
}

static void seg_name(char *name, size_t size, uint64_t seq) { seg_name_kind(name, size, seq, D9_SEGMENT_SEALED); }

static const char *signal_name(int sig) {
    switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGILL: return "SIGILL";
    case SIGFPE: return "SIGFPE";
    case SIGABRT: return "SIGABRT";
    default: return "signal";
    }
}

static char g_manifest_text[65536], g_files_text[65536]; /* static: the stack may be short */
static out g_manifest = {.buf = g_manifest_text, .cap = sizeof g_manifest_text},
           g_files = {.buf = g_files_text, .cap = sizeof g_files_text};

static void write_dump(int sig, const siginfo_t *si) {
    uint64_t at = clock_ns(CLOCK_MONOTONIC);
    int64_t off = (int64_t)clock_ns(CLOCK_REALTIME) - (int64_t)at;
    int root = open(g_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (root < 0 && errno == ENOENT && mkdir(g_root, 0755) == 0) root = open(g_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (root < 0) {
        say("dial9: crash: no dump: cannot open ", g_root, "");
        return;
    }
    int dir = -1;
    if (mkdirat(root, g_name, 0700) == 0) dir = openat(root, g_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    close(root);
    if (dir < 0) {
        say("dial9: crash: no dump: cannot make its directory in ", g_root, "");
        return;
    }
    int m = openat(dir, ".dial9-dump", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (m >= 0) close(m);

    out *f = &g_files;
    f->len = 0;
    uint64_t segments = 0, bytes = 0, missing = atomic_load(&g_not_kept), from = 0, to = 0;
    bool disk = g_run_dir[0] != 0;
    uint64_t window_from = disk && at > g_lookback_ns ? at - g_lookback_ns : 0;
    int run = disk ? open(g_run_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (disk && run < 0) say("dial9: crash: the run's directory cannot be opened, the dump holds no segment: ", g_run_dir, "");
    uint64_t last_seq = 0, last_end = g_started_ns; /* disk: the newest sealed segment the table knows */
    bool any_sealed = false;
    const uint8_t *open_bytes = atomic_load(&d9_crash_open.bytes); /* after g_crashing: see the header */
    for (size_t i = 0; i <= SLOTS + 2; i++) {
        const uint8_t *p;
        size_t len;
        uint64_t seq, start, end;
        bool is_open = false;
        char name[64];
        if (i < SLOTS) {
            crash_slot *s = &g_slots[i];
            if (atomic_load(&s->state) != 2) continue;
            p = s->bytes, len = s->len, seq = s->seq, start = s->start_ns, end = s->end_ns;
            if (p && p == open_bytes) open_bytes = NULL; /* sealed meanwhile: it is here whole */
            if (!p && (!any_sealed || seq > last_seq)) last_seq = seq, last_end = end, any_sealed = true;
            if (!p && end < window_from) continue; /* disk: older than the look-back */
        } else if (!disk) {
            if (i > SLOTS) break;
            p = open_bytes;
            if (!p) continue;
            len = atomic_load_explicit(&d9_crash_open.len, memory_order_acquire);
            seq = atomic_load(&d9_crash_open.seq);
            start = atomic_load(&d9_crash_open.start_ns);
            end = at;
            is_open = true;
            if (!len) continue;
        } else {
            /* disk: the segment being written (trace.N.bin.active, up to the last drain) after
             * the newest sealed one, or one sealed so recently that the table has no entry yet */
            p = NULL, len = 0;
            seq = (any_sealed ? last_seq + 1 : 0) + (i - SLOTS);
            start = last_end, end = at;
            is_open = true;
        }
        seg_name(name, sizeof name, seq);
        if (disk && !p) {
            if (run < 0) continue;
            int rc = -1;
            if (is_open) {
                char active[64];
                seg_name_kind(active, sizeof active, seq, D9_SEGMENT_ACTIVE);
                rc = linkat(run, active, dir, name, 0);
                if (rc != 0) is_open = false; /* sealed since: under its sealed name below */
            }
            static const d9_segment_kind kinds[] = {D9_SEGMENT_SEALED, D9_SEGMENT_GZIP, D9_SEGMENT_ZSTD};
            for (size_t k = 0; rc != 0 && k < sizeof kinds / sizeof kinds[0]; k++) {
                seg_name_kind(name, sizeof name, seq, kinds[k]); /* the pipeline may have compressed it */
                rc = linkat(run, name, dir, name, 0);
            }
            if (rc != 0) {
                if (i < SLOTS) missing++; /* the table knew it: rotated away inside the window, or no link */
                continue;
            }
            struct stat st;
            len = fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 ? (size_t)st.st_size : 0;
            if (is_open && !len) {
                /* opened by the writer, nothing written yet (a rotation just before the crash,
                 * or a write refused): no event to keep, and an empty file is no trace to a
                 * reader; left out, as memory mode leaves out an empty open segment */
                (void)unlinkat(dir, name, 0);
                continue;
            }
        } else if (!write_file(dir, name, p, len)) {
            missing++;
            continue;
        }
        segments++;
        bytes += len;
        if (!from || start < from) from = start;
        if (end > to) to = end;
        put(f, segments > 1 ? ", " : "");
        put(f, "{\"file\": \"");
        put(f, name);
        put(f, "\", \"bytes\": ");
        put_u64(f, len);
        put(f, ", \"start_unix_ns\": ");
        put_i64(f, (int64_t)start + off);
        put(f, ", \"end_unix_ns\": ");
        put_i64(f, (int64_t)end + off);
        put(f, is_open ? ", \"open\": true}" : "}");
    }
    if (run >= 0) close(run);
    uint64_t held_from = from ? from : at;
    if (disk) from = window_from; /* disk: the window is the look-back; memory: all it held */
    if (!from) from = at;
    (void)fsync(dir); /* the segments' names before the manifest that vouches for them */

    out *o = &g_manifest;
    o->len = 0;
    put(o, "{\n  \"format\": \"dial9-dump\",\n  \"version\": 1,\n  \"run_id\": \"");
    put(o, g_name); /* {run_id}.crash: cut below */
    o->len -= strlen(".crash");
    put(o, "\",\n  \"pid\": ");
    put_u64(o, (uint64_t)getpid());
    put(o, disk ? ",\n  \"mode\": \"disk\"" : ",\n  \"mode\": \"memory\"");
    put(o, ",\n  \"trigger\": {\n    \"kind\": \"crash\",\n    \"event\": \"");
    put(o, signal_name(sig));
    if (si->si_code <= 0) { /* kill, tkill, sigqueue, raise: no fault, a sender */
        put(o, " sent by pid ");
        put_u64(o, (uint64_t)si->si_pid);
    } else if (sig == SIGSEGV || sig == SIGBUS) {
        put(o, " at address ");
        put_hex(o, (uint64_t)(uintptr_t)si->si_addr);
    }
    put(o, "\",\n    \"at_unix_ns\": ");
    put_i64(o, (int64_t)at + off);
    put(o, ",\n    \"at_mono_ns\": ");
    put_u64(o, at);
    put(o, ",\n    \"merged_triggers\": 0\n  },\n  \"window\": {\n    \"lookback_ms\": ");
    put_u64(o, (at - from) / 1000000);
    put(o, ",\n    \"lookforward_ms\": 0,\n    \"from_unix_ns\": ");
    put_i64(o, (int64_t)from + off);
    put(o, ",\n    \"to_unix_ns\": ");
    put_i64(o, (int64_t)at + off);
    put(o, ",\n    \"from_mono_ns\": ");
    put_u64(o, from);
    put(o, ",\n    \"to_mono_ns\": ");
    put_u64(o, at);
    put(o, "\n  },\n  \"holds\": {\n    \"segments\": ");
    put_u64(o, segments);
    put(o, ",\n    \"bytes\": ");
    put_u64(o, bytes);
    if (segments) {
        put(o, ",\n    \"from_unix_ns\": ");
        put_i64(o, (int64_t)held_from + off);
        put(o, ",\n    \"to_unix_ns\": ");
        put_i64(o, (int64_t)to + off);
    }
    if (disk)
        put(o, ",\n    \"symbols\": \"as the run's files have them (hard links: the sealed ones as the pipeline "
               "symbolized them; the open one has none, dial9 symbolize adds them)\",\n"
               "    \"contents\": \"the run's segments of the look-back before the crash, pinned by hard links: the "
               "sealed ones and the one being written up to the collector's last drain (events still in the "
               "threads' buffers are lost)\",\n    \"files\": [");
    else
        put(o, ",\n    \"symbols\": \"none: a crash dump is written inside the signal handler (dial9 analyze, stats "
               "and serve add them from the binaries on disk when they read it, as dial9 symbolize does)\",\n"
               "    \"contents\": \"everything the recorder held at the crash: its sealed segments and the open one up to "
               "its last drain (events still in the threads' buffers are lost, as in disk mode)\",\n    \"files\": [");
    if (o->len + f->len + 512 < o->cap) {
        memcpy(o->buf + o->len, f->buf, f->len);
        o->len += f->len;
    }
    uint64_t short_back = !segments ? at - from : held_from > from ? held_from - from : 0;
    put(o, "]\n  },\n  \"lacks\": {\n    \"lookback_ms\": ");
    put_u64(o, short_back / 1000000);
    if (short_back >= 1000000)
        put(o, held_from > g_started_ns || !segments
                   ? ",\n    \"lookback_why\": \"older segments were no longer held (rotated away on disk)\""
                   : ",\n    \"lookback_why\": \"the recording started later\"");
    put(o, ",\n    \"lookforward_ms\": 0,\n    \"segments_missing\": ");
    put_u64(o, missing);
    put(o, "\n  }\n}\n");
    bool ok = write_file(dir, "manifest.json", (const uint8_t *)o->buf, o->len);
    (void)fsync(dir);
    close(dir);
    char line_text[1024];
    out line = OUT_ON(line_text);
    put(&line, "dial9: crash (");
    put(&line, signal_name(sig));
    put(&line, ok ? "): dump written: " : "): the dump has no manifest (it could not be written): ");
    put(&line, g_root);
    put(&line, "/");
    put(&line, g_name);
    put(&line, "\n");
    (void)!write(STDERR_FILENO, line.buf, line.len);
}

static void crash_handler(int sig, siginfo_t *si, void *uc) {
    int saved_errno = errno;
    size_t k = 0;
    while (k < NSIG_OURS && k_signals[k] != sig) k++;
    long tid = syscall(SYS_gettid);
    if (getpid() == g_pid) {
        int was = atomic_exchange(&g_crashing, 1);
        if (!was) {
            atomic_store(&g_crash_tid, tid);
            write_dump(sig, si);
        } else if (atomic_load(&g_crash_tid) != tid) {
            /* another thread crashed first and is writing the dump: it ends the process */
            for (;;) pause();
        }
    }
    /* then the program's own action, as if we had not been there */
    if (k < NSIG_OURS) {
        struct sigaction prev = g_previous[k];
        sigaction(sig, &prev, NULL);
        errno = saved_errno;
        if ((prev.sa_flags & SA_SIGINFO) && prev.sa_sigaction) {
            prev.sa_sigaction(sig, si, uc);
            return;
        }
        if (!(prev.sa_flags & SA_SIGINFO) && prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN) {
            prev.sa_handler(sig);
            return;
        }
    }
    /* the default action: a fault comes back when the instruction runs again; a sent signal
     * (abort's raise, kill) is sent again, delivered once this handler returns */
    if (si->si_code <= 0 || sig == SIGABRT) raise(sig);
}

/* ---------------------------------------------------------------- install */

bool d9_crash_install(const char *dump_dir, const char *run_id, const char *disk_run_dir, uint64_t lookback_ns,
                      uint64_t started_ns) {
    g_pid = getpid();
    snprintf(g_root, sizeof g_root, "%s", dump_dir);
    snprintf(g_name, sizeof g_name, "%s.crash", run_id);
    snprintf(g_run_dir, sizeof g_run_dir, "%s", disk_run_dir ? disk_run_dir : "");
    g_lookback_ns = lookback_ns;
    g_started_ns = started_ns;
    for (size_t i = 0; i < SLOTS; i++) /* an earlier recording's files: another run directory's */
        if (atomic_load(&g_slots[i].state) == 2 && !g_slots[i].bytes) atomic_store(&g_slots[i].state, 0);
    atomic_store(&g_crashing, 0);
    atomic_store(&g_not_kept, 0);
    int n = 0;
    for (size_t k = 0; k < NSIG_OURS; k++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = crash_handler;
        sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
        sigfillset(&sa.sa_mask); /* nothing else runs on this thread meanwhile */
        struct sigaction cur;
        if (sigaction(k_signals[k], NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == crash_handler) {
            g_installed[k] = true; /* ours already (a forked child's start): what it chains to stays */
            n++;
            continue;
        }
        g_installed[k] = sigaction(k_signals[k], &sa, &g_previous[k]) == 0;
        n += g_installed[k];
    }
    if (!n) fprintf(stderr, "dial9: flight recorder: no crash dump (cannot set the signal handlers): %s\n", strerror(errno));
    return n > 0;
}

void d9_crash_uninstall(void) {
    for (size_t k = 0; k < NSIG_OURS; k++) {
        if (!g_installed[k]) continue;
        struct sigaction cur;
        if (sigaction(k_signals[k], NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == crash_handler)
            sigaction(k_signals[k], &g_previous[k], NULL);
        g_installed[k] = false;
    }
}

void d9_crash_forget_after_fork(void) {
    for (size_t i = 0; i < SLOTS; i++) atomic_store(&g_slots[i].state, 0);
    atomic_store(&d9_crash_open.bytes, NULL);
    /* the handlers stay (the child's dispositions are the parent's): they skip a dump by pid */
}
