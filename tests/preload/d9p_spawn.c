/* Starts children the ways a program can, for test_preload_children.sh:
 *   d9p_spawn MODE PROG [ARGS...]
 * MODE is how: posix_spawn (this process's environment), posix_spawn-copy (an explicit
 * environment copied from /proc/self/environ: what the process was started with, LD_PRELOAD
 * included), fork-execve-copy (fork, then execve with that copy), vfork-execve-copy, or
 * execve-copy (this process becomes PROG, no fork). First prints "launcher <pid>". Exits
 * with the child's status. */
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* The environment the kernel gave this process, as a NULL-terminated array. */
static char **startup_environment(void) {
    FILE *f = fopen("/proc/self/environ", "r");
    if (!f) return NULL;
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    size_t count = 0;
    for (size_t i = 0; i < n; i += strlen(buf + i) + 1) count++;
    char **env = calloc(count + 1, sizeof *env);
    if (!env) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i += strlen(buf + i) + 1) env[k++] = buf + i;
    return env;
}

static int wait_for(pid_t pid) {
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return 1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: d9p_spawn MODE PROG [ARGS...]\n");
        return 2;
    }
    const char *mode = argv[1];
    char **args = argv + 2;
    char **copy = startup_environment();
    if (!copy) {
        perror("d9p_spawn: /proc/self/environ");
        return 2;
    }
    printf("launcher %d\n", (int)getpid());
    fflush(stdout); /* before any fork: the child must not print it again */
    pid_t pid;
    int rc;
    if (!strcmp(mode, "posix_spawn") || !strcmp(mode, "posix_spawn-copy")) {
        char **env = strcmp(mode, "posix_spawn") ? copy : environ;
        if ((rc = posix_spawnp(&pid, args[0], NULL, NULL, args, env)) != 0) {
            fprintf(stderr, "d9p_spawn: posix_spawnp %s: %s\n", args[0], strerror(rc));
            return 127;
        }
        return wait_for(pid);
    }
    if (!strcmp(mode, "fork-execve-copy") || !strcmp(mode, "vfork-execve-copy")) {
        pid = strcmp(mode, "fork-execve-copy") ? vfork() : fork();
        if (pid < 0) return 2;
        if (pid == 0) {
            execve(args[0], args, copy);
            _exit(127);
        }
        return wait_for(pid);
    }
    if (!strcmp(mode, "execve-copy")) {
        execve(args[0], args, copy);
        perror("d9p_spawn: execve");
        return 127;
    }
    fprintf(stderr, "d9p_spawn: unknown mode %s\n", mode);
    return 2;
}
