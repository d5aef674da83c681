/* The flight recorder's dumps in `dial9 serve --bucket` (docs/flight-recorder.md): the dumps
 * stored under {prefix}/dumps/ (sinks/step_dump_upload.h) become runs of the selection handed to
 * dial9-serve, named by their key under the prefix (dumps/date=D/service=S/instance=H/RUN.dumpN),
 * with their segments to fetch when opened. Each dump's manifest.json is fetched now, beside a
 * dump marker, into the run's cache directory, so that the index gives its trigger and window
 * (serve/dump_info.h); a dump without a manifest object is listed as incomplete. */
#ifndef D9_FLEET_S3_DUMP_RUNS_H
#define D9_FLEET_S3_DUMP_RUNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "aws/s3_client.h"
#include "fleet/s3_fetch.h"

/* List the dumps of s3://BUCKET/`prefix` that match sel (service, instance; a window by the
 * trigger's date), fetch their manifests into `base` (the prefix's cache directory), and write
 * their run and seg records to `selection` (after its header). *count: the dumps written; *bytes:
 * their segments' size. 0, or -1 with a message. */
int d9_s3_dump_runs(d9_s3_client *c, const char *prefix, const d9_s3_selection *sel, const char *base,
                    FILE *selection, size_t *count, uint64_t *bytes, char *err, size_t errlen);

/* For `dial9 serve --bucket`: the same for s3://BUCKET/PREFIX `url`, its client and cache
 * directory its own. `header`: the selection's header is written already (else it is written
 * here: a bucket may hold dumps only, as memory mode's fleet does). root_out: the prefix's cache
 * directory. 0, or -1 with a message. */
int d9_s3_serve_dump_runs(const char *url, const d9_s3_selection *sel, FILE *selection, bool header, char *root_out,
                          size_t rootlen, size_t *count, uint64_t *bytes, char *err, size_t errlen);

#endif
