/* A libuv loop recorded through the adapter: 5 timer callbacks into argv[1]; prints the run
 * directory. */
#include <dial9/uv.h>
#include <stdio.h>

static int ticks;
static void on_tick(uv_timer_t *t) {
    if (++ticks == 5) uv_timer_stop(t);
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = argv[1];
    int rc = d9_start(&cfg);
    if (rc != D9_OK) {
        fprintf(stderr, "%s: %s\n", d9_strerror(rc), d9_last_error());
        return 1;
    }
    uv_loop_t *loop = uv_default_loop();
    if (d9_uv_instrument(loop, "io") != 0) return 1;
    uv_timer_t t;
    uv_timer_init(loop, &t);
    uv_timer_start(&t, on_tick, 1, 1);
    uv_run(loop, UV_RUN_DEFAULT);
    d9_stop();
    printf("%s\n", d9_run_dir());
    return ticks == 5 ? 0 : 1;
}
