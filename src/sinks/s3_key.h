/* Object keys in dial9's current layout, so dial9's viewer lists our uploads:
 *   {prefix}/version=1/date={YYYY-MM-DD}/service={service}/time={HHMM}/instance={host}/
 *   boot={boot_id}/{epoch_secs}-{index}.bin.gz
 * Date and time are the segment's start, in UTC. Values are Hive-escaped. */
#ifndef D9_SINKS_S3_KEY_H
#define D9_SINKS_S3_KEY_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* Hive's path escaping: control characters, DEL and the characters of HIVE_SPECIAL (s3_key.c)
 * become %XX (uppercase hex); everything else, UTF-8 included, stays. 0, or -1 when it does
 * not fit. */
int d9_hive_escape(const char *in, char *out, size_t outlen);

/* 0, or -1 when it does not fit. A trailing '/' of prefix is dropped; an empty prefix puts
 * version=1 first. `suffix` is ".bin.gz", ".bin.zst" or ".bin" (uncompressed). */
int d9_s3_key(char *out, size_t outlen, const char *prefix, const char *service, const char *host,
              const char *boot_id, time_t start, uint64_t index, const char *suffix);

#endif
