/* What the diagnosis stories share: the recorder's lifecycle and options, a small request
 * server on libuv loops (one thread and one SO_REUSEPORT listener per loop, instrumented with
 * d9_uv_instrument), and a closed-loop client load that measures latency. Everything runs on
 * 127.0.0.1 inside the story's process, so a story needs nothing but itself.
 *
 * Protocol: a client sends "ping\n"; the server calls the story's handler on the loop thread,
 * then answers "pong\n". */
#ifndef STORIES_STORY_KIT_H
#define STORIES_STORY_KIT_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

/* ------------------------------------------------------------------ recording and options */

typedef struct story_options {
    double seconds;           /* --seconds S: how long the story's load runs */
    const char *trace_dir;    /* --trace-dir D: overrides DIAL9_TRACE_DIR */
} story_options;

/* Parse --seconds / --trace-dir (and --help: prints `about`), start the recorder from the
 * DIAL9_* variables. Exits with status 2 on a usage error. */
void story_begin(int argc, char **argv, const char *about, double default_seconds,
                 story_options *out);

/* Stop the recorder (everything is written and sealed) and print "trace     RUN_DIR". */
void story_end(void);

/* ------------------------------------------------------------------ small tools */

uint64_t story_now_ns(void);
/* Burn CPU for `ns` (the thread stays runnable: the kernel sees work, not sleep). */
void story_spin_ns(uint64_t ns);
void story_sleep_ns(uint64_t ns);
/* Raise the soft RLIMIT_NOFILE towards `want`; returns the limit now in force. */
uint64_t story_raise_fd_limit(uint64_t want);

/* ------------------------------------------------------------------ request server */

/* Called on the loop thread for each request, inside the read callback. */
typedef void (*story_handler)(unsigned loop_index, void *arg);
/* Called on the main thread for each loop, after it is instrumented and before it runs:
 * register the story's own handles (timers...) here. May be NULL. */
typedef void (*story_loop_setup)(uv_loop_t *loop, unsigned loop_index, void *arg);

typedef struct story_server story_server;

/* Start `loops` loops named `worker_name` in the trace, listening on a free port. Exits the
 * process with a message when it cannot. */
story_server *story_server_start(unsigned loops, const char *worker_name, story_handler handler,
                                 story_loop_setup setup, void *arg);
int story_server_port(const story_server *s);
/* Close every handle of every loop, join their threads, free the server. */
void story_server_stop(story_server *s);

/* ------------------------------------------------------------------ client load */

typedef struct story_load {
    unsigned clients;         /* connections, one thread each */
    double seconds;
    double pause_ms;          /* each client waits this long between an answer and its next
                                 request (0: as fast as the server answers) */
} story_load;

typedef struct story_latency {
    uint64_t requests;
    uint64_t errors;
    double p50_ms, p99_ms, max_ms;
} story_latency;

/* Run the load against 127.0.0.1:port and wait for it to finish. Each client makes at least
 * one request, even past `seconds`, unless the server fails it three times. */
void story_load_run(int port, const story_load *load, story_latency *out);
void story_latency_print(const char *label, const story_latency *l);

#endif
