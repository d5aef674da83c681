/* Records 100 polls into argv[1]; prints the run directory. */
#include <dial9/dial9.h>
#include <stdio.h>

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    if (d9_version() >> 16 != DIAL9_VERSION_MAJOR) { /* the library the build found */
        fprintf(stderr, "runs with dial9 %s, built with %s\n", d9_version_string(), DIAL9_VERSION_STRING);
        return 1;
    }
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = argv[1];
    int rc = d9_start(&cfg);
    if (rc != D9_OK) {
        fprintf(stderr, "%s: %s\n", d9_strerror(rc), d9_last_error());
        return 1;
    }
    d9_worker_begin("app", 0);
    for (int i = 0; i < 100; i++) {
        d9_poll_begin(1, D9_HERE);
        d9_poll_end();
    }
    d9_stop();
    printf("%s\n", d9_run_dir());
    return 0;
}
