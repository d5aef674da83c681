/* The fetch step's jobs of `dial9 serve --bucket` (src/serve/fetch_jobs.h), with a shell script
 * standing in for `dial9 _serve-fetch`: it saves the selection it gets on standard input and
 * does what the test asks (succeed, fail with a message, die by a signal, or block until
 * stopped). Checked: the step gets exactly the source, the run and the segments wanted; two
 * waiters of one run share one step; a job still in line takes the segments of a request that
 * joins it; one step at a time; every waiter gets the outcome (the first line of the step's
 * standard error, the signal that killed it, a program that cannot run); stopping kills and
 * reaps a running step and tells every waiter. SIGCHLD is waited for, as the server's signalfd
 * does, never a time. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "serve/fetch_jobs.h"

static char dir[64], script[128];

typedef struct waiter {
    bool told;
    char error[256]; /* "" for success */
} waiter;

static void done(void *w, const char *error, void *cls) {
    (void)cls;
    waiter *x = w;
    x->told = true;
    snprintf(x->error, sizeof x->error, "%s", error ? error : "");
}

/* Until w is told: each SIGCHLD reaped as the server does. */
static void wait_told(d9_fetch_jobs *j, waiter *w) {
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    while (!w->told) {
        if (sigwaitinfo(&chld, NULL) < 0 && errno != EINTR) return;
        d9_fetch_jobs_reap(j);
    }
}

static void set_mode(const char *mode) {
    char p[128];
    snprintf(p, sizeof p, "%s/mode", dir);
    FILE *f = fopen(p, "w");
    fputs(mode, f);
    fclose(f);
}

/* What the step got on standard input the nth time it ran. */
static const char *input(int n) {
    static char buf[4096];
    char p[128];
    snprintf(p, sizeof p, "%s/input.%d", dir, n);
    FILE *f = fopen(p, "r");
    size_t len = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    buf[len] = '\0';
    if (f) fclose(f);
    return buf;
}

static const char SELECTION[] =
    "dial9-serve-selection 1\n"
    "source\ts3://b/p%09x\n"
    "run\tservice=a/instance=h/boot=1\t100\t300\n"
    "seg\ttrace.0.bin.gz\t10\t100\tp/a/100-0.bin.gz\n"
    "seg\ttrace.1.bin.gz\t11\t200\tp/a/200-1.bin.gz\n"
    "seg\ttrace.2.bin.gz\t12\t300\tp/a/300-2.bin.gz\n"
    "run\tservice=b/instance=h/boot=2\t-1\t-1\n"
    "seg\ttrace.0.bin\t20\t-1\tp/b/k%25ey-0.bin\n"
    "seg\ttrace.1.bin\t21\t-1\tp/b/key-1.bin\n";

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/d9-fetch-jobs-XXXXXX");
    if (!mkdtemp(dir)) return 1;
    snprintf(script, sizeof script, "%s/fetch.sh", dir);
    FILE *f = fopen(script, "w");
    /* argv: _serve-fetch ROOT (this directory); counts its runs, keeps each input */
    fprintf(f, "#!/bin/sh\n"
               "[ \"$1\" = _serve-fetch ] || exit 9\n"
               "n=$(cat \"$2/count\" 2>/dev/null || echo 0); n=$((n + 1)); echo $n >\"$2/count\"\n"
               "cat >\"$2/input.$n\"\n"
               "case $(cat \"$2/mode\") in\n"
               "ok) exit 0 ;;\n"
               "fail) echo 'GET s3://b/p/a/100-0.bin.gz: HTTP 404 NoSuchKey' >&2; echo 'more' >&2; exit 1 ;;\n"
               "silent) exit 3 ;;\n"
               "kill) kill -9 $$ ;;\n"
               "block) read x <\"$2/gate\" ;;\n"
               "esac\n");
    fclose(f);
    chmod(script, 0700);
    char gate[128];
    snprintf(gate, sizeof gate, "%s/gate", dir);
    mkfifo(gate, 0600);
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, NULL); /* as the server: SIGCHLD comes through sigwaitinfo */

    d9_serve_selection sel;
    char err[256];
    FILE *in = fmemopen((void *)SELECTION, sizeof SELECTION - 1, "r");
    CHECK(d9_serve_selection_parse(&sel, in, "test", err, sizeof err) == 0);
    fclose(in);
    const d9_sel_run *a = d9_serve_selection_run(&sel, "service=a/instance=h/boot=1");
    const d9_sel_run *b = d9_serve_selection_run(&sel, "service=b/instance=h/boot=2");
    CHECK(a && b);
    if (!a || !b) return d9t_summary("test_serve_fetch_jobs");

    d9_fetch_jobs j;
    d9_fetch_jobs_init(&j, script, dir, sel.source, done, NULL);

    /* two requests for run a: one step, both told; it got segments 0 and 2 only */
    set_mode("ok");
    waiter w1 = {0}, w2 = {0};
    CHECK(d9_fetch_jobs_want(&j, a, (bool[]){true, false, true}, &w1) == 0);
    CHECK(d9_fetch_jobs_want(&j, a, (bool[]){true, false, false}, &w2) == 1); /* joins the running step */
    wait_told(&j, &w1);
    CHECK(w1.told && w2.told);
    CHECK_STR(w1.error, "");
    CHECK_STR(w2.error, "");
    CHECK_STR(input(1), "dial9-serve-selection 1\nsource\ts3://b/p%09x\nrun\tservice=a/instance=h/boot=1\t100\t300\n"
                        "seg\ttrace.0.bin.gz\t10\t100\tp/a/100-0.bin.gz\n"
                        "seg\ttrace.2.bin.gz\t12\t300\tp/a/300-2.bin.gz\n");
    CHECK_EQ_U64(j.started, 1);

    /* one step at a time: b waits in line behind a, and a second request for b adds its segment */
    waiter w3 = {0}, w4 = {0}, w5 = {0};
    CHECK(d9_fetch_jobs_want(&j, a, (bool[]){false, true, false}, &w3) == 0);
    CHECK(d9_fetch_jobs_want(&j, b, (bool[]){true, false}, &w4) == 0);
    CHECK(d9_fetch_jobs_want(&j, b, (bool[]){false, true}, &w5) == 1);
    CHECK_EQ_U64(j.started, 2);
    wait_told(&j, &w5);
    CHECK(w3.told && w4.told && w5.told && !w3.error[0] && !w4.error[0] && !w5.error[0]);
    CHECK_EQ_U64(j.started, 3);
    CHECK_STR(input(2), "dial9-serve-selection 1\nsource\ts3://b/p%09x\nrun\tservice=a/instance=h/boot=1\t100\t300\n"
                        "seg\ttrace.1.bin.gz\t11\t200\tp/a/200-1.bin.gz\n");
    CHECK_STR(input(3), "dial9-serve-selection 1\nsource\ts3://b/p%09x\nrun\tservice=b/instance=h/boot=2\t-1\t-1\n"
                        "seg\ttrace.0.bin\t20\t-1\tp/b/k%25ey-0.bin\nseg\ttrace.1.bin\t21\t-1\tp/b/key-1.bin\n");

    /* failures: the step's first line, its status, the signal that killed it */
    waiter w6 = {0}, w7 = {0}, w8 = {0};
    set_mode("fail");
    CHECK(d9_fetch_jobs_want(&j, a, (bool[]){true, true, true}, &w6) == 0);
    wait_told(&j, &w6);
    CHECK_STR(w6.error, "GET s3://b/p/a/100-0.bin.gz: HTTP 404 NoSuchKey");
    set_mode("silent");
    CHECK(d9_fetch_jobs_want(&j, a, (bool[]){true, true, true}, &w7) == 0);
    wait_told(&j, &w7);
    CHECK_STR(w7.error, "the fetch step exited with status 3");
    set_mode("kill");
    CHECK(d9_fetch_jobs_want(&j, a, (bool[]){true, true, true}, &w8) == 0);
    wait_told(&j, &w8);
    CHECK_STR(w8.error, "the fetch step was killed by signal 9");

    /* stopping: the running step is killed and reaped, every waiter told, the one in line too */
    set_mode("block");
    waiter w9 = {0}, w10 = {0};
    CHECK(d9_fetch_jobs_want(&j, a, (bool[]){true, false, false}, &w9) == 0);
    CHECK(d9_fetch_jobs_want(&j, b, (bool[]){true, false}, &w10) == 0);
    d9_fetch_jobs_stop(&j, "dial9 serve is stopping");
    CHECK_STR(w9.error, "dial9 serve is stopping");
    CHECK_STR(w10.error, "dial9 serve is stopping");
    CHECK(waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD); /* nothing left behind */
    CHECK(j.head == NULL && j.tail == NULL);

    /* a program that cannot run: told at once, in the call */
    d9_fetch_jobs k;
    char missing[128];
    snprintf(missing, sizeof missing, "%s/no-such-dial9", dir);
    d9_fetch_jobs_init(&k, missing, dir, sel.source, done, NULL);
    waiter w11 = {0};
    CHECK(d9_fetch_jobs_want(&k, a, (bool[]){true, true, true}, &w11) == 0);
    CHECK(w11.told && strstr(w11.error, "cannot run the fetch step") && strstr(w11.error, "No such file or directory"));
    d9_fetch_jobs_init(&k, NULL, dir, sel.source, done, NULL);
    waiter w12 = {0};
    CHECK(d9_fetch_jobs_want(&k, a, (bool[]){true, true, true}, &w12) == 0);
    CHECK(w12.told && strstr(w12.error, "no fetch step"));
    CHECK(k.head == NULL);

    d9_serve_selection_free(&sel);
    if (d9t_failed == 0) {
        char cmd[160];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    }
    return d9t_summary("test_serve_fetch_jobs");
}
