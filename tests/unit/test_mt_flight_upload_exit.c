/* Flight recorder dumps are not waited for at exit when S3 fails (docs/flight-recorder.md, "In
 * S3"): the dumps' uploads pace their attempts by one circuit breaker, as the segments' do
 * (sinks/upload_pace.h), and once it is open (5 consecutive failures) d9_stop does not wait for
 * S3: one line says so, every dump not stored is named, its local directory stays.
 *
 * A child records in memory mode with DIAL9_S3_BUCKET set and the longest exit wait (one hour),
 * takes DUMPS dumps, each written whole before the next, and stops. DIAL9_S3_BREAKER_SECS=3600:
 * no probe after the circuit opens, so the attempts are counted exactly: 5 in all, whatever
 * the timing (before, 5 per dump: 15 for 3).
 *
 *     test_mt_flight_upload_exit                 against a refused port (no server needed)
 *     test_mt_flight_upload_exit --record BASE   the child alone, its endpoint from
 *         AWS_ENDPOINT_URL: tests/scripts/test_s3_dump_exit_outage.sh runs it against s3rver
 *         behind the proxy answering 503 to everything and counts the PUTs it got. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdint.h>
#include <sys/socket.h>

#include "check.h"
#include "dial9/dial9.h"
#include "flight_test_util.h"

#define DUMPS 3

/* How many dumps under {base}/dumps have their manifest (written last: whole). */
static int whole_dumps(const char *base) {
    char names[16][256], path[512], file[5000];
    snprintf(path, sizeof path, "%s/dumps", base);
    int n = ft_entries(path, names, 16), whole = 0;
    for (int i = 0; i < n && i < 16; i++) {
        snprintf(file, sizeof file, "%s/%s/manifest.json", path, names[i]);
        whole += access(file, F_OK) == 0;
    }
    return whole;
}

/* The recording program: 0 when it took its dumps and stopped. ctest's timeout (or the
 * script's) bounds the waits. */
static int record(void *arg) {
    const char *base = arg;
    const char *endpoint = getenv("AWS_ENDPOINT_URL");
    ft_env(base);
    setenv("DIAL9_MODE", "memory", 1);
    setenv("DIAL9_S3_BUCKET", "d9-test", 1);
    setenv("DIAL9_S3_EXIT_WAIT_SECS", "3600", 1); /* the longest: a working S3 may use it all */
    setenv("DIAL9_S3_BREAKER_SECS", "3600", 1);   /* no probe once open: the attempts are exact */
    setenv("DIAL9_SYMBOLIZE", "0", 1);
    if (!endpoint) {
        fprintf(stderr, "no AWS_ENDPOINT_URL\n");
        return 2;
    }
    if (!ft_start_from_env()) return 3;
    d9_worker_begin("dump-exit", 0);
    for (int k = 1; k <= DUMPS; k++) {
        for (uint64_t task = 1; task <= 100; task++) {
            d9_poll_begin(task, D9_HERE);
            d9_poll_end();
        }
        if (d9_dump(60000, 0, "exit test") != D9_OK) return 4;
        while (whole_dumps(base) < k) ft_sleep_ms(10);
    }
    d9_worker_end();
    d9_stop(); /* the exit: the dumps' uploads end here */
    return 0;
}

/* A loopback port nothing listens on (bound, then closed), as an endpoint URL. */
static void refused_endpoint(char *out, size_t len) {
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000002)}; /* 127.0.0.2 */
    socklen_t al = sizeof a;
    CHECK(s >= 0 && bind(s, (struct sockaddr *)&a, sizeof a) == 0 && getsockname(s, (struct sockaddr *)&a, &al) == 0);
    snprintf(out, len, "http://127.0.0.2:%u", (unsigned)ntohs(a.sin_port));
    close(s);
}

/* The child with its stderr in {base}/err. */
static int record_to_file(void *arg) {
    char path[600];
    snprintf(path, sizeof path, "%s/err", (const char *)arg);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || dup2(fd, 2) < 0) return 10;
    close(fd);
    return record(arg);
}

static int count_lines_with(const char *text, const char *needle) {
    int n = 0;
    for (const char *p = text; p && (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "--record")) return record(argv[2]);
    char *base = d9t_mkdtemp("flight-upload-exit");
    char endpoint[64];
    refused_endpoint(endpoint, sizeof endpoint);
    setenv("AWS_ENDPOINT_URL", endpoint, 1);
    setenv("AWS_ACCESS_KEY_ID", "TEST", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "TEST", 1);
    setenv("AWS_REGION", "us-east-1", 1);
    unsetenv("AWS_PROFILE");
    unsetenv("AWS_SESSION_TOKEN");
    CHECK_EQ_U64(ft_run_child(record_to_file, base), 0);

    char path[600];
    snprintf(path, sizeof path, "%s/err", base);
    char *err = ft_read(path);
    CHECK(err != NULL);
    if (!err) err = strdup("");
    CHECK_EQ_U64(count_lines_with(err, "dial9: dump upload: S3 upload not waited for at exit: it is failing"), 1);
    /* every dump: stored nowhere, named once, whole on disk */
    CHECK_EQ_U64(count_lines_with(err, "not stored in S3"), DUMPS);
    CHECK_EQ_U64(count_lines_with(err, "dump stored in S3"), 0);
    CHECK_EQ_U64((uint64_t)whole_dumps(base), DUMPS);
    char names[16][256], dir[512];
    snprintf(dir, sizeof dir, "%s/dumps", base);
    int n = ft_entries(dir, names, 16);
    for (int i = 0; i < n && i < 16; i++) {
        char line[5000];
        snprintf(line, sizeof line, "dial9: dump %s/%s: not stored in S3", dir, names[i]);
        CHECK_EQ_U64(count_lines_with(err, line), 1);
    }
    if (d9t_failed) fprintf(stderr, "--- the child's stderr\n%s", err);
    free(err);
    if (d9t_failed == 0) d9t_rm_rf(base);
    else printf("kept %s\n", base);
    free(base);
    return d9t_summary("test_mt_flight_upload_exit");
}
