/* open_beneath (src/serve/open_beneath.h), with openat2 and with the component walk (each in a
 * child process, D9_SERVE_RESOLVE=walk forcing the second): files and directories below the
 * root open; a symlink anywhere on the way (to a file outside, to a directory outside, to a
 * file inside), "..", ".", empty components and absolute paths are refused; FIFOs and devices
 * are not "regular" and never block; the answer does not depend on the method. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "serve/open_beneath.h"

static char base[] = "/tmp/d9-beneath-XXXXXX";

static void put(const char *rel, const char *text) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", base, rel);
    FILE *f = fopen(p, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static void make_tree(void) {
    char p[512], q[512];
    const char *dirs[] = {"root", "root/run", "root/run/sub", "outside"};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", base, dirs[i]);
        mkdir(p, 0755);
    }
    put("root/run/trace.0.bin", "inside");
    put("root/run/sub/trace.1.bin", "deeper");
    put("outside/trace.0.bin", "SECRET");
    /* symlinks: a file out, a directory out, a file inside, a directory inside */
    snprintf(p, sizeof p, "%s/outside/trace.0.bin", base);
    snprintf(q, sizeof q, "%s/root/run/link-out.bin", base);
    symlink(p, q);
    snprintf(p, sizeof p, "%s/outside", base);
    snprintf(q, sizeof q, "%s/root/dir-out", base);
    symlink(p, q);
    snprintf(q, sizeof q, "%s/root/run/link-in.bin", base);
    symlink("trace.0.bin", q);
    snprintf(q, sizeof q, "%s/root/dir-in", base);
    symlink("run", q);
    snprintf(p, sizeof p, "%s/root/run/fifo.bin", base);
    mkfifo(p, 0644);
}

/* The content of rel opened as a regular file, or "" with errno. */
static const char *read_rel(int root, const char *rel, char *buf, size_t len) {
    struct stat st;
    buf[0] = '\0';
    int fd = d9_open_regular_beneath(root, rel, &st);
    if (fd < 0) return buf;
    ssize_t n = read(fd, buf, len - 1);
    buf[n > 0 ? n : 0] = '\0';
    close(fd);
    return buf;
}

static int refused_with(int root, const char *rel) {
    struct stat st;
    errno = 0;
    int fd = d9_open_regular_beneath(root, rel, &st);
    if (fd >= 0) {
        close(fd);
        return 0;
    }
    return errno;
}

static int run_checks(const char *want_method) {
    char p[512], buf[64];
    snprintf(p, sizeof p, "%s/root", base);
    int root = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    CHECK(root >= 0);
    CHECK_STR(read_rel(root, "run/trace.0.bin", buf, sizeof buf), "inside");
    CHECK_STR(read_rel(root, "run/sub/trace.1.bin", buf, sizeof buf), "deeper");
    CHECK_STR(d9_open_beneath_method(), want_method);
    /* directories open with O_DIRECTORY, and files beneath them open from their fd */
    int run = d9_open_beneath(root, "run", O_RDONLY | O_DIRECTORY);
    CHECK(run >= 0);
    CHECK_STR(read_rel(run, "sub/trace.1.bin", buf, sizeof buf), "deeper");
    CHECK_EQ_U64(refused_with(run, "../outside/trace.0.bin"), EXDEV);
    if (run >= 0) close(run);
    /* symlinks at every position, whatever they point to */
    CHECK_EQ_U64(refused_with(root, "run/link-out.bin"), ELOOP);
    CHECK_EQ_U64(refused_with(root, "run/link-in.bin"), ELOOP);
    CHECK_EQ_U64(refused_with(root, "dir-out/trace.0.bin"), ELOOP);
    CHECK_EQ_U64(refused_with(root, "dir-in/trace.0.bin"), ELOOP);
    CHECK_EQ_U64(refused_with(root, "dir-out"), ELOOP);
    /* malformed paths, before touching the file system */
    CHECK_EQ_U64(refused_with(root, "../outside/trace.0.bin"), EXDEV);
    CHECK_EQ_U64(refused_with(root, "run/../run/trace.0.bin"), EXDEV);
    CHECK_EQ_U64(refused_with(root, "./run/trace.0.bin"), EXDEV);
    CHECK_EQ_U64(refused_with(root, "run//trace.0.bin"), EXDEV);
    CHECK_EQ_U64(refused_with(root, "run/"), EXDEV);
    CHECK_EQ_U64(refused_with(root, ""), EXDEV);
    snprintf(p, sizeof p, "%s/outside/trace.0.bin", base);
    CHECK_EQ_U64(refused_with(root, p), EXDEV);
    /* not regular files: a directory says EISDIR, a FIFO is refused without blocking */
    CHECK_EQ_U64(refused_with(root, "run"), EISDIR);
    CHECK_EQ_U64(refused_with(root, "run/fifo.bin"), ENOENT);
    CHECK_EQ_U64(refused_with(root, "run/nope.bin"), ENOENT);
    CHECK_EQ_U64(refused_with(root, "run/trace.0.bin/x"), ENOTDIR);
    /* a regular file comes back blocking */
    struct stat st;
    int fd = d9_open_regular_beneath(root, "run/trace.0.bin", &st);
    CHECK(fd >= 0 && !(fcntl(fd, F_GETFL) & O_NONBLOCK) && S_ISREG(st.st_mode) && st.st_size == 6);
    if (fd >= 0) close(fd);
    if (root >= 0) close(root);
    return d9t_summary(want_method);
}

/* The checks in a child with D9_SERVE_RESOLVE set as given (method is chosen at first use). */
static int in_child(const char *resolve, const char *want_method) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        if (resolve) setenv("D9_SERVE_RESOLVE", resolve, 1);
        else unsetenv("D9_SERVE_RESOLVE");
        int rc = run_checks(want_method);
        fflush(stdout);
        _exit(rc);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

int main(void) {
    if (!mkdtemp(base)) {
        perror("mkdtemp");
        return 1;
    }
    make_tree();
    int rc = in_child("walk", "walk");
    /* openat2 where the kernel has it (5.6+); an older kernel falls back to the walk */
    struct { int major, minor; } k = {0, 0};
    FILE *f = fopen("/proc/sys/kernel/osrelease", "r");
    if (f) {
        if (fscanf(f, "%d.%d", &k.major, &k.minor) != 2) k.major = 0;
        fclose(f);
    }
    bool has_openat2 = k.major > 5 || (k.major == 5 && k.minor >= 6);
    if (!has_openat2) printf("kernel without openat2: the default resolver is the walk too\n");
    rc |= in_child(NULL, has_openat2 ? "openat2" : "walk");
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", base);
    printf("test_serve_open_beneath: %s\n", rc ? "FAILED" : "ok");
    return rc;
}
