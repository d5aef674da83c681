/* The dumps' upload thread and its queue (flight_upload.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "core/flight_upload.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/own_thread_name.h"
#include "aws/s3_client.h"
#include "sinks/step_dump_upload.h"
#include "sinks/upload_pace.h"

#define ATTEMPTS 5

typedef struct job {
    struct job *next;
    char dir[PATH_MAX], name[160];
    int64_t at_unix_ns;
} job;

typedef struct uploads {
    pthread_mutex_t lock;
    pthread_cond_t cv;
    job *head, *tail;
    bool started, stopping;
    struct timespec deadline; /* CLOCK_MONOTONIC: past it, stopping gives up */
    pthread_t thread;
    const d9_config *cfg;
    char service[256], host[256];
} uploads;

static uploads g_up = {.lock = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

/* At exit (d9_flight_upload_stop began) a failing S3 is not waited for (upload_pace.h). */
static bool stopping(void *ctx) {
    uploads *u = ctx;
    pthread_mutex_lock(&u->lock);
    bool s = u->stopping;
    pthread_mutex_unlock(&u->lock);
    return s;
}

static bool past_deadline(void *ctx) {
    uploads *u = ctx;
    pthread_mutex_lock(&u->lock);
    bool stopping = u->stopping;
    struct timespec d = u->deadline;
    pthread_mutex_unlock(&u->lock);
    if (!stopping) return false;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec > d.tv_sec || (now.tv_sec == d.tv_sec && now.tv_nsec >= d.tv_nsec);
}

/* A dump left out because S3 failed at exit (the reason said once, by the pace). */
static void say_not_waited_for(const job *j) {
    fprintf(stderr, "dial9: dump %s: not stored in S3: S3 is failing and not waited for at exit (the local dump "
                    "stays; its manifest is not in S3: readers see it incomplete)\n", j->dir);
}

static void upload_one(uploads *u, d9_s3_client *c, d9_upload_pace *pace, const job *j) {
    char key_dir[4096], err[1024];
    const char *prefix = u->cfg->s3_prefix ? u->cfg->s3_prefix : "dial9-traces";
    if (d9_dump_key_dir(key_dir, sizeof key_dir, prefix, u->service, u->host, (time_t)(j->at_unix_ns / 1000000000),
                        j->name) != 0) {
        fprintf(stderr, "dial9: dump %s: not stored in S3: its key is too long\n", j->dir);
        return;
    }
    d9_s3_result r = d9_dump_upload(c, j->dir, key_dir, ATTEMPTS, pace, err, sizeof err);
    if (r == D9_S3_OK)
        fprintf(stderr, "dial9: dump stored in S3: %s%s\n", d9_s3_client_target(c), key_dir);
    else if (pace->quit)
        say_not_waited_for(j);
    else
        fprintf(stderr, "dial9: dump %s: not stored in S3 (its manifest is not there: readers see it incomplete; "
                        "the local dump stays): %s\n", j->dir, err);
}

static void *upload_main(void *arg) {
    uploads *u = arg;
    d9_name_own_thread("dial9-dump-up");
    struct sched_param sp = {0};
    (void)pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp);
    d9_s3_client *c = NULL;
    bool client_failed = false;
    d9_upload_pace pace; /* one circuit for all dumps, as the segments' uploader has */
    d9_upload_pace_init(&pace, "dial9: dump upload");
    pace.give_up = past_deadline;
    pace.not_waiting = stopping;
    pace.ctx = u;
    for (;;) {
        pthread_mutex_lock(&u->lock);
        while (!u->head && !u->stopping) pthread_cond_wait(&u->cv, &u->lock);
        job *j = u->head;
        if (j) {
            u->head = j->next;
            if (!u->head) u->tail = NULL;
        }
        pthread_mutex_unlock(&u->lock);
        if (!j) break; /* stopping, nothing left */
        if (!c && !client_failed) {
            char err[512];
            c = d9_s3_client_new(u->cfg, err, sizeof err);
            if (!c) {
                client_failed = true;
                fprintf(stderr, "dial9: dumps are not stored in S3: %s\n", err);
            }
        }
        if (c) {
            if (pace.quit)
                say_not_waited_for(j);
            else if (past_deadline(u))
                fprintf(stderr, "dial9: dump %s: not stored in S3: the exit wait (DIAL9_S3_EXIT_WAIT_SECS) is over\n",
                        j->dir);
            else
                upload_one(u, c, &pace, j);
        }
        free(j);
    }
    d9_s3_client_free(c);
    return NULL;
}

bool d9_flight_upload_start(const d9_config *cfg, const char *service) {
    uploads *u = &g_up;
    if (!cfg->s3_bucket || !cfg->s3_bucket[0] || u->started) return true;
    u->cfg = cfg;
    snprintf(u->service, sizeof u->service, "%s", service && *service ? service : "unknown");
    if (gethostname(u->host, sizeof u->host) != 0) snprintf(u->host, sizeof u->host, "unknown");
    u->host[sizeof u->host - 1] = 0;
    u->stopping = false;
    u->head = u->tail = NULL;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&u->thread, NULL, upload_main, u);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        fprintf(stderr, "dial9: dumps are not stored in S3: cannot start a thread: %s\n", strerror(rc));
        return false;
    }
    u->started = true;
    return true;
}

void d9_flight_upload_enqueue(const char *dir, const char *name, int64_t at_unix_ns) {
    uploads *u = &g_up;
    if (!u->started) return;
    job *j = calloc(1, sizeof *j);
    if (!j) {
        fprintf(stderr, "dial9: dump %s: not stored in S3: out of memory\n", dir);
        return;
    }
    snprintf(j->dir, sizeof j->dir, "%s", dir);
    snprintf(j->name, sizeof j->name, "%s", name);
    j->at_unix_ns = at_unix_ns;
    pthread_mutex_lock(&u->lock);
    if (u->tail) u->tail->next = j;
    else u->head = j;
    u->tail = j;
    pthread_cond_signal(&u->cv);
    pthread_mutex_unlock(&u->lock);
}

void d9_flight_upload_stop(void) {
    uploads *u = &g_up;
    if (!u->started) return;
    pthread_mutex_lock(&u->lock);
    u->stopping = true;
    clock_gettime(CLOCK_MONOTONIC, &u->deadline);
    u->deadline.tv_sec += u->cfg->s3_exit_wait_secs;
    pthread_cond_signal(&u->cv);
    pthread_mutex_unlock(&u->lock);
    pthread_join(u->thread, NULL);
    u->started = false;
}

void d9_flight_upload_forget_after_fork(void) {
    uploads *u = &g_up;
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
    u->lock = m;
    u->cv = cv;
    u->head = u->tail = NULL; /* the parent's jobs: leaked in the child, never run twice */
    u->started = false;
}
