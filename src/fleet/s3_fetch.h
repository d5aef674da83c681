/* Traces from S3 for the CLI: `s3://bucket/prefix` as a PATH. The keys under the prefix are
 * listed (ListObjectsV2, paginated; by date prefix when a time window is given, never the
 * whole bucket), chosen by service, instance and time window from the key's Hive components
 * (dial9's layout), fetched with GET into a private cache directory and then read like local
 * files; the readers never see S3. Requests are signed by the uploader's client
 * (src/aws/s3_client.c), with the same credentials chain and endpoint variables.
 *
 * Local layout: {cache}/{bucket}/{prefix}/service=S/instance=I/boot=B/trace.N.bin.gz, so one
 * recording (one boot of one instance) is one run directory. The cache (s3_cache.h) is bounded
 * by DIAL9_S3_CACHE_MAX_MB: the least recently used files outside the current selection are
 * removed first, and a selection larger than the bound is an error for these commands (serve
 * fetches one run at a time: cmd_serve_fetch.c). */
#ifndef D9_FLEET_S3_FETCH_H
#define D9_FLEET_S3_FETCH_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "format/trace_paths.h"
#include "aws/s3_client.h"

typedef struct d9_s3_selection {
    const char *service, *instance; /* NULL: any */
    bool has_from, has_to;
    time_t from, to; /* UTC seconds */
} d9_s3_selection;

bool d9_s3_is_url(const char *arg);

/* Take --service S, --instance I and wall-clock --from/--to (now-15m, now-2h, now-1d: before
 * now; YYYY-MM-DD[THH:MM[:SS]][Z]: UTC; fleet/wall_time.h) out of argv when an s3:// argument
 * (or `serve --bucket`) is there; trace times (5s, @NS) are left for the command, and -15m (a
 * time before the trace's end, which meant "before now" here before) is refused with a message
 * naming now-15m. 0, or -1 with a message. */
int d9_s3_take_selection_args(int *argc, char **argv, char *err, size_t errlen);
const d9_s3_selection *d9_s3_current_selection(void);

/* Fetch what url selects (d9_s3_current_selection) and append the local files, in order. 0, or
 * -1 with a message. When local_root is not NULL it gets the local directory of the prefix. */
int d9_s3_fetch_paths(const char *url, d9_path_list *out, char *local_root, size_t rootlen, char *err,
                      size_t errlen);

/* The same for a selection of the caller's (dial9 diff: one per side) rather than the
 * command line's. */
int d9_s3_fetch_selected(const char *url, const d9_s3_selection *sel, d9_path_list *out, char *err, size_t errlen);

/* d9_remote_paths for trace_paths.h: d9_s3_fetch_paths without the root. */
int d9_s3_paths(const char *url, d9_path_list *out, char *err, size_t errlen);

/* BUCKET and PREFIX (no trailing '/') of s3://BUCKET[/PREFIX]. 0, or -1 with a message. */
int d9_s3_split_url(const char *url, char *bucket, size_t blen, char *prefix, size_t plen, char *err, size_t errlen);

/* A client for bucket, configured from the environment as the uploader is. NULL with a message. */
d9_s3_client *d9_s3_client_for(const char *url, const char *bucket, char *err, size_t errlen);

/* `dial9 serve --bucket B [--prefix P]`: list the selection of s3://B/P (P default
 * dial9-traces), without fetching any object, and replace *argv by one where the options are
 * taken out and `--selection /dev/fd/N --fetcher DIAL9 DIR` added: DIR the prefix's local
 * directory, N a memfd (inherited by dial9-serve) holding the selection, its runs' key times and
 * segments (serve/serve_selection.h), DIAL9 this program, which dial9-serve runs as its fetch
 * step when a run is opened (`dial9 _serve-fetch`, cmd_serve_fetch.c). 0 (also when there is no
 * --bucket), or -1 with a message. */
int d9_s3_serve_args(int *argc, char ***argv, char *err, size_t errlen);

#endif
