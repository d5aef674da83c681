/* A program that closes every fd with raw system calls — syscall(SYS_close_range, ...) or a
 * syscall(SYS_close, fd) loop, which no shim can intercept — and reuses the numbers for its own
 * files. The recorder must take its segment back by path: nothing is lost, no
 * trace.N.bin.active is left unsealed, and the program's files stay exactly as it wrote them. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"
#include "dial9/dial9.h"
#include "trace_files_util.h"

#define FILES 40
#define ROUNDS 4
#define POLLS 1000

static void on_event(const d9_event *ev, void *ctx) {
    uint64_t *polls = ctx;
    if (d9t_is(ev, "PollStartEvent")) (*polls)++;
}

static void close_all_raw(bool use_close_range) {
    if (use_close_range) {
        CHECK(syscall(SYS_close_range, 3u, ~0u, 0) == 0);
    } else {
        for (int fd = 3; fd < 1024; fd++) (void)syscall(SYS_close, fd);
    }
}

static int active_files(const char *run_dir) {
    DIR *d = opendir(run_dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strstr(e->d_name, ".active")) {
            fprintf(stderr, "left unsealed: %s/%s\n", run_dir, e->d_name);
            n++;
        }
    if (d) closedir(d);
    return n;
}

static void run_with(bool use_close_range) {
    const char *how = use_close_range ? "close_range" : "SYS_close loop";
    char *dir = d9t_mkdtemp("rawclose");
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    CHECK(d9_start(&cfg) == 0);
    char paths[FILES][512];
    int fds[FILES];
    for (int round = 0; round < ROUNDS; round++) {
        for (int i = 0; i < POLLS; i++) { d9_poll_begin(1, D9_HERE); d9_poll_end(); }
        d9_flush();
        if (round == 1) {
            /* a daemon closing everything, then opening files of its own on the freed numbers */
            close_all_raw(use_close_range);
            for (int k = 0; k < FILES; k++) {
                snprintf(paths[k], sizeof paths[k], "%s/program-%d.txt", dir, k);
                fds[k] = open(paths[k], O_CREAT | O_RDWR | O_TRUNC, 0644);
                CHECK(fds[k] >= 0);
            }
        }
    }
    for (int k = 0; k < FILES; k++) {
        char line[64];
        int n = snprintf(line, sizeof line, "file %d\n", k);
        CHECK(write(fds[k], line, (size_t)n) == n);
    }
    char run_dir[1024];
    snprintf(run_dir, sizeof run_dir, "%s", d9_run_dir());
    d9_stop();
    d9_stats st;
    d9_get_stats(&st);

    for (int k = 0; k < FILES; k++) {
        char buf[256] = {0}, expect[64];
        snprintf(expect, sizeof expect, "file %d\n", k);
        ssize_t n = pread(fds[k], buf, sizeof buf - 1, 0);
        CHECK(n == (ssize_t)strlen(expect) && strcmp(buf, expect) == 0);
        close(fds[k]);
    }
    CHECK(active_files(run_dir) == 0);
    uint64_t polls = 0;
    CHECK(d9t_decode_run(run_dir, on_event, &polls) == 0);
    printf("%s: %" PRIu64 " of %d polls in the trace, %" PRIu64 " dropped, %" PRIu64 " segments\n", how,
           polls, ROUNDS * POLLS, st.events_dropped, st.segments_sealed);
    CHECK_EQ_U64(polls, ROUNDS * POLLS);
    CHECK_EQ_U64(st.events_dropped, 0);
    d9t_rm_rf(dir);
    free(dir);
}

int main(void) {
    run_with(true);
    run_with(false);
    return d9t_summary("recorder_raw_close");
}
