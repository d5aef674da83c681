/* The tables beside each uploaded segment (step_tables.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "sinks/step_tables.h"

#include <errno.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;

struct d9_tables_step {
    char *command; /* DIAL9_FOLD_COMMAND or "dial9" */
    char *url;     /* s3://BUCKET/PREFIX/tables */
    char **envp;   /* ours without LD_PRELOAD: the fold is not a program to record */
    uint64_t folded, failed;
};

d9_tables_step *d9_tables_step_new(const char *bucket, const char *prefix) {
    const char *on = getenv("DIAL9_S3_TABLES");
    if (!on || !*on || !strcmp(on, "0")) return NULL;
    if (strcmp(on, "1") != 0) {
        fprintf(stderr, "dial9: DIAL9_S3_TABLES=%s: expected 0 or 1; no tables are written\n", on);
        return NULL;
    }
    if (!bucket || !*bucket) return NULL;
    d9_tables_step *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    const char *cmd = getenv("DIAL9_FOLD_COMMAND");
    t->command = strdup(cmd && *cmd ? cmd : "dial9");
    const char *pre = prefix && *prefix ? prefix : "dial9-traces";
    size_t pl = strlen(pre);
    while (pl > 0 && pre[pl - 1] == '/') pl--;
    if (asprintf(&t->url, "s3://%s/%.*s%stables", bucket, (int)pl, pre, pl ? "/" : "") < 0) t->url = NULL;
    size_t n = 0;
    while (environ && environ[n]) n++;
    t->envp = calloc(n + 1, sizeof *t->envp);
    bool ok = t->command && t->url && t->envp;
    for (size_t i = 0, k = 0; ok && i < n; i++) {
        if (!strncmp(environ[i], "LD_PRELOAD=", 11)) continue;
        if (!(t->envp[k++] = strdup(environ[i]))) ok = false;
    }
    if (!ok) {
        fprintf(stderr, "dial9: DIAL9_S3_TABLES: out of memory; no tables are written\n");
        d9_tables_step_free(t);
        return NULL;
    }
    return t;
}

int d9_tables_step_run(d9_tables_step *t, const char *path, bool (*give_up)(void *), void *ctx) {
    char *argv[] = {t->command, "fold", "--no-commit", "-q", (char *)path, "--to", t->url, NULL};
    pid_t pid;
    int rc = strchr(t->command, '/') ? posix_spawn(&pid, t->command, NULL, NULL, argv, t->envp)
                                     : posix_spawnp(&pid, t->command, NULL, NULL, argv, t->envp);
    int status = 0;
    bool stopped = false;
    while (rc == 0) {
        pid_t w = waitpid(pid, &status, give_up ? WNOHANG : 0);
        if (w == pid || (w < 0 && errno != EINTR)) break; /* ECHILD: reaped by the program */
        if (w == 0 && !stopped && give_up(ctx)) {
            kill(pid, SIGTERM); /* then reaped above */
            stopped = true;
        }
        if (w == 0) nanosleep(&(struct timespec){.tv_nsec = 20 * 1000 * 1000}, NULL);
    }
    /* a program that reaps every child (waitpid(-1)) may take our status (ECHILD): taken as done */
    bool done = rc == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (done) {
        t->folded++;
        return 0;
    }
    if (t->failed++ == 0) {
        if (rc != 0)
            fprintf(stderr, "dial9: DIAL9_S3_TABLES: cannot run %s: %s; the segments are uploaded without tables\n",
                    t->command, strerror(rc));
        else
            fprintf(stderr, "dial9: DIAL9_S3_TABLES: `%s fold` of %s into %s failed (%s %d); the segment is "
                            "uploaded, its tables not (a later `dial9 fold` writes them)\n", t->command, path, t->url,
                    WIFEXITED(status) ? "exit" : "signal", WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    }
    return -1;
}

void d9_tables_step_counts(const d9_tables_step *t, uint64_t *folded, uint64_t *failed) {
    *folded = t ? t->folded : 0;
    *failed = t ? t->failed : 0;
}

void d9_tables_step_free(d9_tables_step *t) {
    if (!t) return;
    for (size_t i = 0; t->envp && t->envp[i]; i++) free(t->envp[i]);
    free(t->envp);
    free(t->command);
    free(t->url);
    free(t);
}
