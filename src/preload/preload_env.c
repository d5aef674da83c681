/* The environment the shim leaves to the program and its children: LD_PRELOAD without the
 * shim unless children are traced, and an absolute DIAL9_TRACE_DIR. Runs in the constructor,
 * before the program can look at its environment.
 *
 * The initial environment is edited in place (its array and entries), never through
 * setenv/unsetenv: a program may define those itself (bash exports its own, which keep
 * bash's variable table, not the array), and bash, like any program, builds what its
 * children get from the array main receives as envp, the same array as environ. Replacing
 * environ by a new array would leave that one unchanged.
 *
 * The shim's heap library (libdial9-preload-heap.so) goes and comes back with it.
 *
 * An environment given explicitly to execve or posix_spawn can still name the shim (copied
 * from /proc/self/environ, which keeps what the kernel gave the process, or built by hand):
 * d9p_env_names_self and d9p_env_copy_without_self let the interposers strip it with memory
 * on the stack only, as is needed in a vfork child (dash execs from one). */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "preload.h"

extern char **environ;

#define PRELOAD_VAR "LD_PRELOAD="
#define PRELOAD_LEN (sizeof PRELOAD_VAR - 1)

/* The shim's file name ("libdial9-preload.so") and its heap library's (the same with "-heap"
 * before ".so": libdial9-preload-heap.so, preloaded beside it when heap profiling is on), set by
 * d9p_env_know_self. An LD_PRELOAD entry naming either is the shim's. */
static char g_self[NAME_MAX + 1], g_heap[NAME_MAX + 1];

static const char *base_name(const char *path, size_t len) {
    const char *slash = memrchr(path, '/', len);
    return slash ? slash + 1 : path;
}

void d9p_env_know_self(void) {
    Dl_info info;
    if (g_self[0] || !dladdr((void *)d9p_env_know_self, &info) || !info.dli_fname) return;
    const char *self = base_name(info.dli_fname, strlen(info.dli_fname));
    size_t n = strlen(self);
    if (n + sizeof "-heap" > sizeof g_heap) return;
    size_t stem = n > 3 && !strcmp(self + n - 3, ".so") ? n - 3 : n;
    snprintf(g_heap, sizeof g_heap, "%.*s-heap%s", (int)stem, self, self + stem);
    strcpy(g_self, self);
}

static bool is_name(const char *b, size_t blen, const char *name) {
    return name[0] && blen == strlen(name) && !memcmp(b, name, blen);
}

bool d9p_env_entry_is_shim(const char *p, size_t n) {
    const char *b = base_name(p, n);
    size_t blen = (size_t)(p + n - b);
    return is_name(b, blen, g_self) || is_name(b, blen, g_heap);
}

/* Whether the value of an LD_PRELOAD entry lists the shim. */
static bool list_names_self(const char *list) {
    /* ld.so separates entries with spaces or colons */
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ": ");
        if (n > 0 && d9p_env_entry_is_shim(p, n)) return true;
        p += n;
        if (*p) p++;
    }
    return false;
}

size_t d9p_env_pick_entries(const char *list, bool shims, char *out) {
    size_t o = 0;
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ": ");
        if (n > 0 && d9p_env_entry_is_shim(p, n) == shims) {
            if (o > 0) out[o++] = ':';
            memcpy(out + o, p, n);
            o += n;
        }
        p += n;
        if (*p) p++;
    }
    out[o] = 0;
    return o;
}

/* "LD_PRELOAD=<list without the shim>" into out (room for strlen(list) + PRELOAD_LEN + 1);
 * false when nothing is left (the variable is then dropped). */
static bool write_without_self(const char *list, char *out) {
    memcpy(out, PRELOAD_VAR, PRELOAD_LEN);
    return d9p_env_pick_entries(list, false, out + PRELOAD_LEN) > 0;
}

static bool is_preload(const char *entry) { return !strncmp(entry, PRELOAD_VAR, PRELOAD_LEN); }

void d9p_env_drop_self_from_preload(void) {
    d9p_env_know_self();
    if (!g_self[0] || !environ) return;
    /* every LD_PRELOAD entry: ld.so reads the last one, getenv the first */
    size_t out = 0;
    for (size_t i = 0; environ[i]; i++) {
        char *e = environ[i];
        if (is_preload(e) && list_names_self(e + PRELOAD_LEN)) {
            char *kept = malloc(strlen(e) + 1); /* lives as long as the process */
            if (kept && write_without_self(e + PRELOAD_LEN, kept)) environ[out++] = kept;
            else free(kept); /* nothing left (or no memory): the entry goes */
            continue;
        }
        environ[out++] = e;
    }
    environ[out] = NULL;
}

bool d9p_env_names_self(char *const *envp, size_t *count, size_t *bytes) {
    bool found = false;
    size_t n = 0, b = 0;
    for (; envp && envp[n]; n++) {
        if (is_preload(envp[n]) && list_names_self(envp[n] + PRELOAD_LEN)) {
            found = true;
            b += strlen(envp[n]) + 1;
        }
    }
    *count = n;
    *bytes = b ? b : 1;
    return found;
}

void d9p_env_copy_without_self(char *const *envp, char **out, char *strings) {
    size_t k = 0;
    for (size_t i = 0; envp[i]; i++) {
        if (is_preload(envp[i]) && list_names_self(envp[i] + PRELOAD_LEN)) {
            if (write_without_self(envp[i] + PRELOAD_LEN, strings)) {
                out[k++] = strings;
                strings += strlen(strings) + 1;
            }
            continue;
        }
        out[k++] = envp[i];
    }
    out[k] = NULL;
}

void d9p_env_absolute_trace_dir(void) {
    static const char var[] = "DIAL9_TRACE_DIR=";
    char **slot = NULL;
    for (char **e = environ; e && *e; e++) /* the entry getenv finds: the first */
        if (!strncmp(*e, var, sizeof var - 1)) {
            slot = e;
            break;
        }
    if (!slot) return;
    const char *dir = *slot + sizeof var - 1;
    if (!*dir || dir[0] == '/') return;
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) return; /* the recorder then reports what it can */
    const char *rest = dir;
    while (rest[0] == '.' && rest[1] == '/') rest += 2; /* "./traces" -> "traces" */
    if (!strcmp(rest, ".")) rest = "";
    char *abs = NULL; /* lives as long as the process */
    if (asprintf(&abs, "%s%s%s%s", var, cwd, *rest && strcmp(cwd, "/") ? "/" : "", rest) < 0) return;
    *slot = abs;
}
