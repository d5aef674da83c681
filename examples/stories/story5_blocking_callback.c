/* Story 5: a callback that blocks the event loop.
 *
 * One libuv loop serves requests. Every 250 ms a timer callback, reload_config, asks a
 * "configuration service" for fresh settings with a plain blocking read() on a socket: the
 * service takes 30 ms to answer, and for those 30 ms the loop can do nothing else. Clients
 * see it as latency spikes; the trace shows it as one poll of >= 30 ms located at
 * reload_config, spent off-CPU in read().
 *
 * See docs/stories/5-blocking-callback.md.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "story_kit.h"

#define RELOAD_EVERY_MS 250
#define SERVICE_DELAY_NS (30 * 1000000ull)

typedef struct story {
    int service_fd[2];        /* [0]: the loop's end (blocking), [1]: the service's end */
    pthread_t service;
    uv_timer_t reload;
    unsigned reloads;
    char setting[64];
} story;

/* The configuration service: answers each request 30 ms later. */
static void *config_service(void *arg) {
    story *s = arg;
    char req[16];
    while (read(s->service_fd[1], req, sizeof req) > 0) {
        story_sleep_ns(SERVICE_DELAY_NS);
        if (write(s->service_fd[1], "timeout_ms=5000\n", 16) != 16) break;
    }
    return NULL;
}

/* The bug: synchronous I/O on the loop thread. (The fix: uv_queue_work, or make the service
 * socket a uv_pipe_t / uv_tcp_t and read it asynchronously.) */
__attribute__((noinline)) static void fetch_config_blocking(story *s) {
    if (write(s->service_fd[0], "get\n", 4) != 4) return;
    ssize_t n = read(s->service_fd[0], s->setting, sizeof s->setting - 1);
    s->setting[n > 0 ? n : 0] = '\0';
}

static void reload_config(uv_timer_t *t) {
    story *s = t->data;
    fetch_config_blocking(s);
    s->reloads++;
}

static void handle_request(unsigned loop_index, void *arg) {
    story_spin_ns(20000); /* 20 us of real work per request */
}

static void setup_loop(uv_loop_t *loop, unsigned index, void *arg) {
    story *s = arg;
    uv_timer_init(loop, &s->reload);
    s->reload.data = s;
    uv_timer_start(&s->reload, reload_config, RELOAD_EVERY_MS, RELOAD_EVERY_MS);
}

int main(int argc, char **argv) {
    story_options opt;
    story_begin(argc, argv, "story 5: a callback that blocks the event loop (a synchronous read)", 3,
                &opt);
    static story s;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, s.service_fd) != 0) {
        perror("socketpair");
        return 1;
    }
    pthread_create(&s.service, NULL, config_service, &s);

    story_server *srv = story_server_start(1, "api", handle_request, setup_loop, &s);
    story_load load = {.clients = 4, .seconds = opt.seconds, .pause_ms = 1};
    printf("story 5: 1 loop, 4 clients for %.1f s; reload_config blocks the loop for 30 ms every %d ms\n",
           opt.seconds, RELOAD_EVERY_MS);
    story_latency lat;
    story_load_run(story_server_port(srv), &load, &lat);
    story_server_stop(srv);

    shutdown(s.service_fd[0], SHUT_WR); /* the service sees EOF and exits */
    pthread_join(s.service, NULL);
    close(s.service_fd[0]);
    close(s.service_fd[1]);

    story_latency_print("clients", &lat);
    printf("reloads   %u (each blocked the loop for >= 30 ms)\n", s.reloads);
    story_end();
    return lat.requests > 0 && s.reloads > 0 ? 0 : 1;
}
