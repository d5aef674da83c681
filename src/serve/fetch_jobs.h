/* Lazy fetching for `dial9 serve --bucket`: the segments of a selection's run that a request
 * opens and the cache lacks are fetched by dial9's fetch step (`DIAL9 _serve-fetch DIR`,
 * cli/cmd_serve_fetch.c), a process of its own, so that libcurl stays out of the server. Its
 * input, on standard input, is a selection file (serve_selection.h) with the run and the
 * segments wanted, taken from this server's selection: no request can name another key. Its
 * standard error says why it failed.
 *
 * One step runs at a time, the others wait in line; requests for a run whose fetch is queued or
 * running join it (a queued one takes their segments too), so two requests for one run share
 * one fetch. The server learns that the step ended from SIGCHLD (its signalfd) and calls
 * d9_fetch_jobs_reap; each waiter is then told the outcome. Not thread-safe: the server's one
 * thread uses it. */
#ifndef D9_SERVE_FETCH_JOBS_H
#define D9_SERVE_FETCH_JOBS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "serve/serve_selection.h"

/* The outcome for one waiter: error NULL when the segments are in the cache now. */
typedef void d9_fetch_done_fn(void *waiter, const char *error, void *cls);

typedef struct d9_fetch_job d9_fetch_job;

typedef struct d9_fetch_jobs {
    const char *program; /* dial9; NULL: no fetch step (every fetch fails, saying so) */
    const char *root;    /* the served directory: the source's directory in the cache */
    const char *source;  /* s3://BUCKET/PREFIX */
    d9_fetch_done_fn *done;
    void *cls;
    d9_fetch_job *head, *tail; /* head: the running step, when one runs */
    unsigned started;          /* steps started so far */
} d9_fetch_jobs;

void d9_fetch_jobs_init(d9_fetch_jobs *j, const char *program, const char *root, const char *source,
                        d9_fetch_done_fn *done, void *cls);

/* waiter wants want[k] of run->segs[k] in the cache: it is told when they are (done). Returns
 * 1 when it joined a fetch of that run already queued or running, 0 when it starts a new one,
 * -1 when out of memory. */
int d9_fetch_jobs_want(d9_fetch_jobs *j, const d9_sel_run *run, const bool *want, void *waiter);

/* A child ended (SIGCHLD): when it is the running step, tell its waiters and start the next. */
void d9_fetch_jobs_reap(d9_fetch_jobs *j);

/* The server stops: a running step is stopped (SIGTERM) and waited for, every waiter told
 * `why` and every job freed. */
void d9_fetch_jobs_stop(d9_fetch_jobs *j, const char *why);

#endif
