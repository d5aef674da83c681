/* The system calls a park/unpark pair costs the recorded thread, counted (not timed) with
 * strace on this program itself: the difference of two runs of 1 000 and 11 000 pairs on one
 * thread, so what d9_start and d9_stop cost cancels. With schedstat off, what remains is the
 * thread CPU time's read. From the task-clock page (DIAL9_THREAD_CPU=auto where the kernel
 * gives the event, core/thread_cpu_clock.h): none per pair in every mode, but a read() of the
 * event at a park after the thread was switched out, which a loop without system calls sees
 * only when preempted (its own count of them, and of its switches, taken off: each is a read()
 * and an fstat; what is left must be nothing per pair). By system call
 * (DIAL9_THREAD_CPU=syscall: clock_gettime, no vDSO path, core/thread_cpu_time.h):
 *   park (the default): one per pair (the park's; its unpark carries that value)
 *   every: two per pair      off: none
 * The recorder's timestamp clock is not counted: clock_gettime(CLOCK_MONOTONIC) is a vDSO read
 * wherever the clocksource allows it, and the mode does not change it. strace follows only the
 * main thread (no -f): the collector's own calls, which vary with timing, are not seen.
 * Skips, saying so, where strace is missing or may not trace. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "core/thread_cpu_clock.h"
#include "dial9/dial9.h"
#include "trace_files_util.h"

#define FEW 1000
#define MANY 11000

static const char *const mode_names[] = {"park", "every", "off"};

/* The traced child: `pairs` park/unpark pairs on this thread under `mode`. */
static int run_pairs(long pairs, int mode, const char *source) {
    setenv("DIAL9_THREAD_CPU", source, 1);
    char *dir = d9t_mkdtemp("parksys");
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    cfg.schedstat = false; /* its pread is due by time: a count that would vary */
    cfg.schedule_profile = false;
    cfg.task_dumps = false;
    cfg.symbolize = false;
    cfg.thread_cpu_time = (d9_thread_cpu_time_mode)mode;
    if (d9_start(&cfg) != 0) return 2;
    d9_worker_begin("parksys", 0);
    struct rusage r0, r1;
    getrusage(RUSAGE_THREAD, &r0);
    uint32_t exact0 = d9__tls_cpu_clock.exact_reads;
    for (long i = 0; i < pairs; i++) {
        d9_park();
        d9_unpark();
    }
    uint32_t exact = d9__tls_cpu_clock.exact_reads - exact0;
    getrusage(RUSAGE_THREAD, &r1);
    d9_worker_end();
    d9_stop();
    /* the page's exact reads in the loop, and the thread's switches there (each may cause one) */
    const char *report = getenv("D9T_PARKSYS_REPORT");
    FILE *f = report ? fopen(report, "w") : NULL;
    if (f) {
        fprintf(f, "%u %ld\n", exact, (r1.ru_nvcsw + r1.ru_nivcsw) - (r0.ru_nvcsw + r0.ru_nivcsw));
        fclose(f);
    }
    d9t_rm_rf(dir);
    free(dir);
    return 0;
}

typedef struct counted {
    long calls;       /* every system call of the main thread but the timestamp clock's */
    long cpu_clock;   /* ... of which clock_gettime(CLOCK_THREAD_CPUTIME_ID) or read() (the event's) */
    long monotonic;   /* clock_gettime(CLOCK_MONOTONIC*), not in calls */
    long exact;       /* the page's exact reads in the loop (the child's own count) */
    long switches;    /* the thread's context switches in the loop */
} counted;

/* Runs this program's child mode under strace; false if strace could not run it. */
static bool count_under_strace(const char *self, long pairs, int mode, const char *source, counted *c) {
    char out[4096], arg_pairs[32], arg_mode[8];
    char *dir = d9t_mkdtemp("parksys-strace");
    snprintf(out, sizeof out, "%s/strace.txt", dir);
    snprintf(arg_pairs, sizeof arg_pairs, "%ld", pairs);
    snprintf(arg_mode, sizeof arg_mode, "%d", mode);
    pid_t pid = fork();
    if (pid == 0) {
        /* LeakSanitizer cannot run under ptrace: the child's exit would fail (ASan builds) */
        const char *asan = getenv("ASAN_OPTIONS");
        char opts[1024];
        snprintf(opts, sizeof opts, "%s%sdetect_leaks=0", asan ? asan : "", asan && *asan ? ":" : "");
        setenv("ASAN_OPTIONS", opts, 1);
        char report[4200];
        snprintf(report, sizeof report, "%s.report", out);
        setenv("D9T_PARKSYS_REPORT", report, 1);
        execlp("strace", "strace", "-o", out, "--", self, "child", arg_pairs, arg_mode, source, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    bool ok = pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    memset(c, 0, sizeof *c);
    FILE *f = ok ? fopen(out, "r") : NULL;
    if (f) {
        char line[8192];
        while (fgets(line, sizeof line, f)) {
            if (!strncmp(line, "+++", 3) || !strncmp(line, "---", 3)) continue; /* exit, signals */
            if (!strncmp(line, "clock_gettime(CLOCK_MONOTONIC", 29)) {
                c->monotonic++;
                continue;
            }
            c->calls++;
            c->cpu_clock += !strncmp(line, "clock_gettime(CLOCK_THREAD_CPUTIME_ID", 37) || !strncmp(line, "read(", 5);
        }
        fclose(f);
        char report[4200];
        snprintf(report, sizeof report, "%s.report", out);
        FILE *r = fopen(report, "r");
        ok = r && fscanf(r, "%ld %ld", &c->exact, &c->switches) == 2;
        if (r) fclose(r);
    } else {
        ok = false;
    }
    d9t_rm_rf(dir);
    free(dir);
    return ok;
}

int main(int argc, char **argv) {
    if (argc == 5 && !strcmp(argv[1], "child")) return run_pairs(atol(argv[2]), atoi(argv[3]), argv[4]);
    char self[4096]; /* this program's path: /proc/self/exe would be strace's in strace */
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        printf("test_recorder_park_syscalls: cannot read /proc/self/exe\n");
        return 1;
    }
    self[n] = 0;
    counted probe;
    if (!count_under_strace(self, 1, 0, "syscall", &probe) || probe.calls == 0) {
        printf("test_recorder_park_syscalls: skipped: strace is missing or may not trace here\n");
        return 0;
    }
    /* what does not cancel between the two runs (ring growth, d9_stop's wait) is a few calls
     * over 10 000 pairs */
    const double low[] = {0.95, 1.95, -0.05}, high[] = {1.05, 2.05, 0.05};
    bool page = d9_thread_cpu_clock_start(D9_THREAD_CPU_AUTO, true, false) == 0 &&
                __atomic_load_n(&d9_thread_cpu_clock_gen, __ATOMIC_RELAXED) != 0;
    if (!page) printf("the task-clock page: not here (%s): auto is the system call\n", d9_thread_cpu_clock_reason());
    d9_thread_cpu_clock_stop();
    const char *const sources[] = {"syscall", "auto"};
    for (int si = 0; si < 2; si++) {
        for (int mode = 0; mode < 3; mode++) {
            counted few, many;
            CHECK(count_under_strace(self, FEW, mode, sources[si], &few));
            CHECK(count_under_strace(self, MANY, mode, sources[si], &many));
            double per_pair = (double)(many.calls - few.calls) / (MANY - FEW);
            double cpu_per_pair = (double)(many.cpu_clock - few.cpu_clock) / (MANY - FEW);
            printf("%s, %s: %.3f system calls per park/unpark pair (%.3f of them the thread's CPU clock; "
                   "CLOCK_MONOTONIC, not counted: %.3f)\n",
                   sources[si], mode_names[mode], per_pair, cpu_per_pair,
                   (double)(many.monotonic - few.monotonic) / (MANY - FEW));
            if (si == 1 && page) {
                /* each exact read (at a park after a switch: preemptions, timing) is a read()
                 * and the fstat that checks the fd first (no shim here): taken off; what is
                 * left must be nothing per pair, and no run reads more often than it switched */
                double rest = (double)(many.calls - few.calls - 2 * (many.exact - few.exact)) / (MANY - FEW);
                printf("    exact reads %ld and %ld, switches in the loop %ld and %ld; without the reads: %.3f "
                       "per pair\n",
                       few.exact, many.exact, few.switches, many.switches, rest);
                CHECK(rest >= -0.05 && rest <= 0.05);
                CHECK(few.exact <= few.switches && many.exact <= many.switches);
            } else {
                CHECK(per_pair >= low[mode] && per_pair <= high[mode]);
            }
        }
    }
    return d9t_summary("test_recorder_park_syscalls");
}
