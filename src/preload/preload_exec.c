/* exec without fork: the same process goes on as another program, so it stays traced even
 * when children are not. The constructor took the shim out of LD_PRELOAD (so that fork+exec,
 * system(), popen() and posix_spawn children are not traced by default); an exec by the
 * process that loaded the shim puts it back into the environment it passes, with the
 * DIAL9_* variables the run started with. Wrappers such as env, nice, timeout's own exec or
 * `sh -c 'exec prog'` thus hand the recording on to the program they start.
 *
 * The run of the image that execs is finished first (an exec discards the recorder without
 * any exit handler). A run that recorded no hook event at all (a wrapper that only execs) is
 * removed, so it leaves no empty run behind. If the exec fails, a new run starts.
 *
 * Any other exec (in a forked or vforked child, or with recording off) gets an environment
 * without the shim unless children are traced, even one given explicitly that names it. */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "preload.h"

extern char **environ;

static pid_t g_loaded_pid;
static char *g_preload_entry; /* "LD_PRELOAD=<shim>[:<heap library>]" as the run was given them */
static char **g_dial9_vars;   /* "DIAL9_...=..." at start */
static size_t g_dial9_count;

void d9p_exec_remember(void) {
    g_loaded_pid = getpid();
    d9p_env_know_self();
    const char *list = getenv("LD_PRELOAD");
    /* the shim's entries as given (paths, or bare names found through the library path): its
     * own and its heap library's when heap profiling was chosen at launch */
    char *given = list ? malloc(strlen(list) + 1) : NULL;
    Dl_info info;
    if (given && d9p_env_pick_entries(list, true, given) > 0) {
        if (asprintf(&g_preload_entry, "LD_PRELOAD=%s", given) < 0) g_preload_entry = NULL;
    } else if (dladdr((void *)d9p_exec_remember, &info) && info.dli_fname) {
        if (asprintf(&g_preload_entry, "LD_PRELOAD=%s", info.dli_fname) < 0) g_preload_entry = NULL;
    }
    free(given);
    for (char **e = environ; e && *e; e++)
        if (!strncmp(*e, "DIAL9_", 6)) g_dial9_count++;
    g_dial9_vars = calloc(g_dial9_count + 1, sizeof *g_dial9_vars);
    size_t i = 0;
    for (char **e = environ; g_dial9_vars && e && *e && i < g_dial9_count; e++)
        if (!strncmp(*e, "DIAL9_", 6)) g_dial9_vars[i++] = strdup(*e);
    if (g_dial9_vars) g_dial9_count = i;
}

static bool hands_on(void) {
    if (!g_preload_entry || getpid() != g_loaded_pid) return false;
    /* An exec right after the start: the run must be complete first. That takes ms, but
     * seconds on an overloaded machine (over 2 s seen: the recording was not handed on and
     * an empty run stayed behind). The bound only matters when the start cannot finish (an
     * exec from a thread holding the loader lock); the recording is handed on then too. */
    if (!d9p_start_wait(30000)) return true;
    return atomic_load_explicit(&d9p_recording, memory_order_relaxed);
}

static bool has_var(char *const *env, const char *assignment) {
    size_t n = strcspn(assignment, "=") + 1;
    for (; env && *env; env++)
        if (!strncmp(*env, assignment, n)) return true;
    return false;
}

/* envp with the shim first in LD_PRELOAD and the run's DIAL9_* variables where envp has none.
 * The strings are leaked on success (the image is gone); freed by the caller otherwise. */
typedef struct built_env {
    char **env;
    char *preload;
} built_env;

static bool build_env(char *const *envp, built_env *out) {
    size_t n = 0;
    for (char *const *e = envp; e && *e; e++) n++;
    out->env = calloc(n + g_dial9_count + 2, sizeof *out->env);
    out->preload = NULL;
    if (!out->env) return false;
    size_t k = 0;
    const char *shim = g_preload_entry + strlen("LD_PRELOAD=");
    bool placed = false;
    for (char *const *e = envp; e && *e; e++) {
        if (!strncmp(*e, "LD_PRELOAD=", 11) && !placed) {
            const char *rest = *e + 11;
            if (asprintf(&out->preload, "LD_PRELOAD=%s%s%s", shim, *rest ? ":" : "", rest) < 0) {
                free(out->env);
                return false;
            }
            out->env[k++] = out->preload;
            placed = true;
        } else {
            out->env[k++] = *e;
        }
    }
    if (!placed) out->env[k++] = g_preload_entry;
    for (size_t i = 0; i < g_dial9_count; i++)
        if (g_dial9_vars[i] && !has_var(envp, g_dial9_vars[i])) out->env[k++] = g_dial9_vars[i];
    out->env[k] = NULL;
    return true;
}

static void free_env(built_env *b) {
    free(b->preload);
    free(b->env);
}

static void remove_run_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (e->d_name[0] != '.') unlinkat(dirfd(d), e->d_name, 0);
    closedir(d);
    rmdir(dir);
}

/* The image ends here: seal its run (or drop it when nothing was recorded). */
static void finish_run(void) {
    d9_stop();
    d9_stats st;
    d9_get_stats(&st);
    const char *dir = d9_run_dir();
    if (st.events_recorded == 0 && dir) remove_run_dir(dir);
}

/* The exec failed: this image goes on, with a new run. */
static void resume_run(void) {
    int saved = errno;
    d9_config cfg;
    if (d9_config_from_env(&cfg) == 0) {
        d9_start_or_disabled(&cfg);
    }
    errno = saved;
}

#define EXEC_WITH_ENV(envp, call_with_env)                                                 \
    do {                                                                                   \
        built_env b_;                                                                      \
        if (!build_env((envp), &b_)) break;                                                \
        finish_run();                                                                      \
        char **env = b_.env;                                                               \
        int rc_ = (call_with_env);                                                         \
        int e_ = errno;                                                                    \
        free_env(&b_);                                                                     \
        resume_run();                                                                      \
        errno = e_;                                                                        \
        return rc_;                                                                        \
    } while (0)

D9P_EXPORT int execve(const char *path, char *const argv[], char *const envp[]) {
    if (hands_on()) EXEC_WITH_ENV(envp, D9P_NEXT(execve)(path, argv, env));
    D9P_CALL_WITHOUT_SELF(envp, D9P_NEXT(execve)(path, argv, env));
}

D9P_EXPORT int execv(const char *path, char *const argv[]) {
    if (hands_on()) EXEC_WITH_ENV(environ, D9P_NEXT(execve)(path, argv, env));
    D9P_CALL_WITHOUT_SELF(environ, D9P_NEXT(execve)(path, argv, env));
}

D9P_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[]) {
    if (hands_on()) EXEC_WITH_ENV(envp, D9P_NEXT(execvpe)(file, argv, env));
    D9P_CALL_WITHOUT_SELF(envp, D9P_NEXT(execvpe)(file, argv, env));
}

D9P_EXPORT int execvp(const char *file, char *const argv[]) {
    if (hands_on()) EXEC_WITH_ENV(environ, D9P_NEXT(execvpe)(file, argv, env));
    D9P_CALL_WITHOUT_SELF(environ, D9P_NEXT(execvpe)(file, argv, env));
}

D9P_EXPORT int fexecve(int fd, char *const argv[], char *const envp[]) {
    if (hands_on()) EXEC_WITH_ENV(envp, D9P_NEXT(fexecve)(fd, argv, env));
    D9P_CALL_WITHOUT_SELF(envp, D9P_NEXT(fexecve)(fd, argv, env));
}

static int next_execveat(int dirfd, const char *path, char *const argv[], char *const envp[],
                         int flags) {
    __typeof__(&execveat) real = D9P_NEXT(execveat);
    if (!real) { /* a glibc older than 2.34 */
        errno = ENOSYS;
        return -1;
    }
    return real(dirfd, path, argv, envp, flags);
}

D9P_EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[],
                        int flags) {
    if (hands_on()) EXEC_WITH_ENV(envp, next_execveat(dirfd, path, argv, env, flags));
    D9P_CALL_WITHOUT_SELF(envp, next_execveat(dirfd, path, argv, env, flags));
}

/* execl, execle, execlp: the argument list as an array, then the matching call above. */
static char **collect_args(const char *arg0, va_list ap, char ***envp_out) {
    size_t cap = 16, n = 0;
    char **argv = malloc(cap * sizeof *argv);
    if (!argv) return NULL;
    argv[n++] = (char *)arg0;
    for (;;) {
        char *a = arg0 ? va_arg(ap, char *) : NULL;
        if (n == cap) {
            char **p = realloc(argv, (cap *= 2) * sizeof *p);
            if (!p) {
                free(argv);
                return NULL;
            }
            argv = p;
        }
        argv[n++] = a;
        if (!a) break;
    }
    if (envp_out) *envp_out = va_arg(ap, char **);
    return argv;
}

D9P_EXPORT int execl(const char *path, const char *arg, ...) {
    va_list ap;
    va_start(ap, arg);
    char **argv = collect_args(arg, ap, NULL);
    va_end(ap);
    if (!argv) {
        errno = ENOMEM;
        return -1;
    }
    int rc = execv(path, argv);
    free(argv);
    return rc;
}

D9P_EXPORT int execlp(const char *file, const char *arg, ...) {
    va_list ap;
    va_start(ap, arg);
    char **argv = collect_args(arg, ap, NULL);
    va_end(ap);
    if (!argv) {
        errno = ENOMEM;
        return -1;
    }
    int rc = execvp(file, argv);
    free(argv);
    return rc;
}

D9P_EXPORT int execle(const char *path, const char *arg, ...) {
    va_list ap;
    va_start(ap, arg);
    char **envp = NULL;
    char **argv = collect_args(arg, ap, &envp);
    va_end(ap);
    if (!argv) {
        errno = ENOMEM;
        return -1;
    }
    int rc = execve(path, argv, envp);
    free(argv);
    return rc;
}
