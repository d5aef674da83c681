/* The fetch step's jobs (fetch_jobs.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memfd_create */
#endif
#include "serve/fetch_jobs.h"

#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_MESSAGE 1024 /* of the step's standard error, for the answer */

extern char **environ;

struct d9_fetch_job {
    const d9_sel_run *run;
    bool *want;          /* per run->segs */
    void **waiters;
    size_t nwaiters, cap;
    pid_t pid;           /* 0: waiting in line */
    int err_fd;          /* the step's standard error (a memfd) */
    d9_fetch_job *next;
};

void d9_fetch_jobs_init(d9_fetch_jobs *j, const char *program, const char *root, const char *source,
                        d9_fetch_done_fn *done, void *cls) {
    *j = (d9_fetch_jobs){.program = program, .root = root, .source = source, .done = done, .cls = cls};
}

static bool add_waiter(d9_fetch_job *job, void *waiter) {
    if (job->nwaiters == job->cap) {
        size_t cap = job->cap ? job->cap * 2 : 4;
        void **v = realloc(job->waiters, cap * sizeof *v);
        if (!v) return false;
        job->waiters = v;
        job->cap = cap;
    }
    job->waiters[job->nwaiters++] = waiter;
    return true;
}

/* Tell every waiter, then free the job (already out of the line). */
static void finish(d9_fetch_jobs *j, d9_fetch_job *job, const char *error) {
    for (size_t i = 0; i < job->nwaiters; i++) j->done(job->waiters[i], error, j->cls);
    if (job->err_fd >= 0) close(job->err_fd);
    free(job->waiters);
    free(job->want);
    free(job);
}

/* The step's input: the source, the run and its segments wanted (serve_selection.h). */
static int job_input(const d9_fetch_jobs *j, const d9_fetch_job *job) {
    int fd = memfd_create("dial9-serve-fetch", MFD_CLOEXEC);
    FILE *f = fd >= 0 ? fdopen(dup(fd), "w") : NULL;
    if (!f) {
        if (fd >= 0) close(fd);
        return -1;
    }
    const d9_sel_run *r = job->run;
    fputs("dial9-serve-selection 1\nsource\t", f);
    d9_serve_selection_field(f, j->source);
    fputs("\nrun\t", f);
    d9_serve_selection_field(f, r->name);
    fprintf(f, "\t%lld\t%lld\n", r->first, r->last);
    for (size_t k = 0; k < r->count; k++) {
        if (!job->want[k]) continue;
        fputs("seg\t", f);
        d9_serve_selection_field(f, r->segs[k].file);
        fprintf(f, "\t%llu\t%lld\t", (unsigned long long)r->segs[k].size, r->segs[k].start);
        d9_serve_selection_field(f, r->segs[k].key);
        fputc('\n', f);
    }
    if (fclose(f) != 0 || lseek(fd, 0, SEEK_SET) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Run the step for the job at the head of the line. 0, or -1 with a message. */
static int start(d9_fetch_jobs *j, d9_fetch_job *job, char *err, size_t errlen) {
    if (!j->program) {
        snprintf(err, errlen, "no fetch step: this server was not started by `dial9 serve --bucket` "
                              "(--fetcher DIAL9), and no dial9 is next to it");
        return -1;
    }
    int in = job_input(j, job);
    job->err_fd = memfd_create("dial9-serve-fetch-stderr", MFD_CLOEXEC);
    if (in < 0 || job->err_fd < 0) {
        snprintf(err, errlen, "the fetch step's input: %s", strerror(errno));
        if (in >= 0) close(in);
        return -1;
    }
    /* the server blocks SIGINT, SIGTERM and SIGCHLD (its signalfd) and ignores SIGPIPE: the step
       gets the defaults back */
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGPIPE);
    sigaddset(&defaults, SIGINT);
    sigaddset(&defaults, SIGTERM);
    sigaddset(&defaults, SIGCHLD);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in, 0);
    posix_spawn_file_actions_adddup2(&fa, job->err_fd, 1);
    posix_spawn_file_actions_adddup2(&fa, job->err_fd, 2);
    posix_spawnattr_init(&at);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &defaults);
    char *argv[] = {(char *)j->program, "_serve-fetch", (char *)j->root, NULL};
    int rc = posix_spawn(&job->pid, j->program, &fa, &at, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    close(in);
    if (rc != 0) {
        job->pid = 0;
        snprintf(err, errlen, "cannot run the fetch step %s: %s", j->program, strerror(rc));
        return -1;
    }
    j->started++;
    return 0;
}

/* Start the job at the head of the line unless one runs; a job that cannot start fails. */
static void run_next(d9_fetch_jobs *j) {
    while (j->head && !j->head->pid) {
        char err[512];
        if (start(j, j->head, err, sizeof err) == 0) return;
        d9_fetch_job *job = j->head;
        j->head = job->next;
        if (!j->head) j->tail = NULL;
        finish(j, job, err);
    }
}

int d9_fetch_jobs_want(d9_fetch_jobs *j, const d9_sel_run *run, const bool *want, void *waiter) {
    for (d9_fetch_job *job = j->head; job; job = job->next) {
        if (job->run != run) continue;
        if (!add_waiter(job, waiter)) return -1;
        if (!job->pid) /* still in line: it takes these segments too */
            for (size_t k = 0; k < run->count; k++) job->want[k] |= want[k];
        return 1; /* a running one that lacks some: the waiter asks again after it */
    }
    d9_fetch_job *job = calloc(1, sizeof *job);
    if (!job || !(job->want = malloc((run->count ? run->count : 1) * sizeof *job->want)) || !add_waiter(job, waiter)) {
        if (job) free(job->want);
        free(job);
        return -1;
    }
    memcpy(job->want, want, run->count * sizeof *want);
    job->run = run;
    job->err_fd = -1;
    if (j->tail) j->tail->next = job;
    else j->head = job;
    j->tail = job;
    run_next(j);
    return 0;
}

/* What the step said on standard error: its first line (a sanitizer's report may follow). */
static void step_message(int fd, int status, char *out, size_t len) {
    char buf[MAX_MESSAGE];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    buf[n > 0 ? n : 0] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    if (buf[0]) snprintf(out, len, "%s", buf);
    else if (WIFSIGNALED(status)) snprintf(out, len, "the fetch step was killed by signal %d", WTERMSIG(status));
    else snprintf(out, len, "the fetch step exited with status %d", WEXITSTATUS(status));
}

void d9_fetch_jobs_reap(d9_fetch_jobs *j) {
    d9_fetch_job *job = j->head;
    int status;
    if (!job || !job->pid || waitpid(job->pid, &status, WNOHANG) != job->pid) return;
    j->head = job->next;
    if (!j->head) j->tail = NULL;
    char msg[MAX_MESSAGE + 64];
    bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!ok) step_message(job->err_fd, status, msg, sizeof msg);
    finish(j, job, ok ? NULL : msg);
    run_next(j);
}

void d9_fetch_jobs_stop(d9_fetch_jobs *j, const char *why) {
    while (j->head) {
        d9_fetch_job *job = j->head;
        if (job->pid) { /* ours: stopped and waited for, so nothing outlives the server */
            kill(job->pid, SIGTERM);
            while (waitpid(job->pid, NULL, 0) < 0 && errno == EINTR) {}
        }
        j->head = job->next;
        finish(j, job, why);
    }
    j->tail = NULL;
}
