/* The trace directory and a run's directory, opened so that no other user can redirect the
 * files a run writes (ARCHITECTURE.md: "Files of a run are opened relative to the run
 * directory's handle, never by a path another user could redirect"; docs/files-on-disk.md).
 *
 * The trace directory is reached one component at a time from "/" (openat, O_NOFOLLOW): each
 * directory on the way, and the trace directory itself, must be owned by root or by the
 * effective user and writable by nobody else unless it is sticky (the rule of ssh's
 * StrictModes). /tmp (root, 1777) passes; /tmp/dial9-traces made by another user does not. A
 * symbolic link on the way is followed only where it sits in a directory that passed and is
 * root's or ours, and its target is checked the same way. What is missing is created, 0755.
 *
 * A run's directory is created 0700 in the trace directory's handle (mkdirat) and opened
 * without following a link; it must then be a directory of the effective user that nobody else
 * may write to. The recorder holds both handles for the run's life and makes, renames, deletes
 * and stats every file of the run through them (openat, renameat, unlinkat, fstatat with
 * O_NOFOLLOW / AT_SYMLINK_NOFOLLOW), so a path swapped under it afterwards changes nothing. */
#ifndef D9_SINKS_TRACE_DIR_H
#define D9_SINKS_TRACE_DIR_H

#include <stdbool.h>
#include <stddef.h>

/* Modes of what the recorder creates: traces may hold kernel addresses and symbol names, so
 * runs are their owner's only (d9_hand_over_files changes the owner, never the mode). The
 * trace directory holds only run directories and 0600 bookkeeping: it stays enterable, so a
 * program that gave up root (its run handed over) still reaches its run by path (uploads). */
#define D9_TRACE_DIR_MODE 0755
#define D9_RUN_DIR_MODE 0700
#define D9_TRACE_FILE_MODE 0600

/* An O_DIRECTORY fd of `path` (created if missing when `create`), or -1 with a message in err
 * that names the path, what is wrong with it and what to do. errno is set (EPERM when refused). */
int d9_trace_dir_open(const char *path, bool create, char *err, size_t errlen);

/* The run directory `name` in trace_fd: created 0700 if missing (an existing one of ours is
 * reused), opened without following a link and checked (a directory of ours, writable by
 * nobody else). The fd, or -1 with a message in err and errno set. `shown` names the
 * directory in the message. */
int d9_run_dir_open(int trace_fd, const char *name, const char *shown, char *err, size_t errlen);

#endif
