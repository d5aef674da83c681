/* Segment writer on a really full disk: a 256 KiB tmpfs mounted in a private mount namespace
 * (so nothing leaks to the host, even if the test dies). Needs root (CAP_SYS_ADMIN); skips with
 * a message otherwise.
 *  - ENOSPC on write: the call returns -1 at once (one attempt, no retry), the loss is counted, the file ends exactly at
 *    the last successful write, and writes succeed again once space is freed;
 *  - ENOSPC on creating a segment (no inodes left): counted, retried on the next call. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "sinks/segment_writer.h"

/* This thread's CPU time (ns): unlike the wall clock, not inflated by a busy machine. */
static uint64_t thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Every pwrite of the program goes through here (the segment writer is linked in statically),
 * so that the test sees how many attempts a failed write made: one (a short write into the
 * last page, then ENOSPC for the rest: 2 calls), not a retry loop. */
static atomic_uint pwrite_calls;
ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) {
    atomic_fetch_add(&pwrite_calls, 1);
    return syscall(SYS_pwrite64, fd, buf, n, off);
}

static void fill_pattern(uint8_t *buf, size_t len, uint32_t write_no) {
    for (size_t i = 0; i < len; i++) buf[i] = (uint8_t)(write_no * 131u + i * 7u + (i >> 8));
}

static int64_t file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (int64_t)st.st_size : -1;
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

/* Create a file of len bytes; returns 0 or -errno (ENOSPC when the disk is full). */
static int make_file(const char *path, size_t len) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return -errno;
    static const uint8_t zeros[4096];
    int rc = 0;
    for (size_t done = 0; done < len;) {
        size_t n = len - done < sizeof zeros ? len - done : sizeof zeros;
        ssize_t w = write(fd, zeros, n);
        if (w <= 0) {
            rc = w < 0 ? -errno : -EIO;
            break;
        }
        done += (size_t)w;
    }
    close(fd);
    return rc;
}

/* Mount a tmpfs with the given options on a fresh directory; false (with a reason) if we may not. */
static bool mount_tmpfs(char *dir, size_t size, const char *options) {
    snprintf(dir, size, "/tmp/d9-segw-full.XXXXXX");
    if (!mkdtemp(dir)) {
        printf("SKIP: mkdtemp: %s\n", strerror(errno));
        return false;
    }
    if (mount("d9-segw-test", dir, "tmpfs", MS_NOSUID | MS_NODEV, options) != 0) {
        printf("SKIP: mount tmpfs: %s\n", strerror(errno));
        rmdir(dir);
        return false;
    }
    return true;
}

static void unmount_tmpfs(const char *dir) {
    if (umount2(dir, MNT_DETACH) != 0) perror("umount2");
    rmdir(dir);
}

static void test_enospc_on_write(void) {
    char mnt[64], traces[128], filler[128], err[256];
    if (!mount_tmpfs(mnt, sizeof mnt, "size=256k,mode=0755")) return;
    snprintf(traces, sizeof traces, "%s/traces", mnt);
    snprintf(filler, sizeof filler, "%s/filler", mnt);
    CHECK(make_file(filler, 64 * 1024) == 0);

    /* Budget far above the disk's size: only ENOSPC can stop the writes. */
    d9_segw_config cfg = {.trace_dir = traces, .run_id = "r", .max_file_size = 1 << 20,
                          .max_total_size = 8 << 20};
    d9_segment_writer *w = d9_segw_open(&cfg, err, sizeof err);
    CHECK(w != NULL);
    if (!w) {
        fprintf(stderr, "open: %s\n", err);
        unmount_tmpfs(mnt);
        return;
    }
    static uint8_t expect[512 * 1024];
    size_t expect_len = 0, ok_writes = 0;
    uint8_t buf[1000];
    int rc = 0;
    for (uint32_t i = 0; i < 1000 && rc == 0; i++) {
        fill_pattern(buf, sizeof buf, i);
        rc = d9_segw_write(w, buf, sizeof buf);
        if (rc == 0) {
            memcpy(expect + expect_len, buf, sizeof buf);
            expect_len += sizeof buf;
            ok_writes++;
        }
    }
    CHECK(rc == -1); /* the disk did fill up */
    CHECK(ok_writes > 100 && ok_writes < 256);
    char active[512];
    snprintf(active, sizeof active, "%s", d9_segw_active_path(w) ? d9_segw_active_path(w) : "");
    CHECK_EQ_U64(file_size(active), expect_len); /* ends exactly at the last good write */
    CHECK(file_equals(active, expect, expect_len));
    d9_segw_stats s;
    d9_segw_get_stats(w, &s);
    CHECK_EQ_U64(s.bytes_lost, sizeof buf);
    CHECK_EQ_U64(s.write_errors, 1);
    CHECK_EQ_U64(s.bytes_written, expect_len);

    /* Still full: every call fails fast, and nothing is left behind in the file. */
    unsigned calls = atomic_load(&pwrite_calls);
    uint64_t cpu = thread_cpu_ns();
    for (int i = 0; i < 20; i++) {
        uint64_t e = d9_segw_epoch(w);
        CHECK(d9_segw_write(w, buf, sizeof buf) == -1);
        CHECK(d9_segw_epoch(w) != e);
    }
    cpu = thread_cpu_ns() - cpu;
    calls = atomic_load(&pwrite_calls) - calls;
    CHECK(calls <= 2 * 20);     /* one attempt per failed write: a short write, then the error */
    CHECK(cpu < 50 * 1000000u); /* and no work beyond it (CPU time: the same on a busy machine) */
    CHECK_EQ_U64(file_size(active), expect_len);
    d9_segw_get_stats(w, &s);
    CHECK_EQ_U64(s.bytes_lost, 21 * sizeof buf);
    CHECK_EQ_U64(s.write_errors, 21);
    printf("disk full: %zu writes landed (%zu bytes); 20 failed writes: %u pwrite calls, %.1f us of CPU\n",
           ok_writes, expect_len, calls, (double)cpu / 1000.0);

    /* Free space: the next call succeeds, in the same file, right after the last good write. */
    CHECK(unlink(filler) == 0);
    fill_pattern(buf, sizeof buf, 5000);
    CHECK(d9_segw_write(w, buf, sizeof buf) == 0);
    memcpy(expect + expect_len, buf, sizeof buf);
    expect_len += sizeof buf;
    CHECK_STR(d9_segw_active_path(w), active);
    CHECK(file_equals(active, expect, expect_len));
    d9_segw_close(w);
    char sealed[512];
    snprintf(sealed, sizeof sealed, "%s/r/trace.0.bin", traces);
    CHECK(file_equals(sealed, expect, expect_len));
    unmount_tmpfs(mnt);
}

static void test_enospc_on_open(void) {
    char mnt[64], traces[128], p[256], err[256];
    if (!mount_tmpfs(mnt, sizeof mnt, "size=256k,nr_inodes=16,mode=0755")) return;
    snprintf(traces, sizeof traces, "%s/traces", mnt);
    d9_segw_config cfg = {.trace_dir = traces, .run_id = "r", .max_file_size = 4096,
                          .max_total_size = 64 * 1024};
    d9_segment_writer *w = d9_segw_open(&cfg, err, sizeof err);
    CHECK(w != NULL);
    if (!w) {
        unmount_tmpfs(mnt);
        return;
    }
    uint8_t buf[100];
    fill_pattern(buf, sizeof buf, 1);
    CHECK(d9_segw_write(w, buf, sizeof buf) == 0);
    d9_segw_rotate(w);
    /* Use up every inode left. */
    int fillers = 0;
    for (; fillers < 64; fillers++) {
        snprintf(p, sizeof p, "%s/filler.%d", mnt, fillers);
        if (make_file(p, 0) != 0) break;
    }
    CHECK(fillers < 64);
    d9_segw_stats s;
    for (int i = 0; i < 3; i++) {
        CHECK(d9_segw_write(w, buf, sizeof buf) == -1);
        CHECK(d9_segw_active_path(w) == NULL);
        CHECK(d9_segw_at_segment_start(w));
    }
    d9_segw_get_stats(w, &s);
    CHECK_EQ_U64(s.write_errors, 3);
    CHECK_EQ_U64(s.bytes_lost, 3 * sizeof buf);

    snprintf(p, sizeof p, "%s/filler.0", mnt);
    CHECK(unlink(p) == 0);
    CHECK(d9_segw_write(w, buf, sizeof buf) == 0);
    snprintf(p, sizeof p, "%s/r/trace.1.bin.active", traces);
    CHECK_STR(d9_segw_active_path(w), p);
    CHECK(file_equals(p, buf, sizeof buf));
    d9_segw_close(w);
    unmount_tmpfs(mnt);
}

static int g_sealed_count;
static char g_sealed_last[256];
static int g_sealed_needing_symbols;

static void note_sealed(const char *path, bool needs_symbols, d9_sym_input *symbols, void *ctx) {
    CHECK(symbols == NULL); /* not collected */
    g_sealed_needing_symbols += needs_symbols;
    (void)ctx;
    g_sealed_count++;
    snprintf(g_sealed_last, sizeof g_sealed_last, "%s", path);
}

/* The final reserve: room allocated while there was space, so the last words land on a disk
 * that is full to the end (and it is removed when not needed). */
static void test_final_reserve(void) {
    char mnt[64], traces[128], filler[128], err[256];
    if (!mount_tmpfs(mnt, sizeof mnt, "size=256k,mode=0755")) return;
    snprintf(traces, sizeof traces, "%s/traces", mnt);
    snprintf(filler, sizeof filler, "%s/filler", mnt);
    d9_segw_config cfg = {.trace_dir = traces, .run_id = "r", .max_file_size = 1 << 20,
                          .max_total_size = 8 << 20};
    d9_segment_writer *w = d9_segw_open(&cfg, err, sizeof err);
    CHECK(w != NULL);
    if (!w) {
        unmount_tmpfs(mnt);
        return;
    }
    d9_segw_set_final_reserve(w, 8192);
    d9_segw_set_on_sealed(w, note_sealed, NULL);
    g_sealed_count = g_sealed_needing_symbols = 0;
    uint8_t buf[1000];
    fill_pattern(buf, sizeof buf, 1);
    CHECK(d9_segw_write(w, buf, sizeof buf) == 0);
    d9_segw_note_needs_symbols(w); /* as if it held stacks */
    CHECK(d9_segw_has_final_reserve(w));
    char reserve[256];
    snprintf(reserve, sizeof reserve, "%s/r/" D9_SEGW_FINAL_RESERVE_NAME, traces);
    CHECK_EQ_U64(file_size(reserve), 8192);
    d9_segw_stats s;
    d9_segw_get_stats(w, &s);
    CHECK_EQ_U64(s.bytes_on_disk, 1000 + 8192); /* it counts in the budget */
    /* The disk fills up for good. */
    make_file(filler, 1 << 20); /* ENOSPC when full: expected */
    static uint8_t big[64 * 1024]; /* more than the partly used page left */
    CHECK(d9_segw_write(w, big, sizeof big) == -1);
    uint8_t last[5000];
    fill_pattern(last, sizeof last, 77);
    CHECK(d9_segw_write_final(w, last, sizeof last) == 0);
    char p0[256], p1[256];
    snprintf(p0, sizeof p0, "%s/r/trace.0.bin", traces);
    snprintf(p1, sizeof p1, "%s/r/trace.1.bin", traces);
    CHECK(file_equals(p0, buf, sizeof buf)); /* the segment, sealed first */
    CHECK(file_equals(p1, last, sizeof last)); /* then the last words, sealed */
    /* both told to on_sealed (the pipeline's queue), the last words last */
    CHECK_EQ_U64(g_sealed_count, 2);
    CHECK_STR(g_sealed_last, p1);
    CHECK_EQ_U64(g_sealed_needing_symbols, 1); /* the segment; the last words hold no stack */
    CHECK(file_size(reserve) == -1);
    CHECK(d9_segw_write_final(w, last, sizeof last) == -1); /* used up */
    d9_segw_close(w);

    /* Not needed: removed at close, and a run that wrote nothing leaves no directory. */
    CHECK(unlink(filler) == 0);
    cfg.run_id = "r2";
    w = d9_segw_open(&cfg, err, sizeof err);
    CHECK(w != NULL);
    d9_segw_set_final_reserve(w, 8192);
    CHECK(d9_segw_write(w, buf, sizeof buf) == 0);
    d9_segw_close(w);
    snprintf(reserve, sizeof reserve, "%s/r2/" D9_SEGW_FINAL_RESERVE_NAME, traces);
    CHECK(file_size(reserve) == -1);
    cfg.run_id = "r3";
    w = d9_segw_open(&cfg, err, sizeof err);
    d9_segw_set_final_reserve(w, 8192);
    d9_segw_close(w);
    char r3[256];
    snprintf(r3, sizeof r3, "%s/r3", traces);
    CHECK(file_size(r3) == -1);
    unmount_tmpfs(mnt);
}

int main(void) {
    if (geteuid() != 0) {
        printf("SKIP test_segment_writer_disk_full: needs root to mount a tmpfs\n");
        return 0;
    }
    /* A private mount namespace: our tmpfs mounts are invisible outside and die with us. */
    if (unshare(CLONE_NEWNS) != 0) {
        printf("SKIP test_segment_writer_disk_full: unshare(CLONE_NEWNS): %s\n", strerror(errno));
        return 0;
    }
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
        printf("SKIP test_segment_writer_disk_full: make mounts private: %s\n", strerror(errno));
        return 0;
    }
    test_enospc_on_write();
    test_enospc_on_open();
    test_final_reserve();
    return d9t_summary("test_segment_writer_disk_full");
}
