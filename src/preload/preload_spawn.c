/* posix_spawn and posix_spawnp: glibc execs inside them (and system() and popen() inside
 * those), out of reach of the execve interposer. The process's own environment is clean
 * already (preload_env.c); an environment given explicitly that names the shim loses it
 * unless children are traced, as with execve. */
#include <spawn.h>

#include "preload.h"

D9P_EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *actions,
                           const posix_spawnattr_t *attr, char *const argv[], char *const envp[]) {
    D9P_CALL_WITHOUT_SELF(envp, D9P_NEXT(posix_spawn)(pid, path, actions, attr, argv, env));
}

D9P_EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *actions,
                            const posix_spawnattr_t *attr, char *const argv[], char *const envp[]) {
    D9P_CALL_WITHOUT_SELF(envp, D9P_NEXT(posix_spawnp)(pid, file, actions, attr, argv, env));
}
