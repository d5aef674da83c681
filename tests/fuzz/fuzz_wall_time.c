/* The wall-clock time grammar (src/fleet/wall_time.c) on arbitrary strings: never reads past
 * the string (ASan) nor overflows (UBSan); what it accepts is a `now` form or a UTC date, and
 * at or before `now` for every `now-` form; the old spelling (-DURATION) is never accepted as a
 * wall-clock time. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fleet/wall_time.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *s = malloc(size + 1);
    if (!s) return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    const time_t now = 1796000000; /* 2026-11-30 */
    time_t t = 0;
    if (d9_wall_time_parse(s, now, &t) == 0) {
        if (strncmp(s, "now", 3) == 0) {
            if (t > now) abort(); /* now or a duration before it */
        } else if (!(s[0] >= '0' && s[0] <= '9')) {
            abort(); /* only `now...` and dates are wall-clock times */
        }
        if (d9_wall_time_is_old_spelling(s)) abort();
    }
    (void)d9_wall_time_parse(s, 0, &t);
    (void)d9_wall_time_parse(s, (time_t)0x7fffffff, &t);
    free(s);
    return 0;
}
