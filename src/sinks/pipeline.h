/* The sealed-segment pipeline: a low-priority thread that takes each sealed segment and runs
 * the configured steps on it (symbolize in place, then later compress and upload), never in
 * the collector's way. The segments sealed at the end of the run, before that thread existed
 * or after d9_pipeline_closing, are prepared by d9_pipeline_stop on the stopping thread. */
#ifndef D9_SINKS_PIPELINE_H
#define D9_SINKS_PIPELINE_H

#include <stdint.h>

#include "dial9/dial9.h"
#include "symbols/sym_input.h"

typedef struct d9_pipeline d9_pipeline;

/* NULL when no step is configured (nothing to do) or it cannot start. */
d9_pipeline *d9_pipeline_start(const d9_config *cfg);
/* The segment writer's on_sealed callback: queue `path` (copied) and `symbols` (taken; NULL:
 * the file is read to learn what to name). Cheap, never blocks long. A segment without stacks
 * (needs_symbols false) is not read again to be symbolized. */
void d9_pipeline_on_sealed(const char *path, bool needs_symbols, d9_sym_input *symbols, void *pipeline);
/* Told, on the pipeline's thread, the size of each sealed file once its steps are done
 * (symbols appended or not), so the disk budget counts it as it is. Symbols never take a
 * file past cfg->max_file_size. Set right after d9_pipeline_start. */
typedef void (*d9_pipeline_resized_fn)(const char *path, uint64_t new_size, void *ctx);
void d9_pipeline_set_on_resized(d9_pipeline *p, d9_pipeline_resized_fn fn, void *ctx);
/* Where this run's segments go: when uploading, the run directory is claimed (run_claim.h)
 * and the segments earlier runs under trace_dir left behind are uploaded first. */
void d9_pipeline_set_run(d9_pipeline *p, const char *trace_dir, const char *run_dir);
/* The run directory's handle (the segment writer's, d9_segw_run_dir_fd; duplicated): the
 * sealed files are symbolized and compressed through it, never by their path. Set right after
 * d9_pipeline_start, before any segment is sealed. */
void d9_pipeline_set_run_fd(d9_pipeline *p, int run_fd);
/* The most a sealed file grows by in the pipeline (0 for NULL): the writer keeps that much
 * room in each segment and in the disk budget. */
uint64_t d9_pipeline_max_growth(const d9_pipeline *p);
/* The run is ending: the segments sealed from now on are prepared by d9_pipeline_stop (no
 * thread is created for them). NULL is fine. */
void d9_pipeline_closing(d9_pipeline *p);
/* Finish the queued segments (bounded time), stop the thread, free. NULL is fine. */
void d9_pipeline_stop(d9_pipeline *p);

#endif
