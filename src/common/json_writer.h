/* A small streaming JSON writer for every machine-readable output (the CLI, the exporters,
 * the server's index): it places commas and (optionally) indentation, and escapes strings in
 * one place, so that arbitrary bytes (invalid UTF-8, control characters, quotes) always come
 * out as valid JSON. */
#ifndef D9_COMMON_JSON_WRITER_H
#define D9_COMMON_JSON_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define D9_JSON_MAX_DEPTH 64

typedef struct d9_json {
    FILE *out;
    bool pretty;       /* newline + two-space indentation */
    bool after_key;    /* the next value completes a "key": pair */
    int depth;
    bool has_items[D9_JSON_MAX_DEPTH]; /* per open container: a comma goes before the next item */
} d9_json;

void d9_json_init(d9_json *j, FILE *out, bool pretty);

void d9_json_object_begin(d9_json *j);
void d9_json_object_end(d9_json *j);
void d9_json_array_begin(d9_json *j);
void d9_json_array_end(d9_json *j);

/* Inside an object: the key of the next value. */
void d9_json_key(d9_json *j, const char *key);
void d9_json_key_n(d9_json *j, const char *key, size_t len);

void d9_json_string(d9_json *j, const char *s);
/* Any bytes: valid UTF-8 is kept, invalid bytes become U+FFFD. */
void d9_json_string_n(d9_json *j, const char *s, size_t len);
void d9_json_u64(d9_json *j, uint64_t v);
void d9_json_i64(d9_json *j, int64_t v);
void d9_json_f64(d9_json *j, double v); /* NaN and infinities (not JSON) become null */
void d9_json_bool(d9_json *j, bool v);
void d9_json_null(d9_json *j);
/* A key and its value in one call (inside an object); a NULL string is written as null. */
void d9_json_key_u64(d9_json *j, const char *key, uint64_t v);
void d9_json_key_f64(d9_json *j, const char *key, double v);
void d9_json_key_string(d9_json *j, const char *key, const char *v);
void d9_json_key_bool(d9_json *j, const char *key, bool v);
/* A string of lowercase hex digits of `len` bytes (for Bytes values). */
void d9_json_hex(d9_json *j, const uint8_t *p, size_t len);

/* Write the escaped body of a JSON string (no quotes) for s[0..len). */
void d9_json_escape(FILE *out, const char *s, size_t len);

#endif
