/* `dial9 run [options] -- CMD ARGS...`: record an unmodified program. Sets LD_PRELOAD to the
 * zero-code shim (libdial9-preload.so; with heap profiling on, its heap library
 * libdial9-preload-heap.so too) and the DIAL9_* variables from the options, runs the
 * command as a child, waits for it, says where its trace is with a one-line summary (on
 * stderr, so the program's stdout stays its own), and exits with the program's status (a
 * program killed by signal N gives 128+N, like a shell). `--exec`, and `-q` (no summary:
 * nothing left for dial9 to do after the program), replace dial9 with the program instead:
 * nothing between the program and its parent, and a process fewer to start and end (0.3-0.5 ms
 * of a short program's start here). */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "dial9/dial9.h"
#include "format/trace_paths.h"
#include "cli/trace_reader.h"
#include "core/unknown_variables.h"
#include "common/u64_set.h"
#include "core/flight_config.h"
#include "sinks/trace_dir.h"

#ifndef D9_INSTALL_LIBDIR
#define D9_INSTALL_LIBDIR "lib"
#endif
#define PRELOAD_NAME "libdial9-preload.so"
#define DEFAULT_TRACE_DIR "/tmp/dial9-traces" /* the recorder's default (d9_config_init) */

static void run_usage(FILE *out) {
    fprintf(out,
            "usage: dial9 run [OPTIONS] [--] CMD [ARGS...]\n"
            "\n"
            "Record an unmodified program: CMD runs with libdial9-preload.so in LD_PRELOAD,\n"
            "which records every libuv, libevent and libev loop (per-callback polls, spawns,\n"
            "wakes), parks in epoll_wait/poll/select of any other loop, and CPU and off-CPU\n"
            "samples of every thread. Then prints where the trace is and a one-line summary\n"
            "on stderr. The exit status is the program's (128+N when killed by signal N).\n"
            "\n"
            "  -d, --trace-dir DIR   where runs go (DIAL9_TRACE_DIR; default %s)\n"
            "  -s, --service NAME    service name in the metadata (DIAL9_SERVICE)\n"
            "  -c, --cpu-profile     CPU samples of every thread (DIAL9_CPU_PROFILE_ENABLED=1)\n"
            "  -m, --memory-profile  sampled allocations and their frees (DIAL9_MEMORY_PROFILE_ENABLED=1:\n"
            "                        also preloads libdial9-preload-heap.so, which interposes malloc;\n"
            "                        without it the program's allocator is left alone)\n"
            "      --children        trace child processes too, each its own run\n"
            "                        (DIAL9_TRACE_CHILDREN=1; default: only CMD itself)\n"
            "  -e VAR=VALUE          set any variable for the program (repeatable), e.g.\n"
            "                        -e DIAL9_FLUSH_MS=5 -e DIAL9_MAX_FILE_SIZE_MB=16\n"
            "  -q, --quiet           no summary: dial9 replaces itself with the program\n"
            "      --exec            the same as -q\n"
            "  -h, --help\n"
            "\n"
            "The shim is found in DIAL9_PRELOAD_LIB, else next to the dial9 binary, else in\n"
            "../%s/ or ../lib/ from it; its heap library beside it. SIGINT and SIGQUIT reach the program from the terminal;\n"
            "SIGTERM, SIGHUP, SIGUSR1 and SIGUSR2 sent to dial9 are passed on to it.\n"
            "\n"
            "Exit status: the program's; 127 when CMD cannot be run, 2 on usage errors.\n",
            DEFAULT_TRACE_DIR, D9_INSTALL_LIBDIR);
}

/* ---------------------------------------------------------------- the shim */

static bool readable_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, R_OK) == 0;
}

static bool find_preload(char *out, size_t len) {
    const char *env = getenv("DIAL9_PRELOAD_LIB");
    if (env && *env) {
        if (!readable_file(env) || !realpath(env, out)) {
            fprintf(stderr, "dial9 run: DIAL9_PRELOAD_LIB=%s: not a readable file\n", env);
            return false;
        }
        return true;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return false;
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (slash) *slash = 0;
    char candidates[3][PATH_MAX + 64];
    snprintf(candidates[0], sizeof candidates[0], "%s/" PRELOAD_NAME, exe);
    if (D9_INSTALL_LIBDIR[0] == '/')
        snprintf(candidates[1], sizeof candidates[1], "%s/" PRELOAD_NAME, D9_INSTALL_LIBDIR);
    else
        snprintf(candidates[1], sizeof candidates[1], "%s/../%s/" PRELOAD_NAME, exe, D9_INSTALL_LIBDIR);
    snprintf(candidates[2], sizeof candidates[2], "%s/../lib/" PRELOAD_NAME, exe);
    for (int i = 0; i < 3; i++)
        if (readable_file(candidates[i]) && realpath(candidates[i], out) && strlen(out) < len)
            return true;
    fprintf(stderr, "dial9 run: cannot find " PRELOAD_NAME " next to %s, in ../%s or ../lib "
                    "(set DIAL9_PRELOAD_LIB)\n", exe, D9_INSTALL_LIBDIR);
    return false;
}

/* ---------------------------------------------------------------- environment */

static int set_env(const char *name, const char *value) {
    if (setenv(name, value, 1) != 0) {
        fprintf(stderr, "dial9 run: cannot set %s: %s\n", name, strerror(errno));
        return -1;
    }
    return 0;
}

/* The heap library beside the shim `lib`: its name with "-heap" before ".so"
 * (libdial9-preload-heap.so, as the shim itself derives it: preload_env.c). */
static bool find_heap_library(const char *lib, char *out, size_t len) {
    size_t n = strlen(lib);
    size_t stem = n > 3 && !strcmp(lib + n - 3, ".so") ? n - 3 : n;
    if (snprintf(out, len, "%.*s-heap%s", (int)stem, lib, lib + stem) >= (int)len) return false;
    if (readable_file(out)) return true;
    fprintf(stderr, "dial9 run: heap profiling (DIAL9_MEMORY_PROFILE_ENABLED) needs %s, which is missing\n", out);
    return false;
}

/* Whether the program's recording profiles the heap, as the shim will read its configuration:
 * the heap library is preloaded only then (under zero-code, heap profiling is chosen at launch).
 * A configuration the shim cannot read is its to report. */
static bool heap_profile_wanted(void) {
    d9_config cfg;
    return d9_config_from_env(&cfg) == 0 && cfg.enabled && cfg.memory_profile;
}

/* LD_PRELOAD = the shim, its heap library when given, then whatever was preloaded already. */
static int prepend_preload(const char *lib, const char *heap) {
    const char *old = getenv("LD_PRELOAD");
    char *list = NULL;
    if (asprintf(&list, "%s%s%s%s%s", lib, heap ? ":" : "", heap ? heap : "", old && *old ? ":" : "",
                 old ? old : "") < 0)
        return -1;
    int rc = set_env("LD_PRELOAD", list);
    free(list);
    return rc;
}

/* An absolute form of `dir` (which need not exist yet), of any length (a path too long to
 * use is the recorder's to report, naming the variable: the program runs anyway). */
static char *absolute_dir(const char *dir) {
    char cwd[PATH_MAX], *out = NULL;
    if (dir[0] != '/' && getcwd(cwd, sizeof cwd)) {
        if (asprintf(&out, "%s/%s", cwd, dir) < 0) out = NULL;
        return out;
    }
    return strdup(dir); /* already absolute, or no working directory: as given */
}

/* ---------------------------------------------------------------- runs in the trace dir */

typedef struct name_list {
    char **names;
    size_t count;
} name_list;

static void list_runs(const char *dir, name_list *out) {
    out->names = NULL;
    out->count = 0;
    DIR *d = opendir(dir);
    if (!d) return;
    size_t cap = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.') continue;
        if (out->count == cap) {
            cap = cap ? cap * 2 : 64;
            char **p = realloc(out->names, cap * sizeof *p);
            if (!p) break;
            out->names = p;
        }
        out->names[out->count] = strdup(e->d_name);
        if (out->names[out->count]) out->count++;
    }
    closedir(d);
}

static bool listed(const name_list *l, const char *name) {
    for (size_t i = 0; i < l->count; i++)
        if (!strcmp(l->names[i], name)) return true;
    return false;
}

static void free_names(name_list *l) {
    for (size_t i = 0; i < l->count; i++) free(l->names[i]);
    free(l->names);
}

/* Run ids are "<UTC time>-<pid>-<random>". */
static bool run_of_pid(const char *name, pid_t pid) {
    char tag[32];
    snprintf(tag, sizeof tag, "-%d-", (int)pid);
    return strstr(name, tag) != NULL;
}

/* ---------------------------------------------------------------- the summary */

typedef struct summary {
    uint64_t events, polls, parks, wakes, spawns, samples, dropped;
    d9_u64_set workers;
} summary;

static int count_event(void *ctx, const d9_event *ev, d9_decoder *dec, size_t file_index) {
    (void)dec;
    (void)file_index;
    summary *s = ctx;
    uint8_t role = ev->schema->bind.role;
    const int16_t *f = ev->schema->bind.field;
    s->events++;
    uint64_t v;
    switch (role) {
    case D9_SCH_POLL_START: s->polls++; break;
    case D9_SCH_WORKER_PARK: s->parks++; break;
    case D9_SCH_WAKE: s->wakes++; break;
    case D9_SCH_TASK_SPAWN: s->spawns++; break;
    case D9_SCH_CPU_SAMPLE: s->samples++; break;
    case D9_SCH_DROPPED_EVENTS:
        if (f[D9_KF_COUNT_FIELD] >= 0 && d9_value_uint(&ev->values[f[D9_KF_COUNT_FIELD]], &v)) s->dropped += v;
        break;
    default: break;
    }
    /* workers that park or poll (one that began before the recorder ran has no
     * WorkerRegisteredEvent); 254 and 255 are "blocking pool" and "not a worker" */
    if ((role == D9_SCH_WORKER_PARK || role == D9_SCH_POLL_START) && f[D9_KF_WORKER_ID] >= 0 &&
        d9_value_uint(&ev->values[f[D9_KF_WORKER_ID]], &v) && v < 254)
        (void)d9_u64_set_add(&s->workers, v);
    return 0;
}

static uint64_t bytes_of(const d9_path_list *paths) {
    uint64_t total = 0;
    struct stat st;
    for (size_t i = 0; i < paths->count; i++)
        if (stat(paths->paths[i], &st) == 0) total += (uint64_t)st.st_size;
    return total;
}

static void print_summary(const char *run_dir) {
    d9_path_list paths = {0};
    char err[512];
    char *arg = (char *)run_dir;
    if (d9_expand_paths(1, &arg, &paths, err, sizeof err) != 0) {
        fprintf(stderr, "dial9 run: trace in %s: %s\n", run_dir, err);
        return;
    }
    summary s;
    memset(&s, 0, sizeof s);
    d9_file_result *results = calloc(paths.count, sizeof *results);
    if (!results) {
        d9_path_list_free(&paths);
        return;
    }
    int rc = d9_read_trace_files(&paths, count_event, &s, results);
    uint64_t bytes = bytes_of(&paths);
    fprintf(stderr,
            "dial9 run: trace in %s (%zu file%s, %.1f KiB): %" PRIu64 " events, %" PRIu64
            " polls, %" PRIu64 " parks, %" PRIu64 " wakes, %" PRIu64 " spawns, %" PRIu64
            " CPU/off-CPU samples, %zu worker%s, %" PRIu64 " dropped%s\n",
            run_dir, paths.count, paths.count == 1 ? "" : "s", (double)bytes / 1024.0, s.events,
            s.polls, s.parks, s.wakes, s.spawns, s.samples, d9_u64_set_count(&s.workers),
            d9_u64_set_count(&s.workers) == 1 ? "" : "s", s.dropped,
            rc == D9_EXIT_OK ? "" : " (a file did not decode: see dial9 stats)");
    d9_u64_set_free(&s.workers);
    free(results);
    d9_path_list_free(&paths);
}

/* ---------------------------------------------------------------- no trace: why */

/* Whether the trace directory can hold a run; if not, why, into `why`. */
static bool dir_usable(const char *dir, char *why, size_t len) {
    /* as the recorder does: made if missing, and refused when another user could redirect it */
    int dfd = d9_trace_dir_open(dir, true, why, len);
    if (dfd < 0) return false;
    close(dfd);
    size_t n = strlen(dir) + 32;
    char *probe = malloc(n);
    if (!probe) return true;
    snprintf(probe, n, "%s/.dial9-run-XXXXXX", dir);
    int fd = mkstemp(probe);
    bool ok = fd >= 0;
    if (!ok) snprintf(why, len, "cannot create a file in it: %s", strerror(errno));
    else {
        /* an empty file needs no block: a full disk shows only when a byte is written */
        if (write(fd, "", 1) != 1 || fsync(fd) != 0) {
            snprintf(why, len, "cannot write a file in it: %s", strerror(errno));
            ok = false;
        }
        close(fd);
        unlink(probe);
    }
    free(probe);
    return ok;
}

/* The program's file, found as execvp would. */
static bool find_program(const char *name, char *out, size_t len) {
    if (strchr(name, '/')) return snprintf(out, len, "%s", name) < (int)len && access(out, X_OK) == 0;
    const char *path = getenv("PATH");
    for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
        size_t n = strcspn(p, ":");
        if (snprintf(out, len, "%.*s/%s", (int)n, p, name) < (int)len && access(out, X_OK) == 0)
            return true;
        p += n;
        if (*p) p++;
    }
    return false;
}

/* Why LD_PRELOAD cannot apply to the program file, or NULL. */
static const char *preload_cannot_apply(const char *name) {
    char path[PATH_MAX];
    struct stat st;
    if (!find_program(name, path, sizeof path) || stat(path, &st) != 0) return NULL;
    /* the loader runs it in secure mode (no LD_PRELOAD) when it changes the ids */
    if (((st.st_mode & S_ISUID) && st.st_uid != geteuid()) ||
        ((st.st_mode & S_ISGID) && st.st_gid != getegid()))
        return "it is setuid or setgid: the loader ignores LD_PRELOAD there";
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    Elf64_Ehdr eh;
    const char *why = NULL;
    if (pread(fd, &eh, sizeof eh, 0) == (ssize_t)sizeof eh && !memcmp(eh.e_ident, ELFMAG, SELFMAG) &&
        eh.e_ident[EI_CLASS] == ELFCLASS64 && eh.e_phentsize == sizeof(Elf64_Phdr)) {
        bool interp = false;
        for (unsigned i = 0; i < eh.e_phnum && !interp; i++) {
            Elf64_Phdr ph;
            if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + i * sizeof ph)) != (ssize_t)sizeof ph) break;
            interp = ph.p_type == PT_INTERP;
        }
        if (!interp) why = "it is statically linked: no dynamic loader, so no LD_PRELOAD";
    }
    close(fd);
    return why;
}

/* Memory mode writes nothing to the trace directory, only dumps: say where this run's are. */
static void explain_memory_mode(const char *trace_dir, pid_t pid) {
    char dumps[PATH_MAX];
    (void)d9_flight_dump_dir(trace_dir, dumps, sizeof dumps);
    name_list l;
    list_runs(dumps, &l);
    size_t n = 0;
    for (size_t i = 0; i < l.count; i++) n += run_of_pid(l.names[i], pid);
    free_names(&l);
    fprintf(stderr, "dial9 run: no trace in %s: DIAL9_MODE=memory keeps the recording in memory and "
                    "writes only dumps: %zu of this run in %s (dial9 dumps %s)\n",
            trace_dir, n, dumps, dumps);
}

/* The program left no run: say why, from what can be checked here (the configuration the
 * shim read, the trace directory, the program file), never "see above" when nothing is. */
static void explain_no_trace(const char *trace_dir, pid_t pid, const char *program) {
    d9_config cfg;
    char why[512];
    const char *mode = getenv("DIAL9_MODE");
    if (d9_config_from_env(&cfg) != 0) {
        fprintf(stderr, "dial9 run: no trace: recording disabled: %s\n", d9_last_error());
    } else if (!cfg.enabled) {
        fprintf(stderr, "dial9 run: no trace: recording disabled (DIAL9_ENABLED=%s)\n",
                getenv("DIAL9_ENABLED"));
    } else if (mode && !strcmp(mode, "memory")) {
        explain_memory_mode(trace_dir, pid);
    } else if (!dir_usable(trace_dir, why, sizeof why)) {
        /* "trace directory DIR: " would name DIR a second time */
        const char *detail = why;
        size_t n = strlen(trace_dir);
        if (!strncmp(why, "trace directory ", 16) && !strncmp(why + 16, trace_dir, n) && !strncmp(why + 16 + n, ": ", 2))
            detail = why + 16 + n + 2;
        fprintf(stderr, "dial9 run: no trace: DIAL9_TRACE_DIR=%.200s%s: %s\n", trace_dir,
                strlen(trace_dir) > 200 ? "..." : "", detail);
    } else if (preload_cannot_apply(program)) {
        fprintf(stderr, "dial9 run: no trace: %s: %s\n", program, preload_cannot_apply(program));
    } else {
        fprintf(stderr, "dial9 run: no trace in %s: the recorder had not started when the "
                        "program ended (it starts on a thread of its own within milliseconds; a "
                        "program that ends sooner with _exit, as dash does, leaves no run)\n",
                trace_dir);
    }
}

static void report_runs(const char *trace_dir, const name_list *before, pid_t pid,
                        const char *program) {
    name_list after;
    list_runs(trace_dir, &after);
    const char *main_run = NULL;
    size_t others = 0;
    for (size_t i = 0; i < after.count; i++) {
        if (listed(before, after.names[i])) continue;
        if (!main_run && run_of_pid(after.names[i], pid)) main_run = after.names[i];
        else others++;
    }
    if (main_run) {
        char path[PATH_MAX + 256];
        if (snprintf(path, sizeof path, "%s/%s", trace_dir, main_run) < (int)sizeof path)
            print_summary(path);
    } else {
        explain_no_trace(trace_dir, pid, program);
    }
    if (others)
        fprintf(stderr, "dial9 run: %zu more run%s from child processes in %s\n", others,
                others == 1 ? "" : "s", trace_dir);
    free_names(&after);
}

/* ---------------------------------------------------------------- running the program */

static volatile pid_t g_child;

static void forward_signal(int sig) {
    if (g_child > 0) kill(g_child, sig);
}

static const int k_forwarded[] = {SIGTERM, SIGHUP, SIGUSR1, SIGUSR2};

static int exit_status_of(int st) {
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
    return 1;
}

/* Runs the program in this process; when it cannot, says why, writes errno to `report_fd`
 * (when >= 0) and exits 127 (not found) or 126, as a shell does. */
static void exec_program(char **argv, int report_fd) {
    execvp(argv[0], argv);
    int e = errno;
    fprintf(stderr, "dial9 run: %s: %s\n", argv[0], strerror(e));
    if (report_fd >= 0) (void)!write(report_fd, &e, sizeof e);
    _exit(e == ENOENT ? 127 : 126);
}

/* The program as a child: posix_spawnp (a vfork, no copy of dial9's page tables, which a
 * short program would pay for at every run); fork and execvp for what only execvp does (a
 * script without "#!" runs in /bin/sh) and to say why the program cannot run. *started is
 * false when it never ran (execvp failed: told through a close-on-exec pipe), so no trace is
 * looked for. */
static pid_t spawn_program(char **argv, bool *started) {
    pid_t pid;
    *started = true;
    int rc = posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ);
    if (rc == 0) return pid;
    int report[2];
    if (pipe2(report, O_CLOEXEC) != 0) report[0] = report[1] = -1;
    fflush(NULL);
    pid = fork();
    if (pid == 0) exec_program(argv, report[1]);
    if (report[1] >= 0) close(report[1]);
    if (report[0] >= 0) {
        int e;
        ssize_t n;
        while ((n = read(report[0], &e, sizeof e)) < 0 && errno == EINTR) {}
        *started = n != (ssize_t)sizeof e; /* nothing written: the exec succeeded */
        close(report[0]);
    }
    return pid;
}

static int run_and_wait(char **argv, const char *trace_dir) {
    name_list before = {0};
    list_runs(trace_dir, &before);
    fflush(NULL);
    bool started;
    pid_t pid = spawn_program(argv, &started);
    if (pid < 0) {
        fprintf(stderr, "dial9 run: fork: %s\n", strerror(errno));
        free_names(&before);
        return 1;
    }

    g_child = pid;
    /* like a shell with a foreground job: the terminal's SIGINT / SIGQUIT go to the whole
     * process group, so the program has them already; what is sent to dial9 alone is
     * passed on */
    signal(SIGINT, SIG_IGN);
    signal(SIGQUIT, SIG_IGN);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = forward_signal;
    sa.sa_flags = SA_RESTART;
    for (size_t i = 0; i < sizeof k_forwarded / sizeof k_forwarded[0]; i++)
        sigaction(k_forwarded[i], &sa, NULL);

    int st = 0;
    while (waitpid(pid, &st, 0) < 0) {
        if (errno != EINTR) {
            fprintf(stderr, "dial9 run: waitpid: %s\n", strerror(errno));
            free_names(&before);
            return 1;
        }
    }
    if (started) report_runs(trace_dir, &before, pid, argv[0]);
    free_names(&before);
    return exit_status_of(st);
}

int d9_cmd_run(int argc, char **argv) {
    enum { OPT_CHILDREN = 1000, OPT_EXEC };
    static const struct option opts[] = {
        {"trace-dir", required_argument, NULL, 'd'}, {"service", required_argument, NULL, 's'},
        {"cpu-profile", no_argument, NULL, 'c'},     {"children", no_argument, NULL, OPT_CHILDREN},
        {"memory-profile", no_argument, NULL, 'm'},
        {"quiet", no_argument, NULL, 'q'},           {"exec", no_argument, NULL, OPT_EXEC},
        {"help", no_argument, NULL, 'h'},            {NULL, 0, NULL, 0},
    };
    const char *trace_dir = NULL, *service = NULL;
    bool cpu = false, memory = false, children = false, exec_mode = false;
    int ch;
    /* "+": options end at the command's name, so its own options are left alone */
    while ((ch = getopt_long(argc, argv, "+:d:s:cme:qh", opts, NULL)) != -1) {
        switch (ch) {
        case 'd': trace_dir = optarg; break;
        case 's': service = optarg; break;
        case 'c': cpu = true; break;
        case 'm': memory = true; break;
        case OPT_CHILDREN: children = true; break;
        case 'q': /* no summary: nothing left to do after the program */
        case OPT_EXEC: exec_mode = true; break;
        case 'e': {
            const char *eq = strchr(optarg, '=');
            if (!eq || eq == optarg) {
                fprintf(stderr, "dial9 run: -e %s: expected VAR=VALUE\n", optarg);
                return D9_EXIT_USAGE;
            }
            char name[256];
            snprintf(name, sizeof name, "%.*s", (int)(eq - optarg), optarg);
            if (set_env(name, eq + 1) != 0) return D9_EXIT_USAGE;
            break;
        }
        case 'h': run_usage(stdout); return D9_EXIT_OK;
        case ':':
            fprintf(stderr, "dial9 run: option %s needs a value\n", argv[optind - 1]);
            return D9_EXIT_USAGE;
        default:
            fprintf(stderr, "dial9 run: unknown option %s (see dial9 run --help)\n", argv[optind - 1]);
            return D9_EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        run_usage(stderr);
        return D9_EXIT_USAGE;
    }
    char **cmd = argv + optind;

    char lib[PATH_MAX];
    if (!find_preload(lib, sizeof lib)) return D9_EXIT_USAGE;

    char *dir = NULL;
    if (!trace_dir) trace_dir = getenv("DIAL9_TRACE_DIR");
    if (trace_dir && *trace_dir) {
        dir = absolute_dir(trace_dir);
        if (!dir || set_env("DIAL9_TRACE_DIR", dir) != 0) return D9_EXIT_USAGE;
    } else {
        dir = strdup(DEFAULT_TRACE_DIR);
        if (!dir) return D9_EXIT_USAGE;
    }
    if ((service && set_env("DIAL9_SERVICE", service) != 0) ||
        (cpu && set_env("DIAL9_CPU_PROFILE_ENABLED", "1") != 0) ||
        (memory && set_env("DIAL9_MEMORY_PROFILE_ENABLED", "1") != 0) ||
        (children && set_env("DIAL9_TRACE_CHILDREN", "1") != 0) ||
        set_env(D9_VARIABLES_NAMED, "1") != 0) /* named below: the recorder does not say them again */
        return D9_EXIT_USAGE;
    char heap[PATH_MAX + 8];
    bool with_heap = heap_profile_wanted();
    if ((with_heap && !find_heap_library(lib, heap, sizeof heap)) || prepend_preload(lib, with_heap ? heap : NULL) != 0)
        return D9_EXIT_USAGE;

    (void)d9_warn_unknown_variables("dial9 run"); /* a typo is said, not ignored in silence */
    if (exec_mode) exec_program(cmd, -1);
    int rc = run_and_wait(cmd, dir);
    free(dir);
    return rc;
}
