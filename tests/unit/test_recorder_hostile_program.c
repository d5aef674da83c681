/* What programs do to a library behind its back: close every fd (and reuse the numbers for
 * their own files), and become workers before recording starts. The program's files must stay
 * exactly as it wrote them, and the trace must stay readable and complete about workers. */
#include <fcntl.h>

#include "check.h"
#include "dial9/dial9.h"
#include "trace_files_util.h"

#define FILES 40

typedef struct seen {
    int registered_worker;
    uint64_t polls;
} seen;

static void on_event(const d9_event *ev, void *ctx) {
    seen *s = ctx;
    if (d9t_is(ev, "WorkerRegisteredEvent") && d9t_field_u(ev, "index") == 7) s->registered_worker++;
    if (d9t_is(ev, "PollStartEvent")) s->polls++;
}

int main(void) {
    char *dir = d9t_mkdtemp("hostile");
    /* A worker from before d9_start: the first segment must say so. */
    d9_worker_begin("early", 7);

    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    CHECK(d9_start(&cfg) == 0);
    for (int i = 0; i < 1000; i++) { d9_poll_begin(1, D9_HERE); d9_poll_end(); }
    d9_park();
    d9_unpark();
    d9_flush();

    /* Close everything a daemon would, then open files of our own on the freed numbers. */
    for (int fd = 3; fd < 1024; fd++) close(fd);
    char paths[FILES][512];
    int fds[FILES];
    for (int i = 0; i < FILES; i++) {
        snprintf(paths[i], sizeof paths[i], "%s/program-%d.txt", dir, i);
        fds[i] = open(paths[i], O_CREAT | O_RDWR | O_TRUNC, 0644);
        CHECK(fds[i] >= 0);
    }
    /* Keep recording (schedstat reads and segment writes would hit the reused numbers). */
    for (int round = 0; round < 5; round++) {
        for (int i = 0; i < 1000; i++) { d9_poll_begin(2, D9_HERE); d9_poll_end(); }
        d9_park();
        d9_unpark();
        d9_flush();
    }
    for (int i = 0; i < FILES; i++) {
        char line[64];
        int n = snprintf(line, sizeof line, "file %d\n", i);
        CHECK(write(fds[i], line, (size_t)n) == n);
    }
    d9_stop();

    for (int i = 0; i < FILES; i++) {
        char buf[256] = {0}, expect[64];
        snprintf(expect, sizeof expect, "file %d\n", i);
        ssize_t n = pread(fds[i], buf, sizeof buf - 1, 0);
        if (n != (ssize_t)strlen(expect) || strcmp(buf, expect) != 0) {
            fprintf(stderr, "%s holds %zd bytes, not what the program wrote\n", paths[i], n);
            CHECK(0);
        }
        close(fds[i]);
    }
    seen s = {0};
    CHECK(d9t_decode_run(d9_run_dir(), on_event, &s) == 0);
    CHECK(s.registered_worker >= 1);
    CHECK(s.polls >= 1000); /* at least what was flushed before the fds were closed */
    printf("polls decoded: %" PRIu64 " of 6000\n", s.polls);
    d9t_rm_rf(dir);
    free(dir);
    return d9t_summary("recorder_hostile_program");
}
