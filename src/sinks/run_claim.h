/* Which process uploads a run directory's segments. A recorder that uploads holds an exclusive
 * flock on its run directory for its whole life and writes a ".s3-run" file there (the run's
 * service and boot id, for the keys). At the next start, a recorder uploading to S3 adopts the
 * run directories under trace_dir that have a ".s3-run" and whose lock it can take: runs whose
 * process is gone. The lock is held while adopting, so two starting processes never upload the
 * same files, and a running process's files are never taken. */
#ifndef D9_SINKS_RUN_CLAIM_H
#define D9_SINKS_RUN_CLAIM_H

#include <stdbool.h>
#include <stddef.h>

#define D9_RUN_IDENTITY_NAME ".s3-run"
#define D9_RUN_BOOT_ID_MAX 256

/* The recording's id in S3 keys (boot=...) and metadata: the host's boot id, a dot, and the run
 * directory's name (its start time, pid and a random part). Two runs on one host then never
 * share a key, even when their segments start in the same second with the same number (a
 * restart, or several processes of one service). */
void d9_run_boot_id(const char *run_dir, char *out, size_t len);

/* Lock run_dir (exclusive, non-blocking; a link is not followed): the fd to keep open, or -1
 * when another holds it. d9_run_claim_at: `name` in dir_fd ("." for dir_fd itself). */
int d9_run_claim(const char *run_dir);
int d9_run_claim_at(int dir_fd, const char *name);
/* Write the identity file (service, boot id) into the run directory's handle run_fd (a
 * temporary made exclusively, renamed into place). 0 or -1. */
int d9_run_identity_write(int run_fd, const char *service, const char *boot_id);
/* Read it; false when absent or unreadable. */
bool d9_run_identity_read(const char *run_dir, char *service, size_t slen, char *boot_id, size_t blen);
/* Remove the identity file and the directory when no trace file is left in it. */
void d9_run_release_if_empty(const char *run_dir);

/* For each run directory under trace_dir (not own_run) that has an identity file and whose lock
 * could be taken: fn(run_dir, service, boot_id, ctx), lock held; afterwards the directory is
 * released if empty and unlocked. Stops early when fn returns false. */
void d9_run_adopt_each(const char *trace_dir, const char *own_run,
                       bool (*fn)(const char *run_dir, const char *service, const char *boot_id, void *ctx),
                       void *ctx);

#endif
