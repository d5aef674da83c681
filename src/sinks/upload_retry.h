/* Storing sealed files in S3 until they are stored: retries with exponential backoff and
 * jitter, one message when an outage starts and one when it ends, a fatal answer ends
 * uploading, the local file deleted only after a 2xx. Shared by the recorder's pipeline (a
 * run's own segments and what earlier runs left) and `dial9 upload`. */
#ifndef D9_SINKS_UPLOAD_RETRY_H
#define D9_SINKS_UPLOAD_RETRY_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "sinks/step_upload.h"

typedef struct d9_upload_retry {
    d9_uploader *uploader;  /* NULL once a fatal answer came (stopped) */
    bool compress;          /* gzip .bin files before uploading them (upload_run_dir) */
    unsigned max_attempts;  /* per file; 0: until stored or given up */
    bool keep_local;        /* leave the local file after storing it (dial9 upload --keep) */
    bool (*give_up)(void *);/* polled; true ends the waits and transfers */
    void *ctx;
    /* told a file's size once settled: its compressed size, 0 when uploaded and removed */
    void (*on_resized)(const char *sealed_path, uint64_t size, void *ctx);
    const char *who;        /* "dial9" (messages start "who: ") */
    char fatal[2048];       /* the fatal answer, when stopped */
    /* state */
    bool failing;
    uint64_t rng;
    /* counts */
    uint64_t stored, stored_bytes, not_stored;
} d9_upload_retry;

/* uploader is owned by r from now on. */
void d9_upload_retry_init(d9_upload_retry *r, d9_uploader *uploader, const char *who);
void d9_upload_retry_free(d9_upload_retry *r);

/* Upload `path` (sealed_path is the name the disk budget knows it by) until stored, a fatal
 * answer, a file-specific rejection, max_attempts or give_up. true when stored. */
bool d9_upload_retry_file(d9_upload_retry *r, const char *sealed_path, const char *path, uint64_t seq,
                          time_t start, const char *service, const char *boot_id);

/* Every sealed segment of run_dir (trace.N.bin, trace.N.bin.gz; never .active), oldest first,
 * compressed first when r->compress, uploaded under service and boot_id. A .bin beside its
 * .bin.gz (a compression cut between rename and unlink) is dropped. false when uploading
 * stopped (fatal) or was given up; files not stored stay. */
bool d9_upload_retry_run_dir(d9_upload_retry *r, const char *run_dir, const char *service, const char *boot_id);

/* The segment's start: its birth time where the file system keeps it, else its last change. */
time_t d9_segment_start_time(const char *path);

#endif
