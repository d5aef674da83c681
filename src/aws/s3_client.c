/* S3 requests with libcurl, signed by sigv4.c (see s3_client.h). */
#include "aws/s3_client.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "common/plain_number.h"
#include "aws/libcurl_loader.h"
#include "aws/s3_credentials.h"
#include "aws/sha256.h"

#define ERROR_BODY_CAP 4096        /* of an error answer: enough for <Code> and <Message> */
#define MEM_BODY_CAP (64u << 20)   /* of a 2xx answer kept in memory (a listing page is ~300 KB) */
#define MAX_EXTRA 8

struct d9_s3_client {
    const d9_libcurl *curl;
    CURL *h;
    char *bucket, *region;
    char scheme[8];       /* http or https */
    char authority[512];  /* host[:port] of the endpoint, bucket. in front when virtual-hosted */
    char base_path[1024]; /* "/bucket" when path-style, else "" */
    char target[128];
    long stall_secs;
};

const char *d9_s3_client_target(const d9_s3_client *c) { return c->target; }
const char *d9_s3_client_bucket(const d9_s3_client *c) { return c->bucket; }

static bool host_is_ip_or_localhost(const char *authority) {
    if (authority[0] == '[') return true; /* IPv6 literal */
    size_t n = strcspn(authority, ":");
    if (n == 9 && strncmp(authority, "localhost", 9) == 0) return true;
    return strspn(authority, "0123456789.") == n;
}

#define MAX_ENDPOINT 512

bool d9_s3_endpoint_check(const char *url, char *why, size_t whylen) {
    if (strlen(url) > MAX_ENDPOINT) {
        snprintf(why, whylen, "longer than %d bytes", MAX_ENDPOINT);
        return false;
    }
    if (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0) {
        snprintf(why, whylen, "expected an http://HOST[:PORT] or https://HOST[:PORT] URL");
        return false;
    }
    const char *rest = strstr(url, "://") + 3;
    size_t alen = strcspn(rest, "/?#");
    if (alen == 0 || alen >= 400 || memchr(rest, '@', alen)) {
        snprintf(why, whylen, "no host, a host of 400 bytes or more, or user info in it");
        return false;
    }
    if (rest[alen] && strcmp(rest + alen, "/") != 0) {
        snprintf(why, whylen, "a path after the host is not supported");
        return false;
    }
    return true;
}

d9_s3_client *d9_s3_client_new(const d9_config *cfg, char *err, size_t errlen) {
    const d9_libcurl *curl = d9_libcurl_get();
    if (!curl) {
        snprintf(err, errlen, "%s", d9_libcurl_error());
        return NULL;
    }
    d9_s3_client *c = calloc(1, sizeof *c);
    if (!c) goto oom;
    c->curl = curl;
    c->bucket = strdup(cfg->s3_bucket ? cfg->s3_bucket : "");
    c->region = strdup(cfg->s3_region && *cfg->s3_region ? cfg->s3_region : "us-east-1");
    if (!c->bucket || !c->region) goto oom;
    snprintf(c->target, sizeof c->target, "s3://%s/", c->bucket);
    c->stall_secs = 30;
    const char *stall = getenv("DIAL9_S3_STALL_SECS");
    if (stall && *stall) {
        uint64_t v;
        if (!d9_plain_u64(stall, 1, 3600, &v)) {
            snprintf(err, errlen, "DIAL9_S3_STALL_SECS=\"%s\": expected seconds from 1 to 3600 (decimal digits only, "
                                  "no sign)", stall);
            goto fail;
        }
        c->stall_secs = (long)v;
    }

    char endpoint[600], why[200];
    if (cfg->s3_endpoint) snprintf(endpoint, sizeof endpoint, "%s", cfg->s3_endpoint);
    else snprintf(endpoint, sizeof endpoint, "https://s3.%s.amazonaws.com", c->region);
    if (!d9_s3_endpoint_check(endpoint, why, sizeof why)) {
        if (cfg->s3_endpoint)
            snprintf(err, errlen, "S3 endpoint \"%s\" (AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL or --endpoint): %s",
                     endpoint, why);
        else
            snprintf(err, errlen, "S3 region \"%s\" (AWS_REGION, AWS_DEFAULT_REGION or --region): its endpoint "
                     "\"%s\": %s", c->region, endpoint, why);
        goto fail;
    }
    const char *rest = strstr(endpoint, "://");
    snprintf(c->scheme, sizeof c->scheme, "%.*s", (int)(rest - endpoint), endpoint);
    rest += 3;
    size_t alen = strcspn(rest, "/?#");
    char authority[512];
    snprintf(authority, sizeof authority, "%.*s", (int)alen, rest);
    bool path_style = cfg->s3_path_style >= 0 ? cfg->s3_path_style == 1 : host_is_ip_or_localhost(authority);
    if (path_style) {
        snprintf(c->authority, sizeof c->authority, "%s", authority);
        snprintf(c->base_path, sizeof c->base_path, "/%s", c->bucket);
    } else {
        if (snprintf(c->authority, sizeof c->authority, "%s.%s", c->bucket, authority) >= (int)sizeof c->authority) {
            snprintf(err, errlen, "S3 endpoint \"%s\" with the bucket \"%s\" (DIAL9_S3_BUCKET or --bucket): host "
                     "name too long", endpoint, c->bucket);
            goto fail;
        }
        c->base_path[0] = 0;
    }
    c->h = curl->easy_init();
    if (!c->h) goto oom;
    return c;
oom:
    snprintf(err, errlen, "out of memory");
fail:
    d9_s3_client_free(c);
    return NULL;
}

void d9_s3_client_free(d9_s3_client *c) {
    if (!c) return;
    if (c->h) c->curl->easy_cleanup(c->h);
    free(c->bucket);
    free(c->region);
    free(c);
}

void d9_s3_answer_free(d9_s3_answer *a) {
    free(a->body);
    a->body = NULL;
    a->body_len = 0;
}

typedef struct transfer {
    d9_s3_client *c;
    const d9_s3_body *body;
    uint64_t sent;
    d9_s3_answer *ans;
    size_t cap;         /* of ans->body */
    bool status_known, ok_status, write_failed;
    bool (*give_up)(void *);
    void *ctx;
} transfer;

static size_t read_body(char *buf, size_t size, size_t n, void *arg) {
    transfer *t = arg;
    const d9_s3_body *b = t->body;
    uint64_t left = b->length - t->sent;
    size_t want = size * n < left ? size * n : (size_t)left;
    if (want == 0) return 0;
    if (b->fd < 0) {
        memcpy(buf, (const char *)b->mem + t->sent, want);
        t->sent += want;
        return want;
    }
    for (;;) {
        ssize_t r = pread(b->fd, buf, want, (off_t)(b->offset + t->sent));
        if (r > 0) {
            t->sent += (uint64_t)r;
            return (size_t)r;
        }
        if (r == 0) return CURL_READFUNC_ABORT; /* the file shrank */
        if (errno != EINTR) return CURL_READFUNC_ABORT;
    }
}

static bool grow_to(transfer *t, size_t need, size_t limit) {
    if (need + 1 <= t->cap) return true;
    if (need + 1 > limit) return false;
    size_t cap = t->cap ? t->cap * 2 : 8192;
    while (cap < need + 1) cap *= 2;
    if (cap > limit) cap = limit;
    char *p = realloc(t->ans->body, cap);
    if (!p) return false;
    t->ans->body = p;
    t->cap = cap;
    return true;
}

static size_t keep_answer(char *buf, size_t size, size_t n, void *arg) {
    transfer *t = arg;
    d9_s3_answer *a = t->ans;
    size_t len = size * n;
    if (!t->status_known) {
        long status = 0;
        t->c->curl->easy_getinfo(t->c->h, CURLINFO_RESPONSE_CODE, &status);
        t->ok_status = status >= 200 && status < 300;
        t->status_known = true;
    }
    if (t->ok_status && a->out_fd >= 0) {
        for (size_t done = 0; done < len;) {
            ssize_t w = write(a->out_fd, buf + done, len - done);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) {
                t->write_failed = true;
                return 0; /* aborts the transfer */
            }
            done += (size_t)w;
        }
        a->written += len;
        return len;
    }
    size_t limit = t->ok_status ? MEM_BODY_CAP : ERROR_BODY_CAP;
    if (!grow_to(t, a->body_len + len, limit)) {
        if (t->ok_status) return 0; /* too big to keep: fail rather than truncate */
        grow_to(t, limit - 1, limit); /* an error answer's first bytes, where <Code> is, even from one big chunk */
        size_t room = t->cap > a->body_len + 1 ? t->cap - a->body_len - 1 : 0;
        len = room < len ? room : len;
        if (!len) return size * n;
    }
    memcpy(a->body + a->body_len, buf, len);
    a->body_len += len;
    a->body[a->body_len] = 0;
    return size * n;
}

static size_t keep_header(char *buf, size_t size, size_t n, void *arg) {
    transfer *t = arg;
    size_t len = size * n;
    if (len > 5 && strncasecmp(buf, "etag:", 5) == 0) {
        const char *v = buf + 5;
        size_t vl = len - 5;
        while (vl && (*v == ' ' || *v == '\t')) v++, vl--;
        while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' ')) vl--;
        snprintf(t->ans->etag, sizeof t->ans->etag, "%.*s", (int)vl, v);
    }
    return len;
}

static int progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un) {
    transfer *t = arg;
    return t->give_up && t->give_up(t->ctx) ? 1 : 0; /* nonzero aborts the transfer */
}

bool d9_s3_xml_next(const char **from, const char *tag, char *out, size_t len) {
    char open[64], close_[64];
    snprintf(open, sizeof open, "<%s>", tag);
    snprintf(close_, sizeof close_, "</%s>", tag);
    if (len) out[0] = 0;
    const char *a = strstr(*from, open);
    if (!a) return false;
    a += strlen(open);
    const char *b = strstr(a, close_);
    if (!b) return false;
    *from = b + strlen(close_);
    static const struct { const char *ent; char ch; } ents[] = {
        {"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
    size_t o = 0;
    for (const char *p = a; p < b && o + 1 < len;) {
        bool done = false;
        if (*p == '&')
            for (size_t i = 0; i < sizeof ents / sizeof *ents; i++) {
                size_t el = strlen(ents[i].ent);
                if ((size_t)(b - p) >= el && strncmp(p, ents[i].ent, el) == 0) {
                    out[o++] = ents[i].ch;
                    p += el;
                    done = true;
                    break;
                }
            }
        if (!done) out[o++] = *p++;
    }
    if (len) out[o] = 0;
    return true;
}

static d9_s3_result classify(long status, const char *code) {
    if (status >= 200 && status < 300) return D9_S3_OK;
    static const char *fatal[] = {"AccessDenied", "NoSuchBucket", "InvalidAccessKeyId", "SignatureDoesNotMatch",
                                  "AllAccessDisabled", "InvalidBucketName", "AccountProblem"};
    for (size_t i = 0; i < sizeof fatal / sizeof *fatal; i++)
        if (strcmp(code, fatal[i]) == 0) return D9_S3_FATAL;
    if (status >= 500 || status == 408 || status == 429 || strcmp(code, "SlowDown") == 0 ||
        strcmp(code, "RequestTimeout") == 0 || strcmp(code, "RequestTimeTooSkewed") == 0 ||
        strcmp(code, "ExpiredToken") == 0 || strcmp(code, "TokenRefreshRequired") == 0)
        return D9_S3_RETRY;
    if (status == 403 || status == 401) return D9_S3_FATAL; /* forbidden, whatever the code */
    return D9_S3_REJECTED;
}

static struct curl_slist *add_header(const d9_libcurl *c, struct curl_slist *l, const char *name, const char *value,
                                     bool *ok) {
    char line[8192];
    snprintf(line, sizeof line, "%s: %s", name, value);
    struct curl_slist *n = c->slist_append(l, line);
    if (!n) *ok = false;
    return n ? n : l;
}

/* The hex SHA-256 of the body (a file range is read once for it). */
static int hash_body(const d9_s3_body *b, char hex[2 * D9_SHA256_LEN + 1], char *err, size_t errlen) {
    uint8_t digest[D9_SHA256_LEN];
    if (b->fd < 0) d9_sha256_buf(b->mem, (size_t)b->length, digest);
    else if (d9_sha256_file_range(b->fd, b->offset, b->length, digest, err, errlen) != 0) return -1;
    d9_hex(digest, sizeof digest, hex);
    return 0;
}

d9_s3_result d9_s3_request(d9_s3_client *c, const char *method, const char *key, const char *query,
                           const d9_sigv4_header *extra, size_t nextra, const d9_s3_body *body,
                           d9_s3_answer *ans, bool (*give_up)(void *), void *ctx, char *err, size_t errlen) {
    const d9_libcurl *lc = c->curl;
    d9_s3_body none = D9_S3_NO_BODY;
    if (!body) body = &none;
    bool has_body = body->fd >= 0 || body->mem;
    ans->status = 0;
    ans->code[0] = ans->message[0] = ans->etag[0] = 0;
    ans->written = 0;
    d9_s3_answer_free(ans);
    if (nextra > MAX_EXTRA) {
        snprintf(err, errlen, "too many headers");
        return D9_S3_REJECTED;
    }
    d9_s3_credentials cred;
    int cr_rc = d9_s3_credentials_load(&cred, c->region, err, errlen);
    if (cr_rc != D9_CREDS_OK) return cr_rc == D9_CREDS_RETRY ? D9_S3_RETRY : D9_S3_FATAL;

    char hash_hex[2 * D9_SHA256_LEN + 1];
    if (body->sha256_hex) {
        snprintf(hash_hex, sizeof hash_hex, "%s", body->sha256_hex);
    } else if (has_body) {
        if (hash_body(body, hash_hex, err, errlen) != 0) return D9_S3_REJECTED;
    } else {
        uint8_t d[D9_SHA256_LEN];
        d9_sha256_buf("", 0, d);
        d9_hex(d, sizeof d, hash_hex);
    }

    char full_path[2048], uri[6144], url[12288];
    if (snprintf(full_path, sizeof full_path, "%s/%s", c->base_path, key) >= (int)sizeof full_path ||
        d9_uri_encode(full_path, true, uri, sizeof uri) != 0) {
        snprintf(err, errlen, "object key too long");
        return D9_S3_REJECTED;
    }
    if (snprintf(url, sizeof url, "%s://%s%s%s%s", c->scheme, c->authority, uri, query[0] ? "?" : "", query) >=
        (int)sizeof url) {
        snprintf(err, errlen, "request too long");
        return D9_S3_REJECTED;
    }

    char amz_date[17];
    struct tm tm;
    time_t now = time(NULL);
    gmtime_r(&now, &tm);
    strftime(amz_date, sizeof amz_date, "%Y%m%dT%H%M%SZ", &tm);
    d9_sigv4_header h[MAX_EXTRA + 4];
    size_t nh = 0;
    h[nh++] = (d9_sigv4_header){"host", c->authority};
    for (size_t i = 0; i < nextra; i++) h[nh++] = extra[i];
    h[nh++] = (d9_sigv4_header){"x-amz-content-sha256", hash_hex};
    h[nh++] = (d9_sigv4_header){"x-amz-date", amz_date};
    if (cred.session_token[0]) h[nh++] = (d9_sigv4_header){"x-amz-security-token", cred.session_token};
    d9_sigv4_request req = {.method = method, .canonical_uri = uri, .canonical_query = query, .headers = h,
                            .nheaders = nh, .payload_hash = hash_hex, .amz_date = amz_date,
                            .region = c->region, .service = "s3", .access_key = cred.access_key,
                            .secret_key = cred.secret_key};
    char auth[1024];
    if (d9_sigv4_authorization(&req, auth, sizeof auth, NULL, 0) != 0) {
        snprintf(err, errlen, "cannot sign the request (credentials too long?)");
        return D9_S3_FATAL;
    }
    bool ok = true;
    struct curl_slist *hl = NULL;
    for (size_t i = 0; i < nh; i++) hl = add_header(lc, hl, h[i].name, h[i].value, &ok); /* copied */
    memset(&cred, 0, sizeof cred);
    hl = add_header(lc, hl, "authorization", auth, &ok);
    hl = lc->slist_append(hl, "Expect:"); /* no 100-continue round trip */
    if (!ok || !hl) {
        if (hl) lc->slist_free_all(hl);
        snprintf(err, errlen, "out of memory");
        return D9_S3_RETRY;
    }
    transfer t = {.c = c, .body = body, .ans = ans, .give_up = give_up, .ctx = ctx};
    CURL *e = c->h;
    lc->easy_reset(e);
    lc->easy_setopt(e, CURLOPT_URL, url);
    lc->easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    lc->easy_setopt(e, CURLOPT_NOSIGNAL, 1L); /* never touch the application's signals */
    if (strcmp(method, "PUT") == 0) {
        lc->easy_setopt(e, CURLOPT_UPLOAD, 1L);
        lc->easy_setopt(e, CURLOPT_INFILESIZE_LARGE, (curl_off_t)body->length);
    } else if (strcmp(method, "POST") == 0) {
        lc->easy_setopt(e, CURLOPT_POST, 1L);
        lc->easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body->length);
    } else if (strcmp(method, "HEAD") == 0) {
        lc->easy_setopt(e, CURLOPT_NOBODY, 1L);
    } else if (strcmp(method, "GET") != 0) {
        lc->easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
    }
    if (has_body || strcmp(method, "POST") == 0) {
        lc->easy_setopt(e, CURLOPT_READFUNCTION, read_body);
        lc->easy_setopt(e, CURLOPT_READDATA, &t);
    }
    lc->easy_setopt(e, CURLOPT_HTTPHEADER, hl);
    lc->easy_setopt(e, CURLOPT_WRITEFUNCTION, keep_answer);
    lc->easy_setopt(e, CURLOPT_WRITEDATA, &t);
    lc->easy_setopt(e, CURLOPT_HEADERFUNCTION, keep_header);
    lc->easy_setopt(e, CURLOPT_HEADERDATA, &t);
    lc->easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
    lc->easy_setopt(e, CURLOPT_XFERINFOFUNCTION, progress);
    lc->easy_setopt(e, CURLOPT_XFERINFODATA, &t);
    lc->easy_setopt(e, CURLOPT_CONNECTTIMEOUT, 10L);
    /* a stalled transfer (under 1 KiB/s for stall_secs) is abandoned and retried */
    lc->easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1024L);
    lc->easy_setopt(e, CURLOPT_LOW_SPEED_TIME, c->stall_secs);
    lc->easy_setopt(e, CURLOPT_USERAGENT, "dial9-c/" D9_VERSION);
    CURLcode cr = lc->easy_perform(e);
    lc->slist_free_all(hl);
    const char *shown = key[0] ? key : "";
    if (cr != CURLE_OK) {
        if (t.write_failed)
            snprintf(err, errlen, "%s %s%s: cannot write the answer: %s", method, c->target, shown, strerror(errno));
        else if (cr == CURLE_OPERATION_TIMEDOUT)
            snprintf(err, errlen, "%s %s%s: %s (stalled: under 1 KiB/s for %ld s)", method, c->target, shown,
                     lc->easy_strerror(cr), c->stall_secs);
        else
            snprintf(err, errlen, "%s %s%s: %s", method, c->target, shown, lc->easy_strerror(cr));
        d9_s3_answer_free(ans);
        return t.write_failed ? D9_S3_REJECTED : D9_S3_RETRY;
    }
    lc->easy_getinfo(e, CURLINFO_RESPONSE_CODE, &ans->status);
    if (!(ans->status >= 200 && ans->status < 300)) {
        const char *p = ans->body ? ans->body : "";
        d9_s3_xml_next(&p, "Code", ans->code, sizeof ans->code);
        p = ans->body ? ans->body : "";
        d9_s3_xml_next(&p, "Message", ans->message, sizeof ans->message);
    }
    d9_s3_result res = classify(ans->status, ans->code);
    if (strcmp(ans->code, "ExpiredToken") == 0 || strcmp(ans->code, "TokenRefreshRequired") == 0)
        d9_s3_credentials_forget(); /* the retry fetches new temporary credentials */
    if (res != D9_S3_OK) {
        snprintf(err, errlen, "%s %s%s: HTTP %ld %s%s%s", method, c->target, shown, ans->status,
                 ans->code[0] ? ans->code : "(no error code)", ans->message[0] ? ": " : "", ans->message);
        d9_s3_answer_free(ans);
    }
    return res;
}
