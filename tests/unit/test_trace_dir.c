/* The trace directory and a run's files against another user (sinks/trace_dir.h): directories
 * others could redirect are refused with a message naming the path, what is wrong and what to
 * do; links planted where the recorder writes are never followed (the compress step, in-place
 * symbols, the segment writer whose run directory is swapped under it); what the recorder makes
 * is 0700 / 0600. The parts that need another owner (chown to 65534) run as root only. The
 * racing attacker as a real other user is test_trace_dir_hostile.sh. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "sinks/segment_writer.h"
#include "sinks/step_compress.h"
#include "sinks/trace_dir.h"
#include "symbols/symbolize_file.h"
#include "trace_files_util.h"

#define VICTIM_TEXT "someone else's file\n"

static char g_base[256];

static void path_in(char *buf, size_t len, const char *name) { snprintf(buf, len, "%s/%s", g_base, name); }

static void write_text(const char *path, const char *text) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0);
    if (fd < 0) return;
    CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
}

static bool has_text(const char *path, const char *text) {
    char buf[256] = {0};
    int fd = open(path, O_RDONLY);
    if (fd < 0) return false;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    return n == (ssize_t)strlen(text) && memcmp(buf, text, (size_t)n) == 0;
}

static bool exists(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0;
}

static mode_t mode_of(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0 ? st.st_mode & 07777 : 0;
}

/* Opens `path` expecting a refusal whose message holds `want`. */
static void expect_refused(const char *path, const char *want) {
    char err[1024] = "";
    errno = 0;
    int fd = d9_trace_dir_open(path, true, err, sizeof err);
    CHECK(fd < 0);
    if (fd >= 0) close(fd);
    if (!strstr(err, want)) fprintf(stderr, "message: %s\nwanted: %s\n", err, want);
    CHECK(strstr(err, want) != NULL);
}

static void test_directory_checks(void) {
    char p[1024], q[1024], want[2048];
    /* writable by everyone, not sticky: refused, and nothing made under it */
    path_in(p, sizeof p, "open");
    CHECK(mkdir(p, 0777) == 0 && chmod(p, 0777) == 0);
    path_in(q, sizeof q, "open/traces");
    snprintf(want, sizeof want, "trace directory %s is writable by everyone (mode 0777) and not sticky", p);
    expect_refused(q, want);
    CHECK(errno == EPERM);
    CHECK(!exists(q));
    /* by its group */
    path_in(p, sizeof p, "group");
    CHECK(mkdir(p, 0775) == 0 && chmod(p, 0775) == 0);
    snprintf(want, sizeof want, "trace directory %s is writable by its group (mode 0775)", p);
    expect_refused(p, want);
    /* sticky, like /tmp: fine (the trace directory made in it holds only run directories) */
    path_in(p, sizeof p, "sticky");
    CHECK(mkdir(p, 0777) == 0 && chmod(p, 01777) == 0);
    path_in(q, sizeof q, "sticky/traces");
    char err[1024] = "";
    int fd = d9_trace_dir_open(q, true, err, sizeof err);
    CHECK(fd >= 0);
    if (fd >= 0) close(fd);
    CHECK_EQ_U64(mode_of(q), 0755);
    /* a link of ours is followed, and where it leads is checked like the rest */
    path_in(p, sizeof p, "to-open");
    path_in(q, sizeof q, "open");
    CHECK(symlink(q, p) == 0);
    path_in(p, sizeof p, "to-open/traces");
    snprintf(want, sizeof want, "trace directory %s is writable by everyone", q);
    expect_refused(p, want);
    path_in(p, sizeof p, "to-sticky");
    CHECK(symlink("sticky/traces", p) == 0); /* relative */
    fd = d9_trace_dir_open(p, false, err, sizeof err);
    CHECK(fd >= 0);
    if (fd >= 0) close(fd);
    /* a plain file where the directory should be */
    path_in(p, sizeof p, "plain");
    write_text(p, "x");
    expect_refused(p, "Not a directory");
    /* missing and not to be created */
    path_in(p, sizeof p, "missing");
    CHECK(d9_trace_dir_open(p, false, err, sizeof err) < 0 && errno == ENOENT && !exists(p));
}

/* Another user's directory, link or run directory (root only: made so with chown). */
static void test_other_owner(void) {
    char p[1024], q[1024], want[2048], err[1024];
    path_in(p, sizeof p, "sticky/theirs");
    CHECK(mkdir(p, 0755) == 0 && chown(p, 65534, 65534) == 0);
    snprintf(want, sizeof want, "trace directory %s is owned by uid 65534", p);
    expect_refused(p, want);
    path_in(q, sizeof q, "sticky/theirs/below");
    expect_refused(q, want); /* nor anything under it */
    CHECK(!exists(q));
    /* their link in a sticky directory is not followed, even to a good directory */
    path_in(p, sizeof p, "sticky/their-link");
    CHECK(symlink(g_base, p) == 0 && lchown(p, 65534, 65534) == 0);
    snprintf(want, sizeof want, "trace directory %s is a symbolic link owned by uid 65534", p);
    expect_refused(p, want);
    /* a run directory that someone else made with our run's name */
    path_in(p, sizeof p, "sticky/traces");
    int tfd = d9_trace_dir_open(p, false, err, sizeof err);
    CHECK(tfd >= 0);
    if (tfd < 0) return;
    path_in(q, sizeof q, "sticky/traces/run-taken");
    CHECK(mkdir(q, 0700) == 0 && chown(q, 65534, 65534) == 0);
    CHECK(d9_run_dir_open(tfd, "run-taken", q, err, sizeof err) < 0);
    CHECK(strstr(err, "run directory") && strstr(err, "uid 65534") && strstr(err, q));
    close(tfd);
}

static void test_run_dir_open(void) {
    char p[1024], q[1024], err[1024];
    path_in(p, sizeof p, "sticky/traces");
    int tfd = d9_trace_dir_open(p, false, err, sizeof err);
    CHECK(tfd >= 0);
    if (tfd < 0) return;
    int rfd = d9_run_dir_open(tfd, "run-1", "run-1", err, sizeof err);
    CHECK(rfd >= 0);
    if (rfd >= 0) close(rfd);
    path_in(q, sizeof q, "sticky/traces/run-1");
    CHECK_EQ_U64(mode_of(q), 0700);
    /* a link in the run's name: not followed */
    path_in(q, sizeof q, "sticky/traces/run-link");
    CHECK(symlink(g_base, q) == 0);
    CHECK(d9_run_dir_open(tfd, "run-link", q, err, sizeof err) < 0);
    CHECK(strstr(err, "not followed") != NULL);
    /* one others may write to */
    path_in(q, sizeof q, "sticky/traces/run-open");
    CHECK(mkdir(q, 0777) == 0 && chmod(q, 0777) == 0);
    CHECK(d9_run_dir_open(tfd, "run-open", q, err, sizeof err) < 0 && errno == EPERM);
    close(tfd);
}

/* The compress step and in-place symbols with links planted at the names they use. */
static void test_planted_links(void) {
    char run[512], victim[512], target[512], p[1024], err[512];
    path_in(run, sizeof run, "run");
    CHECK(mkdir(run, 0700) == 0);
    path_in(victim, sizeof victim, "victim");
    write_text(victim, VICTIM_TEXT);
    path_in(target, sizeof target, "chosen-by-them");
    int rfd = open(run, O_RDONLY | O_DIRECTORY);
    CHECK(rfd >= 0);
    if (rfd < 0) return;

    /* trace.5.bin -> victim: neither compressed from nor removed through */
    CHECK(symlinkat(victim, rfd, "trace.5.bin") == 0);
    char out[256];
    uint64_t size = 0;
    CHECK(d9_step_compress(rfd, "trace.5.bin", D9_COMPRESS_GZIP, out, sizeof out, &size, NULL, NULL, err,
                           sizeof err) != 0);
    CHECK(has_text(victim, VICTIM_TEXT));
    snprintf(p, sizeof p, "%s/trace.5.bin.gz", run);
    CHECK(!exists(p));

    /* the temporary's name -> a path of their choosing: never created there */
    snprintf(p, sizeof p, "%s/trace.6.bin", run);
    write_text(p, "segment bytes");
    chmod(p, 0600);
    CHECK(symlinkat(target, rfd, ".trace.6.bin.gz.tmp") == 0);
    if (d9_compress_unavailable(D9_COMPRESS_GZIP) == NULL) {
        CHECK(d9_step_compress(rfd, "trace.6.bin", D9_COMPRESS_GZIP, out, sizeof out, &size, NULL, NULL, err,
                               sizeof err) == 0);
        CHECK(!exists(target));
        snprintf(p, sizeof p, "%s/trace.6.bin.gz", run);
        struct stat st;
        CHECK(lstat(p, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0777) == 0600);
        snprintf(p, sizeof p, "%s/.trace.6.bin.gz.tmp", run);
        CHECK(!exists(p)); /* the link was removed, never opened */
    } else {
        printf("gzip unavailable: the temporary's link is not exercised\n");
    }

    /* in-place symbols through a link: refused, the victim is not appended to */
    d9_sym_options opt = {0};
    d9_symbolizer *sym = d9_symbolizer_new(&opt);
    CHECK(sym != NULL);
    d9_symbolize_stats st;
    CHECK(symlinkat(victim, rfd, "trace.7.bin") == 0);
    if (sym) {
        CHECK(d9_symbolize_file_in_place(sym, rfd, "trace.7.bin", NULL, 0, 0, &st, NULL, NULL, err, sizeof err) != 0);
        d9_symbolizer_free(sym);
    }
    CHECK(has_text(victim, VICTIM_TEXT));
    close(rfd);
}

/* The run directory moved away under the writer and replaced by one full of links: the writer
 * goes on in the directory it holds; nothing reaches the links' targets. */
static void test_writer_keeps_its_directory(void) {
    char traces[512], run[768], moved[768], victim[512], err[512], p[1200];
    path_in(traces, sizeof traces, "writer-traces");
    path_in(victim, sizeof victim, "victim2");
    write_text(victim, VICTIM_TEXT);
    d9_segw_config cfg = {.trace_dir = traces, .run_id = "run-w", .max_file_size = 4096, .max_total_size = 1 << 20};
    d9_segment_writer *w = d9_segw_open(&cfg, err, sizeof err);
    CHECK(w != NULL);
    if (!w) return;
    d9_segw_set_final_reserve(w, 1024);
    char buf[100];
    memset(buf, 'a', sizeof buf);
    CHECK(d9_segw_write(w, buf, sizeof buf) == 0);
    snprintf(run, sizeof run, "%s/run-w", traces);
    snprintf(moved, sizeof moved, "%s/run-w.moved", traces);
    CHECK(rename(run, moved) == 0);
    CHECK(mkdir(run, 0777) == 0);
    static const char *const names[] = {"trace.0.bin", "trace.1.bin.active", "trace.1.bin", "trace.2.bin",
                                        ".final-accounting"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", run, names[i]);
        CHECK(symlink(victim, p) == 0);
    }
    d9_segw_rotate(w);
    CHECK(d9_segw_write(w, buf, sizeof buf) == 0);
    CHECK(d9_segw_write_final(w, buf, sizeof buf) == 0 || !d9_segw_has_final_reserve(w));
    d9_segw_close(w);
    CHECK(has_text(victim, VICTIM_TEXT));
    snprintf(p, sizeof p, "%s/trace.0.bin", moved);
    CHECK(exists(p) && mode_of(p) == 0600);
    snprintf(p, sizeof p, "%s/trace.1.bin", moved);
    CHECK(exists(p) && mode_of(p) == 0600);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) { /* the links, as planted */
        struct stat st;
        snprintf(p, sizeof p, "%s/%s", run, names[i]);
        CHECK(lstat(p, &st) == 0 && S_ISLNK(st.st_mode));
    }
}

/* A program that closes every fd (a raw close loop) takes the run directory's handle, and its
 * next open gets the number: the writer must neither write into that directory nor close it. */
static void test_writer_handle_taken_by_program(void) {
    char traces[512], decoy[512], err[512], p[1200];
    path_in(traces, sizeof traces, "taken-traces");
    path_in(decoy, sizeof decoy, "programs-own");
    CHECK(mkdir(decoy, 0700) == 0);
    d9_segw_config cfg = {.trace_dir = traces, .run_id = "run-t", .max_file_size = 4096, .max_total_size = 1 << 20};
    d9_segment_writer *w = d9_segw_open(&cfg, err, sizeof err);
    CHECK(w != NULL);
    if (!w) return;
    char buf[100];
    memset(buf, 'b', sizeof buf);
    CHECK(d9_segw_write(w, buf, sizeof buf) == 0);
    int handle = d9_segw_run_dir_fd(w);
    CHECK(handle >= 0 && close(handle) == 0);
    int program_fd = open(decoy, O_RDONLY | O_DIRECTORY); /* the lowest free number: the handle's */
    CHECK_EQ_U64(program_fd, handle);
    d9_segw_rotate(w);
    CHECK(d9_segw_write(w, buf, sizeof buf) == 0);
    d9_segw_close(w);
    snprintf(p, sizeof p, "%s/run-t/trace.1.bin", traces);
    CHECK(exists(p)); /* the run directory, opened again */
    snprintf(p, sizeof p, "%s/trace.1.bin.active", decoy);
    CHECK(!exists(p));
    snprintf(p, sizeof p, "%s/trace.1.bin", decoy);
    CHECK(!exists(p));
    snprintf(p, sizeof p, "%s/trace.0.bin", decoy);
    CHECK(!exists(p));
    CHECK(fcntl(program_fd, F_GETFD) >= 0); /* never closed by the writer */
    close(program_fd);
}

int main(void) {
    char *dir = d9t_mkdtemp("trace-dir");
    snprintf(g_base, sizeof g_base, "%s", dir);
    test_directory_checks();
    if (geteuid() == 0) test_other_owner();
    else printf("not root: another owner's directory, link and run directory not tested\n");
    test_run_dir_open();
    test_planted_links();
    test_writer_keeps_its_directory();
    test_writer_handle_taken_by_program();
    if (!d9t_failed) d9t_rm_rf(dir);
    free(dir);
    return d9t_summary("test_trace_dir");
}
