/* d9-uv-server: a small libuv HTTP/1.1 server recorded by dial9.
 *
 * Each of N loops runs on its own thread with its own SO_REUSEPORT listener on the same port,
 * so the kernel spreads connections over the loops. The only dial9-specific code is the
 * recorder's lifecycle (start from DIAL9_* variables, stop on SIGINT/SIGTERM) and one
 * d9_uv_instrument() per loop: every callback, park and thread-pool job is then recorded.
 *
 * Usage: d9-uv-server [--port P] [--host H] [--loops N] [--seconds S] [--file PATH]
 *                     [--trace-dir D] [--quiet]
 *   --port 0 picks a free port (printed); --seconds 0 (default) runs until SIGINT/SIGTERM.
 * Routes: see routes.h.
 */
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <dial9/uv.h>

#include "http_conn.h"
#include "server_loop.h"

#define MAX_LOOPS 64

typedef struct options {
    const char *host;
    int port;
    unsigned loops;
    double seconds;
    const char *file_path;
    const char *trace_dir;
    bool quiet;
} options;

typedef struct server {
    options opt;
    server_loop loops[MAX_LOOPS];
    uv_loop_t control;            /* main thread: signals and the --seconds timer */
    uv_signal_t sigint, sigterm;
    uv_timer_t deadline;
    bool stopping;
    char temp_file[64];           /* the generated file /file serves, removed at exit */
} server;

static void usage(FILE *out) {
    fprintf(out, "usage: d9-uv-server [--port P] [--host H] [--loops N] [--seconds S] [--file PATH]\n"
                 "                    [--trace-dir D] [--quiet]\n"
                 "routes: /  /work?ms=N  /file  /lookup        recording: DIAL9_* variables\n");
}

static int parse_options(int argc, char **argv, options *o) {
    static const struct option longs[] = {
        {"port", required_argument, 0, 'p'},    {"host", required_argument, 0, 'H'},
        {"loops", required_argument, 0, 'l'},   {"seconds", required_argument, 0, 's'},
        {"file", required_argument, 0, 'f'},    {"trace-dir", required_argument, 0, 't'},
        {"quiet", no_argument, 0, 'q'},         {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    *o = (options){.host = "127.0.0.1", .port = 8080, .loops = 1};
    int ch;
    while ((ch = getopt_long(argc, argv, "p:H:l:s:f:t:qh", longs, NULL)) != -1) {
        char *end = NULL;
        switch (ch) {
        case 'p': o->port = (int)strtol(optarg, &end, 10); break;
        case 'H': o->host = optarg; break;
        case 'l': o->loops = (unsigned)strtoul(optarg, &end, 10); break;
        case 's': o->seconds = strtod(optarg, &end); break;
        case 'f': o->file_path = optarg; break;
        case 't': o->trace_dir = optarg; break;
        case 'q': o->quiet = true; break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); return -1;
        }
        if (end && *end) {
            fprintf(stderr, "d9-uv-server: bad value '%s'\n", optarg);
            return -1;
        }
    }
    if (optind != argc || o->loops < 1 || o->loops > MAX_LOOPS || o->port < 0 || o->port > 65535 ||
        o->seconds < 0) {
        usage(stderr);
        return -1;
    }
    return 0;
}

/* A bound (not yet listening) IPv4 socket with SO_REUSEPORT; *port 0 becomes the port the
 * kernel chose, so the next loops bind the same one. */
static int open_listener_socket(const char *host, int *port) {
    struct sockaddr_in addr;
    if (uv_ip4_addr(host, *port, &addr) != 0) {
        fprintf(stderr, "d9-uv-server: bad IPv4 address %s\n", host);
        return -1;
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0 ||
        bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
        fprintf(stderr, "d9-uv-server: cannot bind %s:%d: %s\n", host, *port, strerror(errno));
        if (fd >= 0) close(fd);
        return -1;
    }
    socklen_t alen = sizeof addr;
    getsockname(fd, (struct sockaddr *)&addr, &alen);
    *port = ntohs(addr.sin_port);
    return fd;
}

static void on_connection(uv_stream_t *listener, int status) {
    if (status == 0) http_conn_accept(listener->data);
}

static void close_any(uv_handle_t *h, void *arg) {
    if (uv_is_closing(h)) return;
    if (http_conn_owns_handle(h)) http_conn_close(h);
    else uv_close(h, NULL);
}

/* On the loop's own thread: close every handle so that uv_run returns. */
static void on_stop(uv_async_t *stop) { uv_walk(stop->loop, close_any, NULL); }

static void run_loop(void *arg) {
    server_loop *sl = arg;
    uv_run(&sl->loop, UV_RUN_DEFAULT);
}

/* Set up loop `i` (from the main thread, before it runs): instrument it, then listen. */
static int setup_loop(server *srv, unsigned i, int *port) {
    server_loop *sl = &srv->loops[i];
    sl->index = i;
    sl->file_path = srv->opt.file_path;
    if (uv_loop_init(&sl->loop) != 0) return -1;
#ifndef D9_UV_SERVER_PLAIN
    d9_uv_instrument(&sl->loop, "http"); /* the one line that records this loop */
#endif

    int fd = open_listener_socket(srv->opt.host, port);
    if (fd < 0) return -1;
    uv_tcp_init(&sl->loop, &sl->listener);
    sl->listener.data = sl;
    int err = uv_tcp_open(&sl->listener, fd);
    if (err == 0) err = uv_listen((uv_stream_t *)&sl->listener, 1024, on_connection);
    if (err != 0) {
        fprintf(stderr, "d9-uv-server: listen: %s\n", uv_strerror(err));
        return -1;
    }
    uv_async_init(&sl->loop, &sl->stop, on_stop);
    return 0;
}

/* Nothing to free: the control handles live in `server`. (A real callback rather than NULL
 * keeps the libuv adapter from warning about an uninstrumented loop's handles.) */
static void on_control_closed(uv_handle_t *h) {}

static void begin_shutdown(server *srv) {
    if (srv->stopping) return;
    srv->stopping = true;
    for (unsigned i = 0; i < srv->opt.loops; i++) uv_async_send(&srv->loops[i].stop);
    uv_close((uv_handle_t *)&srv->sigint, on_control_closed);
    uv_close((uv_handle_t *)&srv->sigterm, on_control_closed);
    uv_close((uv_handle_t *)&srv->deadline, on_control_closed);
}

static void on_signal(uv_signal_t *h, int signum) { begin_shutdown(h->data); }
static void on_deadline(uv_timer_t *t) { begin_shutdown(t->data); }

/* Without --file, /file serves 16 KiB of generated text from a temporary file. */
static int make_default_file(server *srv) {
    snprintf(srv->temp_file, sizeof srv->temp_file, "/tmp/d9-uv-server.XXXXXX");
    int fd = mkstemp(srv->temp_file);
    if (fd < 0) return -1;
    char line[65];
    for (int i = 0; i < 16384 / 64; i++) { /* 256 lines of 64 bytes: "line 0042 kkkk...\n" */
        int n = snprintf(line, sizeof line, "line %04d ", i);
        memset(line + n, 'a' + i % 26, (size_t)(63 - n));
        line[63] = '\n';
        if (write(fd, line, 64) != 64) {
            close(fd);
            return -1;
        }
    }
    close(fd);
    srv->opt.file_path = srv->temp_file;
    return 0;
}

int main(int argc, char **argv) {
    static server srv; /* large (connection tables live in the loops): keep it off the stack */
    if (parse_options(argc, argv, &srv.opt) != 0) return 2;
    signal(SIGPIPE, SIG_IGN);
    if (!srv.opt.file_path && make_default_file(&srv) != 0) {
        fprintf(stderr, "d9-uv-server: cannot create a file to serve: %s\n", strerror(errno));
        return 1;
    }

    d9_config cfg;
    /* a bad DIAL9_* value: said, and the server runs without recording (cfg is disabled) */
    if (d9_config_from_env(&cfg) != 0)
        fprintf(stderr, "d9-uv-server: dial9: recording disabled: %s\n", d9_last_error());
    if (srv.opt.trace_dir) cfg.trace_dir = srv.opt.trace_dir;
    d9_start_or_disabled(&cfg);

    int port = srv.opt.port;
    for (unsigned i = 0; i < srv.opt.loops; i++) {
        if (setup_loop(&srv, i, &port) != 0) {
            d9_stop();
            if (srv.temp_file[0]) unlink(srv.temp_file);
            return 1;
        }
    }

    uv_loop_init(&srv.control);
    uv_signal_init(&srv.control, &srv.sigint);
    uv_signal_init(&srv.control, &srv.sigterm);
    uv_timer_init(&srv.control, &srv.deadline);
    srv.sigint.data = srv.sigterm.data = srv.deadline.data = &srv;
    uv_signal_start(&srv.sigint, on_signal, SIGINT);
    uv_signal_start(&srv.sigterm, on_signal, SIGTERM);
    if (srv.opt.seconds > 0) uv_timer_start(&srv.deadline, on_deadline, (uint64_t)(srv.opt.seconds * 1000), 0);

    for (unsigned i = 0; i < srv.opt.loops; i++)
        uv_thread_create(&srv.loops[i].thread, run_loop, &srv.loops[i]);
    printf("listening on http://%s:%d/ with %u loop%s\n", srv.opt.host, port, srv.opt.loops,
           srv.opt.loops == 1 ? "" : "s");
    fflush(stdout);

    uv_run(&srv.control, UV_RUN_DEFAULT);
    uint64_t requests = 0, connections = 0;
    for (unsigned i = 0; i < srv.opt.loops; i++) {
        uv_thread_join(&srv.loops[i].thread);
        uv_loop_close(&srv.loops[i].loop);
        requests += srv.loops[i].requests;
        connections += srv.loops[i].connections;
    }
    uv_loop_close(&srv.control);
    d9_stop();
    if (srv.temp_file[0]) unlink(srv.temp_file);

    d9_stats st;
    d9_get_stats(&st);
    if (!srv.opt.quiet) {
        for (unsigned i = 0; i < srv.opt.loops; i++)
            printf("loop %-2u    %llu requests on %llu connections\n", i,
                   (unsigned long long)srv.loops[i].requests, (unsigned long long)srv.loops[i].connections);
    }
    printf("served    %llu requests on %llu connections\n", (unsigned long long)requests,
           (unsigned long long)connections);
    printf("recorded  %llu events (%llu dropped), %llu bytes written\n",
           (unsigned long long)st.events_recorded, (unsigned long long)st.events_dropped,
           (unsigned long long)st.bytes_written);
    printf("trace     %s\n", d9_run_dir() ? d9_run_dir() : "(not recording)");
    return 0;
}
