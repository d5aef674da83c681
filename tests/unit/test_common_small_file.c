/* d9_read_small_file (common/small_file.h): a whole file, a file cut to the buffer, an empty
 * one, a missing one and a directory; and a kernel file read as stdio reads it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "common/small_file.h"
#include "trace_files_util.h"

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

int main(void) {
    char *dir = d9t_mkdtemp("small-file");
    char path[512], buf[16];
    snprintf(path, sizeof path, "%s/f", dir);

    write_text(path, "tsc\n");
    CHECK(d9_read_small_file(path, buf, sizeof buf) == 4 && strcmp(buf, "tsc\n") == 0);

    write_text(path, "0123456789abcdefghij"); /* longer than the buffer: cut, terminated */
    CHECK(d9_read_small_file(path, buf, sizeof buf) == 15 && strcmp(buf, "0123456789abcde") == 0);
    CHECK(d9_read_small_file(path, buf, 1) == 0 && buf[0] == 0);
    CHECK(d9_read_small_file(path, buf, 0) == -1);

    write_text(path, "");
    memset(buf, 'x', sizeof buf);
    CHECK(d9_read_small_file(path, buf, sizeof buf) == 0 && buf[0] == 0);

    snprintf(path, sizeof path, "%s/missing", dir);
    memset(buf, 'x', sizeof buf);
    CHECK(d9_read_small_file(path, buf, sizeof buf) == -1 && buf[0] == 0);
    memset(buf, 'x', sizeof buf);
    CHECK(d9_read_small_file(dir, buf, sizeof buf) == -1 && buf[0] == 0); /* EISDIR on read */

    /* a kernel file: the same bytes as through stdio */
    char mine[128], theirs[128] = "";
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f) {
        if (!fgets(theirs, sizeof theirs, f)) theirs[0] = 0;
        fclose(f);
    }
    CHECK(d9_read_small_file("/proc/sys/kernel/random/boot_id", mine, sizeof mine) == (ssize_t)strlen(theirs));
    CHECK(strcmp(mine, theirs) == 0);

    if (!d9t_failed) d9t_rm_rf(dir);
    free(dir);
    return d9t_summary("test_common_small_file");
}
