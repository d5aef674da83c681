/* Storing sealed files in S3 until they are stored: the attempts paced by one circuit breaker
 * for every file (circuit_breaker.h: short backoffs, then cool-downs after consecutive
 * failures), one message when an outage starts, one when uploads pause and one when it ends;
 * a fatal answer ends uploading (said once), the local file deleted only after a 2xx; a file
 * gone before it was stored (the disk budget deleted it) is skipped without a message. Shared by the recorder's pipeline (a
 * run's own segments and what earlier runs left) and `dial9 upload`. */
#ifndef D9_SINKS_UPLOAD_RETRY_H
#define D9_SINKS_UPLOAD_RETRY_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "dial9/dial9.h"
#include "sinks/upload_pace.h"
#include "sinks/step_upload.h"

typedef struct d9_upload_retry {
    d9_uploader *uploader;  /* NULL once a fatal answer came (stopped) */
    d9_compress_mode compress; /* .bin files compressed before uploading them (upload_run_dir);
                                  D9_COMPRESS_NONE (or AUTO): as they are */
    unsigned max_attempts;  /* per file; 0: until stored or given up */
    bool keep_local;        /* leave the local file after storing it (dial9 upload --keep) */
    bool stop_when_open;    /* stop everything when the circuit opens (dial9 upload --attempts N) */
    /* its pacing through outages, give_up and not_waiting (upload_pace.h): give_up ends the
     * waits and transfers; not_waiting with the circuit open ends uploading (pace.quit, said),
     * what is not stored stays on disk */
    d9_upload_pace pace;
    /* told a file's size once settled: its compressed size, 0 when uploaded and removed */
    void (*on_resized)(const char *sealed_path, uint64_t size, void *ctx);
    struct d9_tables_step *tables; /* owned; NULL: no tables beside the segments (step_tables.h) */
    char fatal[2048];       /* the fatal answer, when stopped */
    /* state */
    bool paused_said;       /* its pause (the circuit opened) said */
    bool stopped_open;      /* stop_when_open and the circuit opened */
    /* counts */
    uint64_t stored, stored_bytes, not_stored, vanished;
} d9_upload_retry;

/* uploader is owned by r from now on; who starts its messages ("dial9"). The pace's first
 * cool-down is DIAL9_S3_BREAKER_SECS (upload_pace.h). */
void d9_upload_retry_init(d9_upload_retry *r, d9_uploader *uploader, const char *who);
void d9_upload_retry_free(d9_upload_retry *r);

/* Upload `path` (sealed_path is the name the disk budget knows it by) until stored, a fatal
 * answer, a file-specific rejection, the file gone, max_attempts, give_up, not_waiting with the
 * circuit open or (stop_when_open) the circuit opening. true when stored. */
bool d9_upload_retry_file(d9_upload_retry *r, const char *sealed_path, const char *path, uint64_t seq,
                          time_t start, const char *service, const char *boot_id);

/* Every sealed segment of run_dir (trace.N.bin, trace.N.bin.gz, trace.N.bin.zst; never
 * .active), oldest first, compressed first as r->compress says, uploaded under service and
 * boot_id. A .bin beside its .bin.gz or .bin.zst (a compression cut between rename and unlink)
 * is dropped. false when uploading
 * stopped (fatal, quit, or stop_when_open and the circuit opened) or was given up; files not
 * stored stay. */
bool d9_upload_retry_run_dir(d9_upload_retry *r, const char *run_dir, const char *service, const char *boot_id);

/* The segment's start: its birth time where the file system keeps it, else its last change; a
 * compressed one's (.gz, .zst) modification time, which the compress step set to that start. */
time_t d9_segment_start_time(const char *path);

#endif
