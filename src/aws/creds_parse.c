/* Decoders of the credential services' answers (see creds_parse.h). */
#include "aws/creds_parse.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aws/s3_client.h"

#define MAX_ANSWER (1u << 20) /* a credentials answer is ~2 KB; anything far bigger is not one */

/* ---- ISO 8601 timestamps ---- */

static bool digits(const char **p, int n, int *v) {
    *v = 0;
    for (int i = 0; i < n; i++) {
        char ch = (*p)[i];
        if (ch < '0' || ch > '9') return false;
        *v = *v * 10 + (ch - '0');
    }
    *p += n;
    return true;
}

static bool leap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

/* Days from 1970-01-01 to y-m-d of the proleptic Gregorian calendar. */
static long days_from_civil(int y, int m, int d) {
    y -= m <= 2;
    long era = (y >= 0 ? y : y - 399) / 400;
    long yoe = y - era * 400;
    long doy = (153L * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

int d9_creds_parse_time(const char *s, time_t *out) {
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    const char *p = s;
    int y, mo, d, h, mi, se;
    if (!digits(&p, 4, &y) || *p++ != '-' || !digits(&p, 2, &mo) || *p++ != '-' || !digits(&p, 2, &d)) return -1;
    if (*p != 'T' && *p != 't' && *p != ' ') return -1;
    p++;
    if (!digits(&p, 2, &h) || *p++ != ':' || !digits(&p, 2, &mi) || *p++ != ':' || !digits(&p, 2, &se)) return -1;
    if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] + (mo == 2 && leap(y)) || h > 23 || mi > 59 ||
        se > 60)
        return -1;
    if (*p == '.') { /* a fraction of a second: dropped (an expiry a little early is harmless) */
        p++;
        size_t n = strspn(p, "0123456789");
        if (n == 0 || n > 9) return -1;
        p += n;
    }
    long offset = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int sign = *p++ == '-' ? -1 : 1, oh, om;
        if (!digits(&p, 2, &oh) || *p++ != ':' || !digits(&p, 2, &om) || oh > 23 || om > 59) return -1;
        offset = sign * (oh * 3600L + om * 60L);
    } else {
        return -1; /* a time without a zone is ambiguous */
    }
    if (*p) return -1;
    long long t = (long long)days_from_civil(y, mo, d) * 86400 + h * 3600LL + mi * 60LL + se - offset;
    if (t < 0) return -1;
    *out = (time_t)t;
    return 0;
}

/* ---- JSON: one object's string members ---- */

typedef struct cursor {
    const char *p, *end;
} cursor;

static void skip_ws(cursor *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) c->p++;
}

static int hex4(const char *p, const char *end, unsigned *v) {
    if (end - p < 4) return -1;
    *v = 0;
    for (int i = 0; i < 4; i++) {
        char ch = p[i];
        unsigned x = ch >= '0' && ch <= '9' ? (unsigned)(ch - '0')
                     : ch >= 'a' && ch <= 'f' ? (unsigned)(ch - 'a' + 10)
                     : ch >= 'A' && ch <= 'F' ? (unsigned)(ch - 'A' + 10)
                                              : 16u;
        if (x > 15) return -1;
        *v = *v << 4 | x;
    }
    return 0;
}

/* Appends `n` bytes; false when they do not fit (the value is then refused, not cut). */
static bool put(char *out, size_t outlen, size_t *o, const char *b, size_t n) {
    if (!out) return true;
    if (*o + n + 1 > outlen) return false;
    memcpy(out + *o, b, n);
    *o += n;
    out[*o] = 0;
    return true;
}

/* A JSON string at c->p (its opening quote), decoded into out (NULL: skipped). 0, -1 malformed,
 * -2 too long for out. */
static int json_str(cursor *c, char *out, size_t outlen) {
    if (c->p >= c->end || *c->p != '"') return -1;
    c->p++;
    size_t o = 0;
    bool fits = true;
    if (out && outlen) out[0] = 0;
    while (c->p < c->end) {
        unsigned char ch = (unsigned char)*c->p++;
        if (ch == '"') return fits ? 0 : -2;
        if (ch < 0x20) return -1;
        if (ch != '\\') {
            fits = fits && put(out, outlen, &o, (const char *)&ch, 1);
            continue;
        }
        if (c->p >= c->end) return -1;
        char e = *c->p++, b[4];
        size_t n = 1;
        switch (e) {
        case '"': case '\\': case '/': b[0] = e; break;
        case 'b': b[0] = '\b'; break;
        case 'f': b[0] = '\f'; break;
        case 'n': b[0] = '\n'; break;
        case 'r': b[0] = '\r'; break;
        case 't': b[0] = '\t'; break;
        case 'u': {
            unsigned u, lo;
            if (hex4(c->p, c->end, &u) != 0) return -1;
            c->p += 4;
            if (u >= 0xdc00 && u <= 0xdfff) return -1;
            if (u >= 0xd800 && u <= 0xdbff) { /* a surrogate pair */
                if (c->end - c->p < 6 || c->p[0] != '\\' || c->p[1] != 'u' || hex4(c->p + 2, c->end, &lo) != 0 ||
                    lo < 0xdc00 || lo > 0xdfff)
                    return -1;
                c->p += 6;
                u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
            }
            if (u == 0) return -1; /* would cut the C string */
            if (u < 0x80) b[0] = (char)u;
            else if (u < 0x800) b[0] = (char)(0xc0 | u >> 6), b[1] = (char)(0x80 | (u & 0x3f)), n = 2;
            else if (u < 0x10000)
                b[0] = (char)(0xe0 | u >> 12), b[1] = (char)(0x80 | ((u >> 6) & 0x3f)), b[2] = (char)(0x80 | (u & 0x3f)),
                n = 3;
            else
                b[0] = (char)(0xf0 | u >> 18), b[1] = (char)(0x80 | ((u >> 12) & 0x3f)),
                b[2] = (char)(0x80 | ((u >> 6) & 0x3f)), b[3] = (char)(0x80 | (u & 0x3f)), n = 4;
            break;
        }
        default: return -1;
        }
        fits = fits && put(out, outlen, &o, b, n);
    }
    return -1; /* unterminated */
}

/* Any JSON value (nested ones by counting brackets; strings decoded to find their end). */
static int skip_value(cursor *c) {
    long depth = 0;
    do {
        skip_ws(c);
        if (c->p >= c->end) return -1;
        char ch = *c->p;
        if (ch == '"') {
            if (json_str(c, NULL, 0) != 0) return -1;
        } else if (ch == '{' || ch == '[') {
            depth++, c->p++;
        } else if (ch == '}' || ch == ']') {
            if (--depth < 0) return -1;
            c->p++;
        } else if (ch == ',' || ch == ':') {
            if (depth == 0) return -1;
            c->p++;
        } else {
            size_t n = 0;
            while (c->p + n < c->end && strchr("+-.0123456789eEtruefalsn", c->p[n]) && c->p[n]) n++;
            if (n == 0) return -1;
            c->p += n;
        }
    } while (depth > 0);
    return 0;
}

int d9_creds_json_string(const char *body, size_t len, const char *key, char *out, size_t outlen) {
    cursor c = {body, body + len};
    if (outlen) out[0] = 0;
    bool found = false;
    skip_ws(&c);
    if (c.p >= c.end || *c.p++ != '{') return -1;
    skip_ws(&c);
    if (c.p < c.end && *c.p == '}') {
        c.p++;
    } else {
        for (;;) { /* the whole object is read: a cut or malformed answer is refused */
            char name[64];
            skip_ws(&c);
            int r = json_str(&c, name, sizeof name);
            if (r == -1) return -1;
            bool match = r == 0 && !found && strcmp(name, key) == 0;
            skip_ws(&c);
            if (c.p >= c.end || *c.p++ != ':') return -1;
            skip_ws(&c);
            if (match && c.p < c.end && *c.p == '"') {
                if (json_str(&c, out, outlen) != 0) return -1;
                found = true;
            } else if (skip_value(&c) != 0) {
                return -1;
            }
            skip_ws(&c);
            if (c.p >= c.end) return -1;
            char sep = *c.p++;
            if (sep == '}') break;
            if (sep != ',') return -1;
        }
    }
    skip_ws(&c);
    if (c.p != c.end) return -1;
    if (!found && outlen) out[0] = 0;
    return found ? 0 : -1;
}

/* The expiration text into c->expiration; "" means none. */
static int take_expiration(const char *text, d9_s3_credentials *c, char *err, size_t errlen) {
    c->expiration = 0;
    if (!text[0]) return 0;
    time_t t;
    if (d9_creds_parse_time(text, &t) != 0) {
        snprintf(err, errlen, "Expiration \"%.40s\" is not an ISO 8601 time", text);
        return -1;
    }
    c->expiration = t;
    return 0;
}

int d9_creds_parse_json(const char *body, size_t len, d9_s3_credentials *c, char *err, size_t errlen) {
    char code[64], when[64];
    if (len > MAX_ANSWER) {
        snprintf(err, errlen, "answer too long (%zu bytes)", len);
        return -1;
    }
    if (d9_creds_json_string(body, len, "Code", code, sizeof code) == 0 && strcmp(code, "Success") != 0) {
        char msg[256];
        d9_creds_json_string(body, len, "Message", msg, sizeof msg);
        snprintf(err, errlen, "answer Code \"%s\"%s%s", code, msg[0] ? ": " : "", msg);
        return -1;
    }
    if (d9_creds_json_string(body, len, "AccessKeyId", c->access_key, sizeof c->access_key) != 0 ||
        !c->access_key[0] ||
        d9_creds_json_string(body, len, "SecretAccessKey", c->secret_key, sizeof c->secret_key) != 0 ||
        !c->secret_key[0]) {
        snprintf(err, errlen, "no AccessKeyId and SecretAccessKey strings in the JSON answer");
        return -1;
    }
    if (d9_creds_json_string(body, len, "Token", c->session_token, sizeof c->session_token) != 0)
        c->session_token[0] = 0;
    if (d9_creds_json_string(body, len, "Expiration", when, sizeof when) != 0) when[0] = 0;
    return take_expiration(when, c, err, errlen);
}

/* ---- STS XML ---- */

int d9_creds_parse_sts(const char *body, size_t len, d9_s3_credentials *c, char *err, size_t errlen) {
    if (len > MAX_ANSWER) {
        snprintf(err, errlen, "answer too long (%zu bytes)", len);
        return -1;
    }
    char *text = malloc(len + 1);
    if (!text) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    memcpy(text, body, len);
    text[len] = 0;
    int rc = -1;
    char *open = strstr(text, "<Credentials>"), *close_ = open ? strstr(open, "</Credentials>") : NULL;
    if (!close_) {
        char code[128], msg[512];
        const char *p = text;
        d9_s3_xml_next(&p, "Code", code, sizeof code);
        p = text;
        d9_s3_xml_next(&p, "Message", msg, sizeof msg);
        if (code[0]) snprintf(err, errlen, "%s%s%s", code, msg[0] ? ": " : "", msg);
        else snprintf(err, errlen, "no <Credentials> in the answer");
        goto out;
    }
    *close_ = 0; /* the fields are looked for inside <Credentials> only */
    char when[64];
    const char *p = open;
    bool ak = d9_s3_xml_next(&p, "AccessKeyId", c->access_key, sizeof c->access_key) && c->access_key[0];
    p = open;
    bool sk = d9_s3_xml_next(&p, "SecretAccessKey", c->secret_key, sizeof c->secret_key) && c->secret_key[0];
    p = open;
    if (!d9_s3_xml_next(&p, "SessionToken", c->session_token, sizeof c->session_token)) c->session_token[0] = 0;
    p = open;
    if (!d9_s3_xml_next(&p, "Expiration", when, sizeof when)) when[0] = 0;
    if (!ak || !sk) {
        snprintf(err, errlen, "no AccessKeyId and SecretAccessKey in <Credentials>");
        goto out;
    }
    if (strlen(c->access_key) + 1 >= sizeof c->access_key || strlen(c->secret_key) + 1 >= sizeof c->secret_key ||
        strlen(c->session_token) + 1 >= sizeof c->session_token) {
        snprintf(err, errlen, "a credential in <Credentials> is too long");
        goto out;
    }
    rc = take_expiration(when, c, err, errlen);
out:
    free(text);
    return rc;
}
