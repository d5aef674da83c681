/* The flight recorder's uploads (docs/flight-recorder.md): with DIAL9_S3_BUCKET set, every
 * dump whose manifest is written is stored in S3 under dumps/ (sinks/step_dump_upload.h), on
 * a thread of its own ("dial9-dump-up", SCHED_IDLE like the pipeline's), so an S3 outage never
 * holds up the next dump. The local directory stays: it is the dump, S3 a copy. */
#ifndef D9_CORE_FLIGHT_UPLOAD_H
#define D9_CORE_FLIGHT_UPLOAD_H

#include <stdbool.h>
#include <stdint.h>

#include "dial9/dial9.h"

/* Start the thread when cfg->s3_bucket is set (nothing otherwise). cfg must outlive
 * d9_flight_upload_stop; service is the run's service name (copied). false: not started,
 * said on stderr. */
bool d9_flight_upload_start(const d9_config *cfg, const char *service);
/* Queue a finished dump (its directory, its name, its trigger's time): never blocks. */
void d9_flight_upload_enqueue(const char *dir, const char *name, int64_t at_unix_ns);
/* Store what is queued within cfg->s3_exit_wait_secs, then stop the thread; what is left is
 * said on stderr (its local copy stays). A failing S3 is not waited for: with the dumps'
 * upload circuit open (5 consecutive failures, sinks/upload_pace.h, as for the segments), the
 * dumps not stored are named and the thread ends. */
void d9_flight_upload_stop(void);
/* In a forked child: forget the parent's thread and queue. */
void d9_flight_upload_forget_after_fork(void);

#endif
