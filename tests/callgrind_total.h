/* Instruction counts of a whole command under callgrind, for the tests that bound what a CLI
 * command costs (test_fold_instructions, test_analyze_span_instructions): the command runs with
 * its output in OUT.log (shown on failure), and its total comes from callgrind's summary. */
#ifndef D9_TESTS_CALLGRIND_TOTAL_H
#define D9_TESTS_CALLGRIND_TOTAL_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

/* Under a sanitizer the counts mean nothing (and valgrind cannot run it): the tests skip. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define D9T_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define D9T_SANITIZED 1
#endif
#endif

/* system(cmd)'s exit status; -1 when it did not exit */
static inline int d9t_run(const char *cmd) {
    int st = system(cmd);
    return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* callgrind's total for `valgrind --tool=callgrind --callgrind-out-file=OUT OPTIONS COMMAND`
 * (OPTIONS: e.g. "--toggle-collect=f", or ""); -1 on failure, with the command's log. */
static inline long long d9t_callgrind_total(const char *out, const char *options, const char *command) {
    char cmd[8192];
    if (snprintf(cmd, sizeof cmd, "valgrind --tool=callgrind --callgrind-out-file='%s' %s %s >'%s.log' 2>&1",
                 out, options, command, out) >= (int)sizeof cmd)
        return -1; /* paths too long for the test's buffer */
    if (d9t_run(cmd) != 0) {
        fprintf(stderr, "FAIL: %s\n", cmd);
        snprintf(cmd, sizeof cmd, "cat '%s.log' >&2", out);
        (void)d9t_run(cmd);
        return -1;
    }
    FILE *f = fopen(out, "r");
    if (!f) return -1;
    char line[512];
    long long total = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "summary: %lld", &total) == 1 || sscanf(line, "totals: %lld", &total) == 1) break;
    fclose(f);
    return total;
}

#endif
