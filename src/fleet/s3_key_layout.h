/* What an object key says about the segment it holds, in each of dial9's key layouts:
 *   current:  {prefix}/version=1/date={D}/service={S}/time={HHMM}/instance={I}/boot={B}/{epoch}-{n}.bin[.gz]
 *   dated, with a boot id (dial9 before its Hive layout):
 *             {prefix}/{YYYY-MM-DD}/{HHMM}/{S}/{I}/{B}/{epoch}-{n}.bin[.gz]
 *   dated, without (dial9 before boot ids):
 *             {prefix}/{YYYY-MM-DD}/{HHMM}/{S}/{I}/{epoch}-{n}.bin[.gz]
 * Any other key is D9_KEY_OTHER. The dated layouts are told apart by the number of components
 * after the last date-shaped one, as dial9's viewer does; an instance holding a '/' is
 * ambiguous there and read as OTHER. Values come out Hive-escaped (src/sinks/s3_key.h), as
 * the current layout stores them, so that all layouts compare and name local runs alike. */
#ifndef D9_FLEET_S3_KEY_LAYOUT_H
#define D9_FLEET_S3_KEY_LAYOUT_H

#include <stdbool.h>

typedef enum d9_key_layout { D9_KEY_OTHER, D9_KEY_HIVE, D9_KEY_DATED_BOOT, D9_KEY_DATED } d9_key_layout;

typedef struct d9_key_parts {
    d9_key_layout layout;
    char service[768], instance[768], boot[768]; /* Hive-escaped; boot "" for D9_KEY_DATED */
    long long start, index;                      /* the file name's epoch and n; -1 when not there */
} d9_key_parts;

/* Fills *out (layout OTHER when the key fits none of the layouts); false when the key is not a
 * trace file (.bin, .bin.gz or .bin.zst). */
bool d9_key_parse(const char *key, d9_key_parts *out);

#endif
