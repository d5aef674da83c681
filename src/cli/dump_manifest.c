/* Dump directories' manifests for `dial9 stats` (dump_manifest.h). */
#include "cli/dump_manifest.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/flight_dump.h"

int d9_print_dump_manifests(FILE *out, FILE *warn, int n, char **paths) {
    int incomplete = 0;
    for (int i = 0; i < n; i++) {
        struct stat st;
        int dir = open(paths[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir < 0) continue;
        if (fstatat(dir, D9_DUMP_MARKER_NAME, &st, 0) != 0) { /* not a dump */
            close(dir);
            continue;
        }
        int fd = openat(dir, D9_DUMP_MANIFEST_NAME, O_RDONLY | O_CLOEXEC);
        close(dir);
        if (fd < 0) {
            incomplete++;
            if (out) fprintf(out, "dump       %s: INCOMPLETE, no %s (the dump was interrupted: its segments are all there is)\n",
                             paths[i], D9_DUMP_MANIFEST_NAME);
            if (warn) fprintf(warn, "dial9 stats: %s: incomplete dump (no %s)\n", paths[i], D9_DUMP_MANIFEST_NAME);
            continue;
        }
        if (out) {
            fprintf(out, "dump       %s: complete, its %s:\n", paths[i], D9_DUMP_MANIFEST_NAME);
            char buf[4096];
            ssize_t r;
            bool line_start = true;
            while ((r = read(fd, buf, sizeof buf)) > 0)
                for (ssize_t k = 0; k < r; k++) {
                    if (line_start) fputs("  ", out);
                    fputc(buf[k], out);
                    line_start = buf[k] == '\n';
                }
            if (!line_start) fputc('\n', out);
        }
        close(fd);
    }
    return incomplete;
}
