/* The memory-map source names the build id of the code that is mapped, not of whatever the
 * file's path holds now. A copy of a shared library is dlopen'ed, then its path is replaced on
 * disk (rename over it, as a package upgrade does) by a file with another build id. The
 * MemoryMapEvent of the copy must carry the first build id (read from the image in memory);
 * reading the file at its path would give the second. */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "core/collector.h"
#include "dial9/dial9.h"
#include "sources/memory_map.h"
#include "symbols/elf_image.h"
#include "trace_files_util.h"

static bool copy_file(const char *from, const char *to) {
    int in = open(from, O_RDONLY | O_CLOEXEC), out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
    bool ok = in >= 0 && out >= 0;
    char buf[65536];
    ssize_t n;
    while (ok && (n = read(in, buf, sizeof buf)) > 0) ok = write(out, buf, (size_t)n) == n;
    if (in >= 0) close(in);
    if (out >= 0 && close(out) != 0) ok = false;
    return ok;
}

/* A library this process has not loaded, by its path (NULL when none is installed). */
static const char *a_library(void) {
    static const char *const libs[] = {"/lib/x86_64-linux-gnu/libbz2.so.1.0", "/lib/x86_64-linux-gnu/libacl.so.1",
                                       "/lib/x86_64-linux-gnu/libcrypt.so.1", "/lib/x86_64-linux-gnu/libattr.so.1"};
    for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++)
        if (access(libs[i], R_OK) == 0) return libs[i];
    return NULL;
}

typedef struct seen {
    const char *path;
    char build_id[D9_BUILD_ID_HEX_MAX];
    int maps;
} seen;

static void on_event(const d9_event *ev, void *ctx) {
    seen *s = ctx;
    d9_dec_str path, bid;
    if (!d9t_is(ev, "MemoryMapEvent") || !d9_value_str(d9_event_field(ev, "path"), &path) ||
        !d9_value_str(d9_event_field(ev, "build_id"), &bid))
        return;
    if (path.len != strlen(s->path) || memcmp(path.ptr, s->path, path.len) != 0) return;
    s->maps++;
    snprintf(s->build_id, sizeof s->build_id, "%.*s", (int)bid.len, bid.ptr);
}

int main(void) {
    const char *lib = a_library();
    if (!lib) {
        printf("SKIP: none of libbz2, libacl, libcrypt, libattr installed\n");
        return 0;
    }
    char *dir = d9t_mkdtemp("mmreplaced");
    char copy[1024], next[1024];
    snprintf(copy, sizeof copy, "%s/libcopy.so", dir);
    snprintf(next, sizeof next, "%s/next.so", dir);
    char loaded_id[D9_BUILD_ID_HEX_MAX] = "", other_id[D9_BUILD_ID_HEX_MAX] = "", now_id[D9_BUILD_ID_HEX_MAX] = "";
    CHECK(copy_file(lib, copy));
    CHECK(d9_elf_file_build_id(copy, loaded_id, sizeof loaded_id));
    void *h = dlopen(copy, RTLD_NOW | RTLD_LOCAL);
    CHECK(h != NULL);

    /* the "upgrade": another ELF file (this test's own) renamed over the library's path */
    CHECK(copy_file("/proc/self/exe", next));
    CHECK(d9_elf_file_build_id(next, other_id, sizeof other_id));
    CHECK(strcmp(loaded_id, other_id) != 0);
    CHECK(rename(next, copy) == 0);
    CHECK(d9_elf_file_build_id(copy, now_id, sizeof now_id));
    CHECK_STR(now_id, other_id);

    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    cfg.symbolize = false;
    d9_collector_config cc = {.cfg = &cfg, .run_id = "run1", .service = "mmtest", .clock_name = "monotonic"};
    char err[512];
    d9_collector *col = d9_collector_open(&cc, err, sizeof err);
    CHECK(col != NULL);
    if (col) {
        d9_memory_map_source_start(&cfg, col);
        CHECK(d9_collector_start(col, err, sizeof err) == 0);
        d9_collector_drain(col);
        d9_stats st;
        d9_collector_close(col, &st);
        char run_dir[1100];
        snprintf(run_dir, sizeof run_dir, "%s/run1", dir);
        seen s = {.path = copy};
        CHECK(d9t_decode_run(run_dir, on_event, &s) == 0);
        CHECK(s.maps >= 1);
        printf("mapped %s: %s; on disk now: %s; recorded: %s\n", copy, loaded_id, other_id, s.build_id);
        CHECK_STR(s.build_id, loaded_id);
    }
    if (h) dlclose(h);
    d9t_rm_rf(dir);
    free(dir);
    return d9t_summary("test_memory_map_replaced_file");
}
