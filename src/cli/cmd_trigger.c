/* `dial9 trigger [--lookback S] [--lookforward S] [--reason TEXT] PID|RUN_DIR`: ask a recording
 * process's flight recorder for a dump, through its control socket (core/flight_control.h),
 * and print the dump's directory once its manifest is written. */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/exit_codes.h"
#include "core/flight_control.h"

static void trigger_usage(FILE *out) {
    fprintf(out,
            "usage: dial9 trigger [--lookback SECS] [--lookforward SECS] [--reason TEXT] PID|RUN_DIR\n"
            "\n"
            "Dump what a recording process holds of [now - look-back, now + look-forward] into a\n"
            "directory of its own (docs/flight-recorder.md) and print that directory once its\n"
            "manifest is written. The process records with DIAL9_MODE=memory, DIAL9_TRIGGERS or\n"
            "DIAL9_DUMPS=1; only its own user, or root, may ask. RUN_DIR: its run directory (the\n"
            "process id is in its name, as dial9 run prints it).\n"
            "\n"
            "  --lookback SECS      default: the process's DIAL9_DUMP_LOOKBACK_SECS (30)\n"
            "  --lookforward SECS   default: the process's DIAL9_DUMP_LOOKFORWARD_SECS (5)\n"
            "  --reason TEXT        written in the manifest (default \"dial9 trigger\")\n"
            "  -h, --help\n"
            "\n"
            "Exit status: 0 the dump is written, 1 no such recorder, refused or failed, 2 usage error.\n");
}

/* A process id, or the one in a run directory's name ({time}-{pid}-{random}). 0: none. */
static pid_t target_pid(const char *arg) {
    char *end;
    long v = strtol(arg, &end, 10);
    if (*arg && !*end) return v > 0 ? (pid_t)v : 0;
    size_t n = strlen(arg);
    while (n > 1 && arg[n - 1] == '/') n--;
    const char *base = arg + n;
    while (base > arg && base[-1] != '/') base--;
    const char *dash = memchr(base, '-', (size_t)(arg + n - base));
    if (!dash) return 0;
    v = strtol(dash + 1, &end, 10);
    return v > 0 && *end == '-' ? (pid_t)v : 0;
}

/* Seconds (a whole number) as the milliseconds the protocol carries, or -1. */
static long secs_arg(const char *s) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    return !*s || *end || errno || v < 0 || v > 86400 ? -1 : v * 1000;
}

int d9_cmd_trigger(int argc, char **argv) {
    static const struct option opts[] = {{"lookback", required_argument, NULL, 'b'},
                                         {"lookforward", required_argument, NULL, 'f'},
                                         {"reason", required_argument, NULL, 'r'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    long lookback = -1, lookforward = -1;
    const char *reason = "dial9 trigger";
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'b':
        case 'f': {
            long v = secs_arg(optarg);
            if (v < 0) {
                fprintf(stderr, "dial9 trigger: --%s '%s': expected whole seconds from 0 to 86400\n",
                        c == 'b' ? "lookback" : "lookforward", optarg);
                return D9_EXIT_USAGE;
            }
            *(c == 'b' ? &lookback : &lookforward) = v;
            break;
        }
        case 'r':
            reason = optarg;
            break;
        case 'h':
            trigger_usage(stdout);
            return D9_EXIT_OK;
        default:
            trigger_usage(stderr);
            return D9_EXIT_USAGE;
        }
    }
    if (argc - optind != 1) {
        trigger_usage(stderr);
        return D9_EXIT_USAGE;
    }
    pid_t pid = target_pid(argv[optind]);
    if (!pid) {
        fprintf(stderr, "dial9 trigger: '%s' is neither a process id nor a run directory ({time}-{pid}-{id})\n",
                argv[optind]);
        return D9_EXIT_USAGE;
    }
    for (const char *p = reason; *p; p++)
        if (*p == '\n' || *p == '\r') {
            fprintf(stderr, "dial9 trigger: --reason must be one line\n");
            return D9_EXIT_USAGE;
        }
    if (kill(pid, 0) != 0 && errno == ESRCH) { /* a run directory of an ended run, a typo */
        fprintf(stderr, "dial9 trigger: no process %d is running%s\n", (int)pid,
                strspn(argv[optind], "0123456789") == strlen(argv[optind])
                    ? ""
                    : " (the pid of that run directory's name: the run has ended)");
        return D9_EXIT_DATA;
    }
    struct sockaddr_un addr;
    socklen_t len;
    d9_control_address(pid, &addr, &len);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&addr, len) != 0) {
        fprintf(stderr, "dial9 trigger: process %d has no flight recorder to ask (%s): it must record with "
                        "DIAL9_MODE=memory, DIAL9_TRIGGERS or DIAL9_DUMPS=1, in this network namespace\n",
                (int)pid, strerror(errno));
        if (fd >= 0) close(fd);
        return D9_EXIT_DATA;
    }
    char req[600], lb[24], lf[24];
    snprintf(lb, sizeof lb, lookback < 0 ? "-" : "%ld", lookback);
    snprintf(lf, sizeof lf, lookforward < 0 ? "-" : "%ld", lookforward);
    int n = snprintf(req, sizeof req, "dump %s %s %.500s\n", lb, lf, reason);
    /* a refusal may come (and the socket close) before the request is sent: read it anyway */
    int send_errno = send(fd, req, (size_t)n, MSG_NOSIGNAL) == n ? 0 : errno;
    /* The reply comes once the look-forward has passed and the manifest is written. */
    char reply[4200];
    size_t used = 0;
    while (used + 1 < sizeof reply) {
        ssize_t r = recv(fd, reply + used, sizeof reply - 1 - used, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        used += (size_t)r;
        if (memchr(reply, '\n', used)) break;
    }
    close(fd);
    reply[used] = 0;
    char *nl = strchr(reply, '\n');
    if (nl) *nl = 0;
    if (!strncmp(reply, "ok ", 3)) {
        printf("%s\n", reply + 3);
        return D9_EXIT_OK;
    }
    fprintf(stderr, "dial9 trigger: process %d: %s%s%s\n", (int)pid,
            !strncmp(reply, "error ", 6) ? reply + 6 : "no answer (it stopped recording or exited)",
            send_errno && strncmp(reply, "error ", 6) ? ": " : "", send_errno && strncmp(reply, "error ", 6) ? strerror(send_errno) : "");
    return D9_EXIT_DATA;
}
