/* Streaming JSON writer (see json_writer.h). */
#include "common/json_writer.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

void d9_json_init(d9_json *j, FILE *out, bool pretty) {
    memset(j, 0, sizeof *j);
    j->out = out;
    j->pretty = pretty;
}

static void newline(d9_json *j) {
    if (!j->pretty) return;
    putc('\n', j->out);
    for (int i = 0; i < j->depth; i++) fputs("  ", j->out);
}

/* The "has items" flag of the innermost open container (nesting beyond the array shares
 * the last slot: callers stay far below it). */
static bool *items_flag(d9_json *j) {
    return &j->has_items[j->depth > D9_JSON_MAX_DEPTH ? D9_JSON_MAX_DEPTH - 1 : j->depth - 1];
}

/* Before any value or key: the comma and the indentation it needs. */
static void before_item(d9_json *j) {
    if (j->after_key) {
        j->after_key = false;
        return;
    }
    if (j->depth > 0) {
        bool *has = items_flag(j);
        if (*has) putc(',', j->out);
        *has = true;
        newline(j);
    }
}

static void json_open(d9_json *j, char c) {
    before_item(j);
    putc(c, j->out);
    j->depth++;
    *items_flag(j) = false;
}

static void json_close(d9_json *j, char c) {
    if (j->depth <= 0) return;
    bool had = *items_flag(j);
    j->depth--;
    if (had) newline(j);
    putc(c, j->out);
    if (j->depth == 0 && j->pretty) putc('\n', j->out);
}

void d9_json_object_begin(d9_json *j) { json_open(j, '{'); }
void d9_json_object_end(d9_json *j) { json_close(j, '}'); }
void d9_json_array_begin(d9_json *j) { json_open(j, '['); }
void d9_json_array_end(d9_json *j) { json_close(j, ']'); }

/* Length of the valid UTF-8 sequence at s (RFC 3629: no overlongs, no surrogates, at most
 * U+10FFFF), or 0 when it is not one. */
static size_t utf8_len(const unsigned char *s, size_t left) {
    unsigned char c = s[0];
    size_t n;
    unsigned min2 = 0x80, max2 = 0xbf;
    if (c < 0x80) return 1;
    if (c >= 0xc2 && c <= 0xdf) n = 2;
    else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        if (c == 0xe0) min2 = 0xa0;
        if (c == 0xed) max2 = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        if (c == 0xf0) min2 = 0x90;
        if (c == 0xf4) max2 = 0x8f;
    } else return 0;
    if (left < n) return 0;
    if (s[1] < min2 || s[1] > max2) return 0;
    for (size_t i = 2; i < n; i++)
        if (s[i] < 0x80 || s[i] > 0xbf) return 0;
    return n;
}

void d9_json_escape(FILE *out, const char *str, size_t len) {
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < len) {
        unsigned char c = s[i];
        if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
            /* copy the run of plain ASCII in one go */
            size_t k = i + 1;
            while (k < len && s[k] >= 0x20 && s[k] < 0x80 && s[k] != '"' && s[k] != '\\') k++;
            fwrite(s + i, 1, k - i, out);
            i = k;
            continue;
        }
        switch (c) {
        case '"': fputs("\\\"", out); i++; continue;
        case '\\': fputs("\\\\", out); i++; continue;
        case '\n': fputs("\\n", out); i++; continue;
        case '\r': fputs("\\r", out); i++; continue;
        case '\t': fputs("\\t", out); i++; continue;
        case '\b': fputs("\\b", out); i++; continue;
        case '\f': fputs("\\f", out); i++; continue;
        default: break;
        }
        if (c < 0x20) {
            fprintf(out, "\\u%04x", c);
            i++;
            continue;
        }
        size_t n = utf8_len(s + i, len - i);
        if (n == 0) {
            fputs("\\ufffd", out);
            i++;
        } else {
            fwrite(s + i, 1, n, out);
            i += n;
        }
    }
}

void d9_json_key_n(d9_json *j, const char *key, size_t len) {
    before_item(j);
    putc('"', j->out);
    d9_json_escape(j->out, key, len);
    fputs(j->pretty ? "\": " : "\":", j->out);
    j->after_key = true;
}

void d9_json_key(d9_json *j, const char *key) { d9_json_key_n(j, key, strlen(key)); }

void d9_json_string_n(d9_json *j, const char *s, size_t len) {
    before_item(j);
    putc('"', j->out);
    d9_json_escape(j->out, s, len);
    putc('"', j->out);
}

void d9_json_string(d9_json *j, const char *s) { d9_json_string_n(j, s, strlen(s)); }

void d9_json_u64(d9_json *j, uint64_t v) {
    before_item(j);
    fprintf(j->out, "%" PRIu64, v);
}

void d9_json_i64(d9_json *j, int64_t v) {
    before_item(j);
    fprintf(j->out, "%" PRId64, v);
}

void d9_json_f64(d9_json *j, double v) {
    before_item(j);
    if (isfinite(v)) fprintf(j->out, "%.17g", v);
    else fputs("null", j->out);
}

void d9_json_bool(d9_json *j, bool v) {
    before_item(j);
    fputs(v ? "true" : "false", j->out);
}

void d9_json_null(d9_json *j) {
    before_item(j);
    fputs("null", j->out);
}

void d9_json_key_u64(d9_json *j, const char *key, uint64_t v) {
    d9_json_key(j, key);
    d9_json_u64(j, v);
}

void d9_json_key_f64(d9_json *j, const char *key, double v) {
    d9_json_key(j, key);
    d9_json_f64(j, v);
}

void d9_json_key_string(d9_json *j, const char *key, const char *v) {
    d9_json_key(j, key);
    if (v) d9_json_string(j, v);
    else d9_json_null(j);
}

void d9_json_key_bool(d9_json *j, const char *key, bool v) {
    d9_json_key(j, key);
    d9_json_bool(j, v);
}

void d9_json_hex(d9_json *j, const uint8_t *p, size_t len) {
    static const char digits[] = "0123456789abcdef";
    before_item(j);
    putc('"', j->out);
    for (size_t i = 0; i < len; i++) {
        putc(digits[p[i] >> 4], j->out);
        putc(digits[p[i] & 15], j->out);
    }
    putc('"', j->out);
}
