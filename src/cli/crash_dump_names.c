/* A crash dump's names, added by its readers (crash_dump_names.h). */
#include "cli/crash_dump_names.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/flight_dump.h"
#include "symbols/symbolize_file.h"
#include "symbols/symbolizer.h"

#define MAX_GROWTH (64ull << 20) /* names a segment may gain: far above any real one's */

/* A complete dump whose manifest says a crash: its trigger's kind, read from the manifest. */
static bool is_crash_dump(int dir) {
    struct stat st;
    if (fstatat(dir, D9_DUMP_MARKER_NAME, &st, 0) != 0) return false;
    int fd = openat(dir, D9_DUMP_MANIFEST_NAME, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false; /* incomplete: its readers say so; nothing vouches for its files */
    char buf[2048];
    ssize_t n = read(fd, buf, sizeof buf - 1); /* the trigger comes in the first lines */
    close(fd);
    if (n <= 0) return false;
    buf[n] = 0;
    return strstr(buf, "\"kind\": \"crash\"") != NULL;
}

/* trace.N.bin: a segment as the dump wrote it (not .gz/.zst: those are disk mode's sealed
 * files, named by the pipeline before the crash). */
static bool plain_segment(const char *name) {
    size_t len = strlen(name);
    return strncmp(name, "trace.", 6) == 0 && len > 10 && strcmp(name + len - 4, ".bin") == 0;
}

static void name_dump(const char *cmd, const char *path, int dir, d9_symbolizer **sym, FILE *say) {
    DIR *d = fdopendir(dup(dir));
    if (!d) return;
    uint64_t addresses = 0, named = 0;
    unsigned segments = 0, failed = 0;
    char err[1024] = ""; /* a segment's name and the symbolizer's message */
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!plain_segment(e->d_name)) continue;
        if (!*sym) {
            d9_sym_options opt = {.system_debug_dir = true};
            if (!(*sym = d9_symbolizer_new(&opt))) {
                snprintf(err, sizeof err, "out of memory");
                failed++;
                break;
            }
        }
        d9_symbolize_stats st;
        memset(&st, 0, sizeof st);
        char why[512] = "";
        if (d9_symbolize_file_in_place(*sym, dir, e->d_name, NULL, 0, MAX_GROWTH, &st, NULL, NULL, why, sizeof why) != 0) {
            failed++;
            snprintf(err, sizeof err, "%s: %s", e->d_name, why);
            continue;
        }
        segments++;
        addresses += st.addresses;
        named += st.named;
    }
    closedir(d);
    if (failed)
        fprintf(say, "dial9 %s: crash dump %s: %u segment(s) left without names (%s; dial9 symbolize -o OUT "
                     "names a copy)\n", cmd, path, failed, err);
    if (addresses)
        fprintf(say, "dial9 %s: crash dump %s: named %" PRIu64 " of %" PRIu64 " addresses from the binaries on disk\n",
                cmd, path, named, addresses);
}

void d9_name_crash_dumps(const char *cmd, int n, char **paths, FILE *say) {
    d9_symbolizer *sym = NULL; /* made at the first segment: its caches are costly */
    for (int i = 0; i < n; i++) {
        int dir = open(paths[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir < 0) continue;
        if (is_crash_dump(dir)) {
            name_dump(cmd, paths[i], dir, &sym, say);
        } else { /* a directory of dumps (one level, as dial9 dumps reads one) */
            DIR *d = fdopendir(dup(dir));
            struct dirent *e;
            while (d && (e = readdir(d))) {
                if (e->d_name[0] == '.') continue;
                int sub = openat(dir, e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (sub < 0) continue;
                if (is_crash_dump(sub)) {
                    char p[PATH_MAX];
                    snprintf(p, sizeof p, "%s/%s", paths[i], e->d_name);
                    name_dump(cmd, p, sub, &sym, say);
                }
                close(sub);
            }
            if (d) closedir(d);
        }
        close(dir);
    }
    d9_symbolizer_free(sym);
}
