/* A flight recorder's dump directory stored in S3 (docs/flight-recorder.md), beside the
 * segment layout (s3_key.h) under a `dumps/` component that marks it:
 *   {prefix}/dumps/date={YYYY-MM-DD}/service={S}/instance={host}/{run_id}.dump{N}/{file}
 * (date: the trigger's, UTC; values Hive-escaped). Its segments are stored first, its
 * manifest.json last: a reader listing `dumps/` takes a dump without a manifest object as
 * incomplete (an upload cut short), as it does a local dump directory without one. */
#ifndef D9_SINKS_STEP_DUMP_UPLOAD_H
#define D9_SINKS_STEP_DUMP_UPLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "aws/s3_client.h"
#include "sinks/upload_pace.h"

#define D9_DUMPS_KEY_COMPONENT "dumps"

/* The key of the dump's directory, ending in '/'. 0, or -1 when it does not fit. */
int d9_dump_key_dir(char *out, size_t outlen, const char *prefix, const char *service, const char *host,
                    time_t at, const char *dump_name);

/* The part of `key` after "{prefix}/dumps/" (prefix without its trailing '/', "" for none), or
 * NULL when the key is not under it: fleet readers of segments skip these keys. */
const char *d9_dump_key_rest(const char *key, const char *prefix);

/* Whether `key` is in a dumps/ layout, under any prefix: a component "dumps" followed by a
 * "date=" one. The fleet's segment readers (s3_fetch.c) skip such keys: a dump's segments are
 * copies of a run's, not a run of their own. */
bool d9_dump_key_is_dump(const char *key);

/* Store the dump directory `dir` under key_dir: its segments (trace.N.bin, .bin.gz, .bin.zst;
 * nothing partial), then its manifest.json, each PUT tried up to `attempts` times as `pace`
 * lets them go (upload_pace.h: the uploader's one circuit breaker, its give_up; with the
 * circuit open and not waited for, pace->quit and nothing more is tried). D9_S3_OK when all is
 * stored; else the first failure, with err saying which file and why (the manifest is then
 * not stored: readers see the dump as incomplete). A dump without a manifest is not uploaded
 * (REJECTED). */
d9_s3_result d9_dump_upload(d9_s3_client *c, const char *dir, const char *key_dir, unsigned attempts,
                            d9_upload_pace *pace, char *err, size_t errlen);

#endif
