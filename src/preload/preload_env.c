/* The environment the shim leaves to the program and its children: LD_PRELOAD without the
 * shim unless children are traced, and an absolute DIAL9_TRACE_DIR. Runs in the constructor,
 * before the program can look at its environment. */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "preload.h"

static const char *base_name(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

void d9p_env_drop_self_from_preload(void) {
    const char *list = getenv("LD_PRELOAD");
    Dl_info info;
    if (!list || !dladdr((void *)d9p_env_drop_self_from_preload, &info) || !info.dli_fname)
        return;
    const char *self = base_name(info.dli_fname);
    size_t len = strlen(list);
    char *kept = malloc(len + 1);
    if (!kept) return;
    size_t out = 0;
    /* ld.so separates entries with spaces or colons */
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ": ");
        if (n > 0) {
            char entry[PATH_MAX];
            snprintf(entry, sizeof entry, "%.*s", (int)n, p);
            if (strcmp(base_name(entry), self) != 0) {
                if (out) kept[out++] = ':';
                memcpy(kept + out, p, n);
                out += n;
            }
        }
        p += n;
        if (*p) p++;
    }
    kept[out] = 0;
    if (out) setenv("LD_PRELOAD", kept, 1);
    else unsetenv("LD_PRELOAD");
    free(kept);
}

void d9p_env_absolute_trace_dir(void) {
    const char *dir = getenv("DIAL9_TRACE_DIR");
    if (!dir || !*dir || dir[0] == '/') return;
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) return; /* the recorder then reports what it can */
    size_t need = strlen(cwd) + 1 + strlen(dir) + 1;
    char *abs = malloc(need);
    if (!abs) return;
    const char *rest = dir;
    while (rest[0] == '.' && rest[1] == '/') rest += 2; /* "./traces" -> "traces" */
    if (!strcmp(rest, ".")) rest = "";
    snprintf(abs, need, "%s%s%s", cwd, *rest && strcmp(cwd, "/") ? "/" : "", rest);
    setenv("DIAL9_TRACE_DIR", abs, 1);
    free(abs);
}
