/* The one rule for numbers in DIAL9_* (and the S3 cache's) environment variables: plain
 * decimal digits, spaces around them allowed, nothing else. No sign ("+64" and "-1" are
 * refused alike), no hex, no exponent, no "nan" or "inf". Every reader of such a variable
 * goes through these, so a value one variable takes, every numeric variable takes. */
#ifndef D9_COMMON_PLAIN_NUMBER_H
#define D9_COMMON_PLAIN_NUMBER_H

#include <stdbool.h>
#include <stdint.h>

/* An integer from min to max: true and *out set, else false (*out untouched). */
bool d9_plain_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/* A decimal with an optional fraction ("2", "0.5", ".5", "2."; 1 to 15 digits), read the same
 * whatever the program's locale: true and *out set, else false. The caller checks the range. */
bool d9_plain_decimal(const char *s, double *out);

#endif
