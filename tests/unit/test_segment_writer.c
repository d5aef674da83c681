/* Segment writer: naming, size and period rotation, retention across runs, deleted
 * directories, write failures (via RLIMIT_FSIZE, which needs no privileges). Disk usage is
 * always measured with stat over the directory tree, never taken from the writer's counters.
 * The tmpfs disk-full test is test_segment_writer_disk_full.c. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "test_rng.h"
#include "sinks/segment_writer.h"
#include "trace_files_util.h"

/* ---------- helpers: temp dirs and measuring the tree ---------- */

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st; (void)flag; (void)ftw;
    return remove(path) == 0 || errno == ENOENT ? 0 : -1;
}

static void rm_rf(const char *path) { nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS); }

static void make_temp_dir(char *buf, size_t size) {
    snprintf(buf, size, "/tmp/d9-segw-test.XXXXXX");
    if (!mkdtemp(buf)) {
        perror("mkdtemp");
        exit(1);
    }
}


static int64_t file_size(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0 ? (int64_t)st.st_size : -1;
}

/* The trace directory's ledger of settled runs (sinks/run_ledger.h): its bytes count on disk. */
static uint64_t ledger_bytes(const char *trace_dir) {
    char p[512];
    snprintf(p, sizeof p, "%s/.dial9-runs", trace_dir);
    int64_t n = file_size(p);
    return n > 0 ? (uint64_t)n : 0;
}

static bool exists(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0;
}

static void write_file(const char *path, size_t len, uint8_t fill) {
    FILE *f = fopen(path, "wb");
    if (!f) {
        perror(path);
        exit(1);
    }
    for (size_t i = 0; i < len; i++) fputc(fill, f);
    fclose(f);
}

static void set_mtime(const char *path, time_t sec) {
    struct timespec ts[2] = {{.tv_sec = sec}, {.tv_sec = sec}};
    if (utimensat(AT_FDCWD, path, ts, AT_SYMLINK_NOFOLLOW) != 0) perror(path);
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(long ms) {
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

/* Distinct bytes per write, so misplaced data shows up when comparing contents. */
static void fill_pattern(uint8_t *buf, size_t len, uint32_t write_no) {
    for (size_t i = 0; i < len; i++) buf[i] = (uint8_t)(write_no * 131u + i * 7u + (i >> 8));
}

static bool file_equals(const char *path, const uint8_t *want, size_t len) {
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    bool same = true;
    for (size_t i = 0; i < len && same; i++) same = fgetc(f) == want[i];
    same = same && fgetc(f) == EOF;
    fclose(f);
    return same;
}

static void path_of(char *buf, size_t size, const char *dir, const char *run, const char *name) {
    snprintf(buf, size, "%s/%s/%s", dir, run, name);
}

struct sealed_log {
    int count;
    char last[512];
    bool last_needs_symbols;
};

static void on_sealed(const char *path, bool needs_symbols, d9_sym_input *symbols, void *ctx) {
    CHECK(symbols == NULL); /* not collected */
    struct sealed_log *log = ctx;
    log->count++;
    snprintf(log->last, sizeof log->last, "%s", path);
    log->last_needs_symbols = needs_symbols;
}

/* ---------- naming, epochs, bad configs ---------- */

static void test_naming_and_basics(void) {
    char dir[64], p[512], err[256];
    make_temp_dir(dir, sizeof dir);
    char base[128];
    snprintf(base, sizeof base, "%s/nested/traces", dir); /* created with mkdir -p */
    char base_slash[160];
    snprintf(base_slash, sizeof base_slash, "%s//", base); /* trailing slashes are dropped */
    d9_segw_config cfg = {.trace_dir = base_slash, .run_id = "run-1", .max_file_size = 4096,
                          .max_total_size = 16384};
    d9_segment_writer *w = d9_segw_open(&cfg, err, sizeof err);
    CHECK(w != NULL);
    if (!w) return;
    struct sealed_log log = {0};
    d9_segw_set_on_sealed(w, on_sealed, &log);

    snprintf(p, sizeof p, "%s/run-1", base);
    CHECK_STR(d9_segw_run_dir(w), p);
    struct stat st;
    /* the run's directory and files are the owner's only (they may hold kernel addresses) */
    CHECK(stat(p, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700);
    CHECK(stat(base, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0755); /* runs only */
    CHECK(d9_segw_active_path(w) == NULL);
    CHECK_EQ_U64(d9t_tree_bytes(dir, false), 0);
    CHECK(d9_segw_at_segment_start(w));
    CHECK_EQ_U64(d9_segw_room(w), 4096);
    uint64_t e0 = d9_segw_epoch(w);
    CHECK(e0 != 0);

    uint8_t buf[8192];
    fill_pattern(buf, 100, 1);
    CHECK(d9_segw_write(w, buf, 100) == 0);
    path_of(p, sizeof p, base, "run-1", "trace.0.bin.active");
    CHECK_STR(d9_segw_active_path(w), p);
    CHECK(stat(p, &st) == 0 && (st.st_mode & 0777) == 0600);
    CHECK(file_equals(p, buf, 100));
    CHECK(!d9_segw_at_segment_start(w));
    CHECK_EQ_U64(d9_segw_epoch(w), e0); /* same file: same epoch */
    CHECK_EQ_U64(d9_segw_room(w), 4096 - 100);
    CHECK(d9_segw_write(w, buf, 0) == 0); /* nothing to do */
    CHECK_EQ_U64(file_size(p), 100);

    d9_segw_rotate(w);
    uint64_t e1 = d9_segw_epoch(w);
    CHECK(e1 != e0);
    CHECK(!exists(p));
    path_of(p, sizeof p, base, "run-1", "trace.0.bin");
    CHECK(file_equals(p, buf, 100));
    CHECK_EQ_U64(log.count, 1);
    CHECK_STR(log.last, p);
    CHECK(!log.last_needs_symbols); /* nobody said it holds stacks */
    CHECK(d9_segw_active_path(w) == NULL);
    CHECK(d9_segw_at_segment_start(w));

    d9_segw_rotate(w); /* nothing open: nothing sealed, but the epoch still moves */
    CHECK(d9_segw_epoch(w) != e1);
    CHECK_EQ_U64(log.count, 1);

    d9_segw_note_needs_symbols(w); /* no segment open: about nothing */
    CHECK(d9_segw_write(w, buf, 50) == 0);
    d9_segw_note_needs_symbols(w); /* these 50 bytes hold stacks */
    path_of(p, sizeof p, base, "run-1", "trace.1.bin.active");
    CHECK_STR(d9_segw_active_path(w), p);

    /* A write that overruns room is refused (it continues a stream) and the segment sealed. */
    uint64_t e2 = d9_segw_epoch(w);
    CHECK(d9_segw_write(w, buf, 4096) == -1);
    CHECK(d9_segw_epoch(w) != e2);
    path_of(p, sizeof p, base, "run-1", "trace.1.bin");
    CHECK_EQ_U64(file_size(p), 50);
    CHECK_STR(log.last, p);
    CHECK(log.last_needs_symbols);
    CHECK(d9_segw_at_segment_start(w));
    CHECK(d9_segw_write(w, buf, 4096) == 0); /* the retry fits an empty segment exactly */
    CHECK_EQ_U64(d9_segw_room(w), 0);

    /* A write larger than max_total_size can never fit: lost, nothing deleted, no loop. */
    d9_segw_rotate(w);
    CHECK(!log.last_needs_symbols); /* said of the segment before, not of this one */
    d9_segw_stats s;
    d9_segw_get_stats(w, &s);
    uint64_t lost0 = s.bytes_lost, errs0 = s.write_errors;
    static uint8_t huge[20000];
    CHECK(d9_segw_write(w, huge, sizeof huge) == -1);
    d9_segw_get_stats(w, &s);
    CHECK_EQ_U64(s.bytes_lost - lost0, sizeof huge);
    CHECK_EQ_U64(s.write_errors - errs0, 1);
    CHECK_EQ_U64(s.files_deleted, 0);
    CHECK_EQ_U64(s.bytes_on_disk, d9t_tree_bytes(dir, false));

    CHECK(d9_segw_write(w, buf, 10) == 0);
    d9_segw_close(w);
    path_of(p, sizeof p, base, "run-1", "trace.3.bin");
    CHECK_EQ_U64(file_size(p), 10);
    CHECK_EQ_U64(log.count, 4);
    CHECK_STR(log.last, p);
    d9_segw_close(NULL);

    /* A run that wrote nothing leaves no directory behind. */
    cfg.run_id = "run-empty";
    w = d9_segw_open(&cfg, err, sizeof err);
    CHECK(w != NULL);
    snprintf(p, sizeof p, "%s/run-empty", base);
    CHECK(exists(p));
    d9_segw_close(w);
    CHECK(!exists(p));

    /* Bad configurations fail with a message. */
    struct {
        const char *trace_dir, *run_id;
        uint64_t file, total;
    } bad[] = {
        {NULL, "r", 10, 10},  {"", "r", 10, 10},    {base, NULL, 10, 10}, {base, "", 10, 10},
        {base, "a/b", 10, 10}, {base, "..", 10, 10}, {base, ".", 10, 10}, {base, "r", 0, 10},
        {base, "r", 10, 9},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        d9_segw_config b = {.trace_dir = bad[i].trace_dir, .run_id = bad[i].run_id,
                            .max_file_size = bad[i].file, .max_total_size = bad[i].total};
        err[0] = '\0';
        d9_segment_writer *bw = d9_segw_open(&b, err, sizeof err);
        CHECK(bw == NULL);
        CHECK(err[0] != '\0');
        d9_segw_close(bw);
    }
    /* trace_dir is a regular file: not creatable. */
    snprintf(p, sizeof p, "%s/plainfile", dir);
    write_file(p, 1, 'x');
    d9_segw_config f = {.trace_dir = p, .run_id = "r", .max_file_size = 10, .max_total_size = 10};
    err[0] = '\0';
    CHECK(d9_segw_open(&f, err, sizeof err) == NULL);
    CHECK(strstr(err, p) != NULL && strstr(err, "Not a directory") != NULL);
    rm_rf(dir);
}

/* ---------- many writes with tiny limits ---------- */

struct segment_model {
    uint8_t *data;
    size_t len;
    bool oversized; /* holds one write larger than max_file_size */
};

static d9t_rng rng_state = {D9T_RNG_SEED};
static uint32_t rng(void) { return (uint32_t)(d9t_rng_next(&rng_state) >> 16); }

static uint64_t seq_of_path(const char *path) {
    const char *name = strrchr(path, '/');
    unsigned long long n = 0;
    if (name) sscanf(name, "/trace.%llu.", &n);
    return n;
}

/* Check the run directory against the model: names, sizes, contents, oldest deleted first. */
static void check_run_dir(const char *run_dir, struct segment_model *segs, uint64_t nsegs,
                          uint64_t active_seq, bool have_active, uint64_t max_file) {
    DIR *d = opendir(run_dir);
    CHECK(d != NULL);
    if (!d) return;
    uint64_t lowest = UINT64_MAX, highest_sealed = 0, sealed = 0;
    bool bad_name = false;
    struct dirent *de;
    char p[512];
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.') continue;
        unsigned long long n;
        int end = 0;
        snprintf(p, sizeof p, "%s/%s", run_dir, de->d_name);
        if (sscanf(de->d_name, "trace.%llu.bin%n", &n, &end) != 1 || end == 0 || n >= nsegs) {
            bad_name = true;
            continue;
        }
        const char *rest = de->d_name + end;
        if (strcmp(rest, ".active") == 0) {
            if (!have_active || n != active_seq) bad_name = true;
            if (!file_equals(p, segs[n].data, segs[n].len)) {
                CHECK(!"active file content");
            }
            continue;
        }
        if (*rest != '\0' || (have_active && n == active_seq)) {
            bad_name = true;
            continue;
        }
        sealed++;
        if (n < lowest) lowest = n;
        if (n > highest_sealed) highest_sealed = n;
        int64_t sz = file_size(p);
        if (sz < 0 || ((uint64_t)sz > max_file && !segs[n].oversized)) CHECK(!"sealed file too big");
        if (!file_equals(p, segs[n].data, segs[n].len)) CHECK(!"sealed file content");
    }
    closedir(d);
    CHECK(!bad_name);
    /* Surviving sealed files are the newest ones, with no gap (oldest deleted first). */
    if (sealed) CHECK_EQ_U64(highest_sealed - lowest + 1, sealed);
}

static void test_many_writes_tiny_limits(void) {
    char dir[64], err[256];
    make_temp_dir(dir, sizeof dir);
    const uint64_t max_file = 4096, max_total = 16384;
    d9_segw_config cfg = {.trace_dir = dir, .run_id = "r", .max_file_size = max_file,
                          .max_total_size = max_total};
    d9_segment_writer *w = d9_segw_open(&cfg, err, sizeof err);
    CHECK(w != NULL);
    if (!w) return;
    char run_dir[128];
    snprintf(run_dir, sizeof run_dir, "%s/r", dir);

    enum { WRITES = 800, MAX_SEGS = 2000 };
    static struct segment_model segs[MAX_SEGS];
    memset(segs, 0, sizeof segs);
    static uint8_t buf[12000];
    uint64_t written = 0, nsegs = 0, rotations = 0;
    int over_budget = 0, wrong_start = 0, epoch_kept_on_rotation = 0, epoch_moved_in_file = 0;
    uint64_t last_epoch = d9_segw_epoch(w);

    for (uint32_t i = 0; i < WRITES; i++) {
        uint32_t r = rng();
        size_t len;
        switch (r % 16) {
        case 0: len = max_file + 1 + rng() % 6000; break;     /* oversized, up to 10 KiB */
        case 1: len = (size_t)d9_segw_room(w); break;         /* exactly what is left */
        case 2: len = 1; break;
        default: len = 1 + rng() % 1500; break;
        }
        if (len == 0) len = 1;
        /* The caller's protocol: rotate when the write does not fit, sometimes for no reason. */
        if ((len > d9_segw_room(w) && !d9_segw_at_segment_start(w)) || rng() % 50 == 0) {
            uint64_t before = d9_segw_epoch(w);
            bool had_file = d9_segw_active_path(w) != NULL;
            d9_segw_rotate(w);
            if (d9_segw_epoch(w) == before) epoch_kept_on_rotation++;
            if (had_file) rotations++;
        }
        bool starts_file = d9_segw_at_segment_start(w);
        const char *ap = d9_segw_active_path(w);
        if (starts_file != (ap == NULL || file_size(ap) == 0)) wrong_start++;
        uint64_t epoch_before = d9_segw_epoch(w);
        if (!starts_file && epoch_before != last_epoch) epoch_moved_in_file++;

        fill_pattern(buf, len, i);
        int rc = d9_segw_write(w, buf, len);
        CHECK(rc == 0);
        if (rc != 0) break;
        written += len;
        last_epoch = d9_segw_epoch(w);
        CHECK_EQ_U64(last_epoch, epoch_before);

        ap = d9_segw_active_path(w);
        CHECK(ap != NULL);
        if (!ap) break;
        uint64_t seq = seq_of_path(ap);
        CHECK(seq < MAX_SEGS);
        if (seq >= MAX_SEGS) break;
        if (seq + 1 > nsegs) nsegs = seq + 1;
        struct segment_model *m = &segs[seq];
        CHECK(starts_file == (m->len == 0));
        m->data = realloc(m->data, m->len + len);
        memcpy(m->data + m->len, buf, len);
        m->len += len;
        if (len > max_file) m->oversized = true;
        CHECK(!d9_segw_at_segment_start(w));

        uint64_t on_disk = d9t_tree_bytes(dir, false);
        if (on_disk > max_total) over_budget++;
        d9_segw_stats s;
        d9_segw_get_stats(w, &s);
        CHECK_EQ_U64(s.bytes_on_disk, on_disk);
        check_run_dir(run_dir, segs, nsegs, seq, true, max_file);
    }
    CHECK_EQ_U64(over_budget, 0);
    CHECK_EQ_U64(wrong_start, 0);
    CHECK_EQ_U64(epoch_kept_on_rotation, 0);
    CHECK_EQ_U64(epoch_moved_in_file, 0);
    CHECK(rotations > 100); /* the limits really were exercised */

    d9_segw_stats s;
    d9_segw_get_stats(w, &s);
    CHECK_EQ_U64(s.bytes_written, written);
    CHECK_EQ_U64(s.bytes_lost, 0);
    CHECK_EQ_U64(s.write_errors, 0);
    d9_segw_close(w);
    check_run_dir(run_dir, segs, nsegs, 0, false, max_file);
    CHECK(d9t_tree_bytes(dir, false) <= max_total);
    /* Every sealed segment is either still there or was deleted (and counted). */
    uint64_t present = 0;
    char p[512];
    for (uint64_t n = 0; n < nsegs; n++) {
        snprintf(p, sizeof p, "%s/trace.%llu.bin", run_dir, (unsigned long long)n);
        if (exists(p)) present++;
    }
    CHECK_EQ_U64(s.segments_sealed + 1, nsegs); /* the last one was sealed by close */
    CHECK_EQ_U64(s.files_deleted + present, nsegs);
    printf("many writes: %d writes, %llu segments, %llu deleted, %llu bytes written\n", WRITES,
           (unsigned long long)nsegs, (unsigned long long)s.files_deleted,
           (unsigned long long)written);
    for (uint64_t n = 0; n < nsegs; n++) free(segs[n].data);
    rm_rf(dir);
}

/* ---------- rotation by period ---------- */

static void test_period_rotation(void) {
    char dir[64], err[256], p[512];
    make_temp_dir(dir, sizeof dir);
    const uint64_t period = 40 * 1000000u;
    d9_segw_config cfg = {.trace_dir = dir, .run_id = "r", .max_file_size = 1 << 20,
                          .max_total_size = 1 << 22, .rotation_ns = period};
    d9_segment_writer *w = d9_segw_open(&cfg, err, sizeof err);
    CHECK(w != NULL);
    if (!w) return;
    CHECK(!d9_segw_rotation_due(w, now_ns() + 10 * period)); /* no segment yet */
    uint8_t buf[64] = {1};
    uint64_t t0 = now_ns();
    CHECK(d9_segw_write(w, buf, sizeof buf) == 0);
    uint64_t t1 = now_ns();
    CHECK(!d9_segw_rotation_due(w, t0 + period - 1)); /* opened at or after t0 */
    CHECK(d9_segw_rotation_due(w, t1 + period));      /* opened at or before t1 */
    sleep_ms(60);
    CHECK(d9_segw_rotation_due(w, now_ns()));
    d9_segw_rotate(w);
    CHECK(!d9_segw_rotation_due(w, now_ns() + 10 * period));
    snprintf(p, sizeof p, "%s/r/trace.0.bin", dir);
    CHECK_EQ_U64(file_size(p), sizeof buf);

    /* The next segment's clock starts when it is opened, not at the rotation. */
    sleep_ms(60);
    uint64_t t2 = now_ns();
    CHECK(d9_segw_write(w, buf, sizeof buf) == 0);
    uint64_t t3 = now_ns();
    CHECK(!d9_segw_rotation_due(w, t2 + period - 1));
    CHECK(d9_segw_rotation_due(w, t3 + period));
    d9_segw_close(w);

    cfg.rotation_ns = 0; /* never due */
    cfg.run_id = "r2";
    w = d9_segw_open(&cfg, err, sizeof err);
    CHECK(w != NULL);
    if (w) {
        CHECK(d9_segw_write(w, buf, sizeof buf) == 0);
        CHECK(!d9_segw_rotation_due(w, now_ns() + 1000000000000ull));
        d9_segw_close(w);
    }
    rm_rf(dir);
}

/* ---------- restart: earlier runs' files ---------- */

static void write_run(const char *dir, const char *run, int segments, size_t seg_len) {
    char err[256];
    d9_segw_config cfg = {.trace_dir = dir, .run_id = run, .max_file_size = seg_len,
                          .max_total_size = 1 << 30};
    d9_segment_writer *w = d9_segw_open(&cfg, err, sizeof err);
    CHECK(w != NULL);
    if (!w) return;
    uint8_t *buf = malloc(seg_len);
    for (int i = 0; i < segments; i++) {
        fill_pattern(buf, seg_len, (uint32_t)i);
        CHECK(d9_segw_write(w, buf, seg_len) == 0);
        d9_segw_rotate(w);
    }
    free(buf);
    d9_segw_close(w);
}

static void test_restart_deletes_oldest_first(void) {
    char dir[64], err[256], p[512];
    make_temp_dir(dir, sizeof dir);
    write_run(dir, "run-a", 3, 1000);
    const time_t t = 1700000000;
    path_of(p, sizeof p, dir, "run-a", "trace.0.bin"); set_mtime(p, t + 10);
    path_of(p, sizeof p, dir, "run-a", "trace.1.bin"); set_mtime(p, t + 20);
    path_of(p, sizeof p, dir, "run-a", "trace.2.bin"); set_mtime(p, t + 20); /* tie: by N */

    /* A crashed run: a leftover .active, a compressed segment, and files that are not ours. */
    snprintf(p, sizeof p, "%s/run-c", dir); mkdir(p, 0755);
    path_of(p, sizeof p, dir, "run-c", "trace.0.bin.active"); write_file(p, 500, 'c'); set_mtime(p, t + 5);
    path_of(p, sizeof p, dir, "run-c", "trace.1.bin.gz"); write_file(p, 700, 'z'); set_mtime(p, t + 15);
    path_of(p, sizeof p, dir, "run-c", "notes.txt"); write_file(p, 300, 'n'); set_mtime(p, t);
    path_of(p, sizeof p, dir, "run-c", "trace.x.bin"); write_file(p, 300, 'x'); set_mtime(p, t);
    path_of(p, sizeof p, dir, "run-c", "trace.4.bin.tmp"); write_file(p, 300, 't'); set_mtime(p, t);
    char outside[512];
    snprintf(outside, sizeof outside, "%s/outside.bin", dir);
    write_file(outside, 300, 'o');
    path_of(p, sizeof p, dir, "run-c", "trace.9.bin");
    CHECK(symlink(outside, p) == 0); /* never followed, never counted, never deleted */
    snprintf(p, sizeof p, "%s/run-d", dir); mkdir(p, 0755);
    path_of(p, sizeof p, dir, "run-d", "trace.0.bin"); write_file(p, 800, 'd'); set_mtime(p, t + 12);
    snprintf(p, sizeof p, "%s/run-e", dir); mkdir(p, 0755);
    path_of(p, sizeof p, dir, "run-e", "trace.0.bin"); write_file(p, 100, 'e'); set_mtime(p, t + 10);
    snprintf(p, sizeof p, "%s/trace.0.bin", dir); write_file(p, 300, 'r'); /* not in a run dir */

    const uint64_t existing = 3000 + 500 + 700 + 800 + 100;
    CHECK_EQ_U64(d9t_tree_bytes(dir, true) - 300 /* the one at the top */, existing);

    const uint64_t max_total = 6000;
    d9_segw_config cfg = {.trace_dir = dir, .run_id = "run-b", .max_file_size = 1000,
                          .max_total_size = max_total};
    d9_segment_writer *w = d9_segw_open(&cfg, err, sizeof err);
    CHECK(w != NULL);
    if (!w) return;
    d9_segw_stats s;
    d9_segw_get_stats(w, &s);
    /* and the ledger's, where the scan found the runs settled (their directories unchanged for
     * 2 s: this setup under a loaded sanitizer run can take that long) */
    CHECK_EQ_U64(s.bytes_on_disk, existing + ledger_bytes(dir));

    /* Expected deletion order: mtime, then run name, then N. */
    static const char *const order[][2] = {
        {"run-c", "trace.0.bin.active"}, {"run-a", "trace.0.bin"}, {"run-e", "trace.0.bin"},
        {"run-d", "trace.0.bin"},        {"run-c", "trace.1.bin.gz"}, {"run-a", "trace.1.bin"},
        {"run-a", "trace.2.bin"},        {"run-b", "trace.0.bin"},
    };
    const int norder = (int)(sizeof order / sizeof order[0]);
    uint8_t buf[1000], want[1000];
    int order_broken = 0, over = 0, overwritten = 0;
    for (int i = 0; i < 7; i++) { /* the 7th write deletes run-b's own trace.0.bin */
        if (!d9_segw_at_segment_start(w)) d9_segw_rotate(w);
        fill_pattern(buf, sizeof buf, 100u + (uint32_t)i);
        CHECK(d9_segw_write(w, buf, sizeof buf) == 0);
        if (d9t_tree_bytes(dir, true) - 300 > max_total) over++;
        /* The deleted files are a prefix of the expected order. */
        bool gone_seen_end = false;
        for (int k = 0; k < norder; k++) {
            path_of(p, sizeof p, dir, order[k][0], order[k][1]);
            bool present = exists(p);
            if (k == norder - 1 && !present) { /* run-b's first segment may not be sealed yet */
                path_of(p, sizeof p, dir, order[k][0], "trace.0.bin.active");
                present = exists(p);
            }
            if (!present && gone_seen_end) order_broken++;
            if (present) gone_seen_end = true;
        }
        /* Surviving files of run-a are untouched. */
        for (int n = 0; n < 3; n++) {
            snprintf(p, sizeof p, "%s/run-a/trace.%d.bin", dir, n);
            fill_pattern(want, sizeof want, (uint32_t)n);
            if (exists(p) && !file_equals(p, want, sizeof want)) overwritten++;
        }
    }
    CHECK_EQ_U64(order_broken, 0);
    CHECK_EQ_U64(over, 0);
    CHECK_EQ_U64(overwritten, 0);
    d9_segw_get_stats(w, &s);
    CHECK_EQ_U64(s.files_deleted, 8);
    CHECK_EQ_U64(s.bytes_on_disk, d9t_tree_bytes(dir, true) - 300);

    /* Emptied run directories are removed; one with foreign files stays, with them. */
    snprintf(p, sizeof p, "%s/run-a", dir); CHECK(!exists(p));
    snprintf(p, sizeof p, "%s/run-d", dir); CHECK(!exists(p));
    snprintf(p, sizeof p, "%s/run-e", dir); CHECK(!exists(p));
    path_of(p, sizeof p, dir, "run-c", "notes.txt"); CHECK_EQ_U64(file_size(p), 300);
    path_of(p, sizeof p, dir, "run-c", "trace.x.bin"); CHECK_EQ_U64(file_size(p), 300);
    path_of(p, sizeof p, dir, "run-c", "trace.4.bin.tmp"); CHECK_EQ_U64(file_size(p), 300);
    path_of(p, sizeof p, dir, "run-c", "trace.9.bin"); CHECK(exists(p));
    CHECK_EQ_U64(file_size(outside), 300);
    snprintf(p, sizeof p, "%s/trace.0.bin", dir); CHECK_EQ_U64(file_size(p), 300);
    /* The current run's own oldest segment went too, but never its directory. */
    path_of(p, sizeof p, dir, "run-b", "trace.0.bin"); CHECK(!exists(p));
    path_of(p, sizeof p, dir, "run-b", "trace.1.bin"); CHECK_EQ_U64(file_size(p), 1000);
    snprintf(p, sizeof p, "%s/run-b", dir); CHECK(exists(p));
    d9_segw_close(w);
    rm_rf(dir);
}

/* A reused run id continues after the highest N instead of overwriting. */
static void test_reused_run_id(void) {
    char dir[64], err[256], p[512];
    make_temp_dir(dir, sizeof dir);
    write_run(dir, "same", 2, 100);
    path_of(p, sizeof p, dir, "same", "trace.5.bin.active"); /* a crash leftover, N=5 */
    write_file(p, 10, 'a');
    d9_segw_config cfg = {.trace_dir = dir, .run_id = "same", .max_file_size = 100,
                          .max_total_size = 10000};
    d9_segment_writer *w = d9_segw_open(&cfg, err, sizeof err);
    CHECK(w != NULL);
    if (!w) return;
    uint8_t buf[100];
    fill_pattern(buf, sizeof buf, 77);
    CHECK(d9_segw_write(w, buf, sizeof buf) == 0);
    path_of(p, sizeof p, dir, "same", "trace.6.bin.active");
    CHECK_STR(d9_segw_active_path(w), p);
    d9_segw_close(w);
    uint8_t want[100];
    for (int n = 0; n < 2; n++) {
        snprintf(p, sizeof p, "%s/same/trace.%d.bin", dir, n);
        fill_pattern(want, sizeof want, (uint32_t)n);
        CHECK(file_equals(p, want, sizeof want));
    }
    path_of(p, sizeof p, dir, "same", "trace.6.bin");
    CHECK(file_equals(p, buf, sizeof buf));
    rm_rf(dir);
}

/* A segment another live writer holds is counted but never deleted. */
static void test_live_writer_is_not_deleted(void) {
    char dir[64], err[256], p[512];
    make_temp_dir(dir, sizeof dir);
    d9_segw_config cx = {.trace_dir = dir, .run_id = "x", .max_file_size = 1000,
                         .max_total_size = 100000};
    d9_segment_writer *x = d9_segw_open(&cx, err, sizeof err);
    CHECK(x != NULL);
    if (!x) return;
    uint8_t buf[1000];
    fill_pattern(buf, sizeof buf, 5);
    CHECK(d9_segw_write(x, buf, 800) == 0);

    d9_segw_config cy = {.trace_dir = dir, .run_id = "y", .max_file_size = 1000,
                         .max_total_size = 1500};
    d9_segment_writer *y = d9_segw_open(&cy, err, sizeof err);
    CHECK(y != NULL);
    if (!y) {
        d9_segw_close(x);
        return;
    }
    d9_segw_stats s;
    d9_segw_get_stats(y, &s);
    CHECK_EQ_U64(s.bytes_on_disk, 800);
    CHECK(d9_segw_write(y, buf, 700) == 0);  /* 800 + 700 fits */
    d9_segw_rotate(y);
    CHECK(d9_segw_write(y, buf, 700) == 0);  /* deletes y's own trace.0.bin, not x's file */
    d9_segw_rotate(y);
    CHECK(d9_segw_write(y, buf, 1000) == -1); /* 800 can never be freed: cannot fit */
    path_of(p, sizeof p, dir, "x", "trace.0.bin.active");
    CHECK_EQ_U64(file_size(p), 800);
    CHECK(d9t_tree_bytes(dir, false) <= 1500);
    d9_segw_get_stats(y, &s);
    CHECK_EQ_U64(s.files_deleted, 1);
    CHECK_EQ_U64(s.bytes_lost, 1000);
    d9_segw_close(y);
    d9_segw_close(x);
    rm_rf(dir);
}

/* ---------- deleted directories ---------- */

static void test_deleted_directory(void) {
    char dir[64], err[256], p[512];
    make_temp_dir(dir, sizeof dir);
    char base[128];
    snprintf(base, sizeof base, "%s/traces", dir);
    d9_segw_config cfg = {.trace_dir = base, .run_id = "r", .max_file_size = 1000,
                          .max_total_size = 3000};
    d9_segment_writer *w = d9_segw_open(&cfg, err, sizeof err);
    CHECK(w != NULL);
    if (!w) return;
    uint8_t buf[100];
    fill_pattern(buf, sizeof buf, 1);
    CHECK(d9_segw_write(w, buf, 100) == 0);
    d9_segw_rotate(w);
    CHECK(d9_segw_write(w, buf, 100) == 0);

    /* rm -rf the run directory under a segment holding bytes. */
    rm_rf(d9_segw_run_dir(w));
    uint64_t e = d9_segw_epoch(w);
    CHECK(d9_segw_write(w, buf, 60) == -1); /* continues a stream whose start is gone */
    CHECK(d9_segw_epoch(w) != e);
    CHECK(d9_segw_at_segment_start(w));
    d9_segw_stats s;
    d9_segw_get_stats(w, &s);
    CHECK_EQ_U64(s.bytes_lost, 60);
    CHECK_EQ_U64(s.write_errors, 1);
    CHECK_EQ_U64(s.bytes_on_disk, 0); /* the vanished sealed file is forgotten too */
    e = d9_segw_epoch(w);
    CHECK(d9_segw_write(w, buf, 100) == 0);
    path_of(p, sizeof p, base, "r", "trace.2.bin.active"); /* a new segment */
    CHECK_STR(d9_segw_active_path(w), p);
    CHECK(file_equals(p, buf, 100));
    CHECK_EQ_U64(d9_segw_epoch(w), e);
    d9_segw_get_stats(w, &s);
    CHECK_EQ_U64(s.bytes_on_disk, d9t_tree_bytes(dir, false));

    /* The whole trace_dir deleted between segments: the next write starts a new stream anyway,
     * so it lands in a new file in recreated directories. */
    d9_segw_rotate(w);
    rm_rf(base);
    e = d9_segw_epoch(w);
    CHECK(d9_segw_write(w, buf, 100) == 0);
    path_of(p, sizeof p, base, "r", "trace.3.bin.active");
    CHECK_STR(d9_segw_active_path(w), p);
    CHECK(file_equals(p, buf, 100));
    CHECK_EQ_U64(d9_segw_epoch(w), e);
    d9_segw_get_stats(w, &s);
    CHECK_EQ_U64(s.bytes_on_disk, 100);
    CHECK_EQ_U64(s.bytes_on_disk, d9t_tree_bytes(dir, false));

    /* Only the active file deleted. */
    CHECK(unlink(p) == 0);
    e = d9_segw_epoch(w);
    CHECK(d9_segw_write(w, buf, 10) == -1);
    CHECK(d9_segw_epoch(w) != e);
    CHECK(d9_segw_write(w, buf, 10) == 0);
    path_of(p, sizeof p, base, "r", "trace.4.bin.active");
    CHECK_STR(d9_segw_active_path(w), p);

    /* Budget still holds afterwards. */
    for (int i = 0; i < 50; i++) {
        if (d9_segw_room(w) < 100) d9_segw_rotate(w);
        CHECK(d9_segw_write(w, buf, 100) == 0);
        CHECK(d9t_tree_bytes(dir, false) <= 3000);
    }
    d9_segw_close(w);
    rm_rf(dir);
}

/* ---------- write failures (RLIMIT_FSIZE: EFBIG after a partial write) ---------- */

static void test_write_failure_truncates(void) {
    char dir[64], err[256];
    make_temp_dir(dir, sizeof dir);
    d9_segw_config cfg = {.trace_dir = dir, .run_id = "r", .max_file_size = 1 << 20,
                          .max_total_size = 1 << 22};
    d9_segment_writer *w = d9_segw_open(&cfg, err, sizeof err);
    CHECK(w != NULL);
    if (!w) return;
    struct rlimit old;
    getrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, SIG_IGN); /* get EFBIG instead of the signal */
    struct rlimit lim = {.rlim_cur = 10000, .rlim_max = old.rlim_max};
    if (setrlimit(RLIMIT_FSIZE, &lim) != 0) {
        printf("SKIP write failure test: setrlimit: %s\n", strerror(errno));
        d9_segw_close(w);
        rm_rf(dir);
        return;
    }
    static uint8_t expect[20000];
    size_t expect_len = 0;
    uint8_t buf[3000];
    for (uint32_t i = 0; i < 3; i++) {
        fill_pattern(buf, sizeof buf, i);
        CHECK(d9_segw_write(w, buf, sizeof buf) == 0);
        memcpy(expect + expect_len, buf, sizeof buf);
        expect_len += sizeof buf;
    }
    const char *ap = d9_segw_active_path(w);
    char active[512];
    snprintf(active, sizeof active, "%s", ap ? ap : "");
    uint64_t e = d9_segw_epoch(w);
    struct timespec c0, c1; /* CPU time: a busy machine stretches the wall clock, not this */
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
    CHECK(d9_segw_write(w, buf, sizeof buf) == -1); /* 1000 bytes land, then EFBIG */
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
    int64_t took = (int64_t)(c1.tv_sec - c0.tv_sec) * 1000000000 + (c1.tv_nsec - c0.tv_nsec);
    CHECK(took < 100000000); /* fails at once: no retry loop */
    CHECK(d9_segw_epoch(w) != e);
    CHECK(file_equals(active, expect, expect_len)); /* cut back to the last good write */
    CHECK(!d9_segw_at_segment_start(w));
    d9_segw_stats s;
    d9_segw_get_stats(w, &s);
    CHECK_EQ_U64(s.bytes_lost, sizeof buf);
    CHECK_EQ_U64(s.write_errors, 1);
    CHECK_EQ_U64(s.bytes_written, 9000);
    CHECK_EQ_U64(s.bytes_on_disk, 9000);

    fill_pattern(buf, 500, 9); /* still fits under the limit: the next call tries again */
    CHECK(d9_segw_write(w, buf, 500) == 0);
    memcpy(expect + expect_len, buf, 500);
    expect_len += 500;
    CHECK(d9_segw_write(w, buf, 600) == -1);
    CHECK(d9_segw_write(w, buf, 600) == -1);
    CHECK(file_equals(active, expect, expect_len));

    setrlimit(RLIMIT_FSIZE, &old);
    fill_pattern(buf, 600, 10);
    CHECK(d9_segw_write(w, buf, 600) == 0);
    memcpy(expect + expect_len, buf, 600);
    expect_len += 600;
    CHECK(file_equals(active, expect, expect_len));
    d9_segw_get_stats(w, &s);
    CHECK_EQ_U64(s.bytes_lost, 3000 + 1200);
    CHECK_EQ_U64(s.write_errors, 3);
    CHECK_EQ_U64(s.bytes_written, expect_len);
    signal(SIGXFSZ, SIG_DFL);
    d9_segw_close(w);
    rm_rf(dir);
}

/* ---------- growth after sealing (symbols appended by the pipeline) ---------- */

/* A lagging pipeline: each sealed file grows at once by GROWTH bytes, but the writer hears of
 * the new sizes only every few seals (the pipeline notes them when it gets to them). */
#define GROWTH 300
struct lagging {
    d9_segment_writer *w;
    char pending[8][512];
    int npending;
};

static void grow_on_sealed(const char *path, bool needs_symbols, d9_sym_input *symbols, void *ctx) {
    (void)needs_symbols;
    CHECK(symbols == NULL);
    struct lagging *l = ctx;
    int fd = open(path, O_WRONLY | O_APPEND);
    static const uint8_t zeros[GROWTH];
    CHECK(fd >= 0 && write(fd, zeros, GROWTH) == GROWTH);
    close(fd);
    snprintf(l->pending[l->npending++], sizeof l->pending[0], "%s", path);
    if (l->npending == 4) {
        for (int i = 0; i < l->npending; i++) d9_segw_note_resized(l->w, l->pending[i], (uint64_t)file_size(l->pending[i]));
        l->npending = 0;
    }
}

/* Files that grow after sealing stay within max_file_size (the writer keeps the room in each
 * segment) and within max_total_size at every moment, before their growth is noted too. */
static void test_growth_after_sealing(void) {
    char dir[256];
    make_temp_dir(dir, sizeof dir);
    d9_segw_config cfg = {.trace_dir = dir, .run_id = "grow", .max_file_size = 2000, .max_total_size = 9000};
    char err[256];
    d9_segment_writer *w = d9_segw_open(&cfg, err, sizeof err);
    CHECK(w != NULL);
    struct lagging l = {.w = w};
    d9_segw_set_on_sealed(w, grow_on_sealed, &l);
    d9_segw_set_growth_reserve(w, GROWTH);
    CHECK_EQ_U64(d9_segw_room(w), 2000 - GROWTH);
    uint8_t buf[200];
    fill_pattern(buf, sizeof buf, 1);
    uint64_t worst = 0;
    for (int i = 0; i < 400; i++) {
        if (d9_segw_room(w) < sizeof buf) d9_segw_rotate(w);
        CHECK(d9_segw_write(w, buf, sizeof buf) == 0);
        uint64_t on_disk = d9t_tree_bytes(dir, true);
        if (on_disk > worst) worst = on_disk;
    }
    d9_segw_stats st;
    d9_segw_get_stats(w, &st);
    printf("growth after sealing: %" PRIu64 " segments, %" PRIu64 " deleted, at most %" PRIu64
           " bytes on disk (budget 9000)\n", st.segments_sealed, st.files_deleted, worst);
    CHECK(st.segments_sealed > 20 && st.files_deleted > 10);
    CHECK(worst <= cfg.max_total_size);
    d9_segw_close(w);
    char run_dir[512];
    snprintf(run_dir, sizeof run_dir, "%s/grow", dir);
    DIR *d = opendir(run_dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", run_dir, e->d_name);
        CHECK(file_size(path) <= 2000);
    }
    if (d) closedir(d);
    rm_rf(dir);
}

/* The index reads directories in buffers of entries: a run directory and a trace directory
 * with more entries than one buffer holds are counted whole (and the new run's sequence
 * starts after the highest number already in its own directory). */
static void test_scan_large_directories(void) {
    char dir[64], p[512], err[256];
    make_temp_dir(dir, sizeof dir);
    enum { FILES = 1500, RUNS = 600 };
    snprintf(p, sizeof p, "%s/run-big", dir);
    CHECK(mkdir(p, 0755) == 0);
    for (int i = 0; i < FILES; i++) {
        char name[64];
        snprintf(name, sizeof name, "trace.%d.bin", i);
        path_of(p, sizeof p, dir, "run-big", name);
        write_file(p, 2, 'b');
    }
    for (int i = 0; i < RUNS; i++) {
        char run[64];
        snprintf(run, sizeof run, "run-small-%04d-with-a-longer-name-than-most", i);
        snprintf(p, sizeof p, "%s/%s", dir, run);
        CHECK(mkdir(p, 0755) == 0);
        path_of(p, sizeof p, dir, run, "trace.0.bin");
        write_file(p, 1, 's');
        /* settled (unchanged for over D9_LEDGER_SETTLED_NS), whatever the time this took: the
         * scan then writes them down in the ledger, whose bytes count (under ASan and load
         * the loop took over 2 s once, so the ledger appeared by chance: 8040 vs 3600) */
        snprintf(p, sizeof p, "%s/%s", dir, run);
        struct timespec old[2] = {{.tv_sec = time(NULL) - 3600}, {.tv_sec = time(NULL) - 3600}};
        CHECK(utimensat(AT_FDCWD, p, old, 0) == 0);
    }
    d9_segw_config cfg = {.trace_dir = dir, .run_id = "run-big", .max_file_size = 1000,
                          .max_total_size = 1 << 30};
    d9_segment_writer *w = d9_segw_open(&cfg, err, sizeof err);
    CHECK(w != NULL);
    if (!w) return;
    d9_segw_stats s;
    d9_segw_get_stats(w, &s);
    uint64_t ledger = ledger_bytes(dir);
    CHECK(ledger > RUNS * 40); /* a line per settled run, each with the long name */
    CHECK_EQ_U64(s.bytes_on_disk, 2 * FILES + RUNS + ledger);
    uint8_t buf[10] = {0};
    CHECK(d9_segw_write(w, buf, sizeof buf) == 0);
    char want[64];
    snprintf(want, sizeof want, "trace.%d.bin.active", FILES);
    path_of(p, sizeof p, dir, "run-big", want);
    CHECK(exists(p)); /* numbered after every file of its directory */
    d9_segw_close(w);
    if (!d9t_failed) rm_rf(dir);
}

/* ---------- the list of what each segment holds to symbolize ---------- */

struct handed {
    int count;
    d9_sym_input *got[8];
};

static void keep_symbols(const char *path, bool needs_symbols, d9_sym_input *symbols, void *ctx) {
    (void)path;
    (void)needs_symbols;
    struct handed *h = ctx;
    if (h->count < 8) h->got[h->count] = symbols;
    else d9_sym_input_destroy(symbols);
    h->count++;
}

static bool lists_address(const d9_sym_input *in, uint64_t addr) {
    return in && d9_u64_map_get(&in->addrs, addr) != NULL;
}

/* Each sealed segment is handed the list made while it was open, and only that one; a segment
 * that lost a write is handed none (the pipeline reads it instead). */
static void test_symbols_handed_over(void) {
    char dir[64], err[256];
    make_temp_dir(dir, sizeof dir);
    d9_segw_config cfg = {.trace_dir = dir, .run_id = "s", .max_file_size = 4096, .max_total_size = 1 << 20};
    d9_segment_writer *w = d9_segw_open(&cfg, err, sizeof err);
    CHECK(w != NULL);
    if (!w) return;
    struct handed h = {0};
    d9_segw_set_on_sealed(w, keep_symbols, &h);
    uint8_t buf[100];
    fill_pattern(buf, sizeof buf, 3);

    CHECK(d9_segw_symbols(w) == NULL); /* not collecting */
    d9_segw_collect_symbols(w);
    d9_sym_input *in = d9_segw_symbols(w);
    CHECK(in != NULL && d9_segw_symbols(w) == in);
    if (!in) return;
    d9_sym_input_add_address(in, 0x1000, D9_ADDR_RETURN);
    CHECK(d9_segw_write(w, buf, sizeof buf) == 0);
    d9_segw_rotate(w); /* segment 0: its list */
    d9_sym_input_add_address(d9_segw_symbols(w), 0x2000, D9_ADDR_EXACT);
    CHECK(d9_segw_write(w, buf, sizeof buf) == 0);
    d9_segw_rotate(w); /* segment 1: a list of its own */
    CHECK(d9_segw_write(w, buf, sizeof buf) == 0);
    d9_segw_rotate(w); /* segment 2: nothing listed, an empty list */
    d9_sym_input_add_address(d9_segw_symbols(w), 0x3000, D9_ADDR_RETURN);
    CHECK(d9_segw_write(w, buf, sizeof buf) == 0);
    CHECK(d9_segw_write(w, buf, 5000) == -1); /* overruns: segment 3 sealed, the write lost */
    d9_sym_input_add_address(d9_segw_symbols(w), 0x4000, D9_ADDR_RETURN);
    CHECK(d9_segw_write(w, buf, sizeof buf) == 0);
    d9_segw_rotate(w); /* segment 4: after a lost write, not vouched for */
    CHECK(d9_segw_write(w, buf, sizeof buf) == 0);
    d9_segw_rotate(w); /* segment 5: trusted again */

    CHECK_EQ_U64(h.count, 6);
    CHECK(lists_address(h.got[0], 0x1000) && !lists_address(h.got[0], 0x2000));
    CHECK(lists_address(h.got[1], 0x2000) && !lists_address(h.got[1], 0x1000));
    CHECK(h.got[2] != NULL && h.got[2]->addrs.count == 0);
    CHECK(lists_address(h.got[3], 0x3000));
    CHECK(h.got[4] == NULL);
    CHECK(h.got[5] != NULL && h.got[5]->addrs.count == 0);
    for (int i = 0; i < h.count && i < 8; i++) d9_sym_input_destroy(h.got[i]);
    d9_sym_input_add_address(d9_segw_symbols(w), 0x5000, D9_ADDR_RETURN); /* freed by close */
    d9_segw_close(w);
    rm_rf(dir);
}

int main(void) {
    test_naming_and_basics();
    test_symbols_handed_over();
    test_scan_large_directories();
    test_many_writes_tiny_limits();
    test_period_rotation();
    test_restart_deletes_oldest_first();
    test_reused_run_id();
    test_live_writer_is_not_deleted();
    test_deleted_directory();
    test_write_failure_truncates();
    test_growth_after_sealing();
    return d9t_summary("test_segment_writer");
}
