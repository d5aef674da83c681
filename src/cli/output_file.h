/* A file a command writes as its result (`export -o OUT`, `symbolize -o OUT`).
 *
 * A regular OUT is written beside itself under a private temporary name (created with O_EXCL:
 * a name planted in a shared directory, a symlink to another file, is never followed) and
 * renamed over OUT only once complete, so a failed or interrupted run leaves no half file under
 * the name. An OUT that exists and is not a regular file (/dev/null, a FIFO, a terminal) is
 * written in place: renaming over it would replace the device with a regular file. A symlink
 * OUT keeps pointing where it did: what it names is what gets replaced. The new file gets the
 * mode of the file it replaces, else 0666 less the umask, as a shell redirection would. */
#ifndef D9_CLI_OUTPUT_FILE_H
#define D9_CLI_OUTPUT_FILE_H

#include <stddef.h>

typedef struct d9_output_file {
    int fd;      /* -1 when not open */
    char *path;  /* where the result goes (a symlink resolved) */
    char *tmp;   /* the temporary beside it; NULL when written in place */
} d9_output_file;

/* 0, or -1 with a message naming the path. */
int d9_output_open(d9_output_file *o, const char *path, char *err, size_t errlen);

/* Close and move the result into place. 0, or -1 with a message (the temporary is removed). */
int d9_output_commit(d9_output_file *o, char *err, size_t errlen);

/* Close and remove the temporary: nothing under the name changes. Safe after a commit. */
void d9_output_abort(d9_output_file *o);

#endif
