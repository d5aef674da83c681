/* S3 PutObject with libcurl (dlopen'ed), signed by sigv4.c. The file is read twice: once to
 * hash it (the signature covers the body's SHA-256), once to send it, 64 KiB at a time. */
#include "sinks/step_upload.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sinks/libcurl_loader.h"
#include "sinks/s3_credentials.h"
#include "sinks/s3_key.h"
#include "sinks/sha256.h"
#include "sinks/sigv4.h"

#define PIECE (64 * 1024)
#define BODY_CAP 4096 /* of an error answer: enough for <Code> and <Message> */

struct d9_uploader {
    const d9_libcurl *curl;
    CURL *h;
    char *bucket, *prefix, *region, *service;
    char scheme[8];        /* http or https */
    char authority[512];   /* host[:port] of the endpoint, bucket. in front when virtual-hosted */
    char base_path[1024];  /* "/bucket" when path-style, else "" */
    char host[256], boot_id[64];
    char target[128];
};

const char *d9_uploader_target(const d9_uploader *u) { return u->target; }

static bool host_is_ip_or_localhost(const char *authority) {
    if (authority[0] == '[') return true; /* IPv6 literal */
    size_t n = strcspn(authority, ":");
    if (n == 9 && strncmp(authority, "localhost", 9) == 0) return true;
    return strspn(authority, "0123456789.") == n;
}

static void read_line(const char *path, char *out, size_t len) {
    out[0] = 0;
    FILE *f = fopen(path, "re");
    if (!f) return;
    if (fgets(out, (int)len, f)) out[strcspn(out, "\n")] = 0;
    fclose(f);
}

d9_uploader *d9_uploader_new(const d9_config *cfg, char *err, size_t errlen) {
    const d9_libcurl *curl = d9_libcurl_get();
    if (!curl) {
        snprintf(err, errlen, "%s", d9_libcurl_error());
        return NULL;
    }
    d9_uploader *u = calloc(1, sizeof *u);
    if (!u) goto oom;
    u->curl = curl;
    u->bucket = strdup(cfg->s3_bucket);
    u->prefix = strdup(cfg->s3_prefix ? cfg->s3_prefix : "dial9-traces");
    u->region = strdup(cfg->s3_region && *cfg->s3_region ? cfg->s3_region : "us-east-1");
    u->service = strdup(cfg->service ? cfg->service : "unknown");
    if (!u->bucket || !u->prefix || !u->region || !u->service) goto oom;
    snprintf(u->target, sizeof u->target, "s3://%s/", u->bucket);

    char endpoint[600];
    if (cfg->s3_endpoint) snprintf(endpoint, sizeof endpoint, "%s", cfg->s3_endpoint);
    else snprintf(endpoint, sizeof endpoint, "https://s3.%s.amazonaws.com", u->region);
    const char *rest = strstr(endpoint, "://");
    if (!rest || rest - endpoint > 5) {
        snprintf(err, errlen, "S3 endpoint \"%s\": expected http://HOST[:PORT] or https://...", endpoint);
        goto fail;
    }
    snprintf(u->scheme, sizeof u->scheme, "%.*s", (int)(rest - endpoint), endpoint);
    rest += 3;
    size_t alen = strcspn(rest, "/?#");
    if (alen == 0 || alen >= 400 || memchr(rest, '@', alen)) {
        snprintf(err, errlen, "S3 endpoint \"%s\": no host, or user info in it", endpoint);
        goto fail;
    }
    if (rest[alen] && strcmp(rest + alen, "/") != 0) {
        snprintf(err, errlen, "S3 endpoint \"%s\": a path after the host is not supported", endpoint);
        goto fail;
    }
    char authority[512];
    snprintf(authority, sizeof authority, "%.*s", (int)alen, rest);
    bool path_style = cfg->s3_path_style >= 0 ? cfg->s3_path_style == 1 : host_is_ip_or_localhost(authority);
    if (path_style) {
        snprintf(u->authority, sizeof u->authority, "%s", authority);
        snprintf(u->base_path, sizeof u->base_path, "/%s", u->bucket);
    } else {
        if (snprintf(u->authority, sizeof u->authority, "%s.%s", u->bucket, authority) >= (int)sizeof u->authority) {
            snprintf(err, errlen, "S3 endpoint \"%s\": host name too long", endpoint);
            goto fail;
        }
        u->base_path[0] = 0;
    }
    if (gethostname(u->host, sizeof u->host) != 0) snprintf(u->host, sizeof u->host, "unknown");
    u->host[sizeof u->host - 1] = 0;
    read_line("/proc/sys/kernel/random/boot_id", u->boot_id, sizeof u->boot_id);
    u->h = curl->easy_init();
    if (!u->h) goto oom;
    return u;
oom:
    snprintf(err, errlen, "out of memory");
fail:
    d9_uploader_free(u);
    return NULL;
}

void d9_uploader_free(d9_uploader *u) {
    if (!u) return;
    if (u->h) u->curl->easy_cleanup(u->h);
    free(u->bucket);
    free(u->prefix);
    free(u->region);
    free(u->service);
    free(u);
}

typedef struct transfer {
    int fd;
    char body[BODY_CAP];
    size_t body_len;
    bool (*give_up)(void *);
    void *ctx;
} transfer;

static size_t read_body(char *buf, size_t size, size_t n, void *arg) {
    transfer *t = arg;
    for (;;) {
        ssize_t r = read(t->fd, buf, size * n);
        if (r >= 0) return (size_t)r;
        if (errno != EINTR) return CURL_READFUNC_ABORT;
    }
}

static size_t keep_answer(char *buf, size_t size, size_t n, void *arg) {
    transfer *t = arg;
    size_t len = size * n, room = sizeof t->body - 1 - t->body_len;
    size_t take = len < room ? len : room;
    memcpy(t->body + t->body_len, buf, take);
    t->body_len += take;
    t->body[t->body_len] = 0;
    return len;
}

static int progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un) {
    transfer *t = arg;
    return t->give_up && t->give_up(t->ctx) ? 1 : 0; /* nonzero aborts the transfer */
}

/* The text of <tag>...</tag> in an S3 error answer. */
static void xml_field(const char *body, const char *tag, char *out, size_t len) {
    char open[64], close_[64];
    snprintf(open, sizeof open, "<%s>", tag);
    snprintf(close_, sizeof close_, "</%s>", tag);
    out[0] = 0;
    const char *a = strstr(body, open);
    if (!a) return;
    a += strlen(open);
    const char *b = strstr(a, close_);
    if (!b) return;
    snprintf(out, len, "%.*s", (int)(b - a), a);
}

static d9_upload_result classify(long status, const char *code) {
    if (status >= 200 && status < 300) return D9_UPLOAD_OK;
    static const char *fatal[] = {"AccessDenied", "NoSuchBucket", "InvalidAccessKeyId", "SignatureDoesNotMatch",
                                  "AllAccessDisabled", "InvalidBucketName", "AccountProblem"};
    for (size_t i = 0; i < sizeof fatal / sizeof *fatal; i++)
        if (strcmp(code, fatal[i]) == 0) return D9_UPLOAD_FATAL;
    if (status >= 500 || status == 408 || status == 429 || strcmp(code, "SlowDown") == 0 ||
        strcmp(code, "RequestTimeout") == 0 || strcmp(code, "RequestTimeTooSkewed") == 0 ||
        strcmp(code, "ExpiredToken") == 0 || strcmp(code, "TokenRefreshRequired") == 0)
        return D9_UPLOAD_RETRY;
    if (status == 403 || status == 401) return D9_UPLOAD_FATAL; /* forbidden, whatever the code */
    return D9_UPLOAD_REJECTED;
}

static struct curl_slist *add_header(const d9_libcurl *c, struct curl_slist *l, const char *name, const char *value,
                                     bool *ok) {
    char line[8192];
    snprintf(line, sizeof line, "%s: %s", name, value);
    struct curl_slist *n = c->slist_append(l, line);
    if (!n) *ok = false;
    return n ? n : l;
}

d9_upload_result d9_uploader_put(d9_uploader *u, const char *path, uint64_t index, time_t start,
                                 const char *service, const char *boot_id,
                                 bool (*give_up)(void *), void *ctx, char *key, size_t keylen,
                                 char *err, size_t errlen) {
    const d9_libcurl *c = u->curl;
    if (!service) service = u->service;
    if (!boot_id) boot_id = u->boot_id;
    const char *suffix = strlen(path) > 3 && strcmp(path + strlen(path) - 3, ".gz") == 0 ? ".bin.gz" : ".bin";
    if (d9_s3_key(key, keylen, u->prefix, service, u->host, boot_id, start, index, suffix) != 0) {
        snprintf(key, keylen, "?");
        snprintf(err, errlen, "object key too long");
        return D9_UPLOAD_REJECTED;
    }
    d9_s3_credentials cred;
    if (d9_s3_credentials_load(&cred, err, errlen) != 0) return D9_UPLOAD_FATAL;

    transfer t = {.fd = open(path, O_RDONLY | O_CLOEXEC), .give_up = give_up, .ctx = ctx};
    if (t.fd < 0) {
        snprintf(err, errlen, "open %s: %s", path, strerror(errno));
        return D9_UPLOAD_REJECTED;
    }
    d9_upload_result res = D9_UPLOAD_REJECTED;
    struct curl_slist *hl = NULL;
    unsigned char *buf = malloc(PIECE);
    struct stat st;
    if (!buf || fstat(t.fd, &st) != 0) {
        snprintf(err, errlen, "%s: %s", path, buf ? strerror(errno) : "out of memory");
        goto done;
    }
    /* the body's hash, for the signature and the checksum S3 verifies */
    d9_sha256 s;
    d9_sha256_init(&s);
    uint64_t hashed = 0;
    for (;;) {
        ssize_t n = read(t.fd, buf, PIECE);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            snprintf(err, errlen, "read %s: %s", path, strerror(errno));
            goto done;
        }
        if (n == 0) break;
        d9_sha256_update(&s, buf, (size_t)n);
        hashed += (uint64_t)n;
    }
    if (hashed != (uint64_t)st.st_size || lseek(t.fd, 0, SEEK_SET) != 0) {
        snprintf(err, errlen, "%s changed while being read", path);
        goto done;
    }
    uint8_t digest[D9_SHA256_LEN];
    d9_sha256_final(&s, digest);
    char hash_hex[2 * D9_SHA256_LEN + 1], hash_b64[48];
    d9_hex(digest, sizeof digest, hash_hex);
    d9_base64(digest, sizeof digest, hash_b64);

    char full_path[2048], uri[6144], url[8192];
    snprintf(full_path, sizeof full_path, "%s/%s", u->base_path, key);
    if (d9_uri_encode(full_path, true, uri, sizeof uri) != 0) {
        snprintf(err, errlen, "object key too long");
        goto done;
    }
    snprintf(url, sizeof url, "%s://%s%s", u->scheme, u->authority, uri);

    char amz_date[17], index_s[24], start_s[24], meta_service[800], meta_host[800], meta_boot[200];
    struct tm tm;
    time_t now = time(NULL);
    gmtime_r(&now, &tm);
    strftime(amz_date, sizeof amz_date, "%Y%m%dT%H%M%SZ", &tm);
    snprintf(index_s, sizeof index_s, "%" PRIu64, index);
    snprintf(start_s, sizeof start_s, "%lld", (long long)start);
    /* metadata must be ASCII: percent-encoded like a URI component */
    d9_uri_encode(service, false, meta_service, sizeof meta_service);
    d9_uri_encode(u->host, false, meta_host, sizeof meta_host);
    d9_uri_encode(boot_id[0] ? boot_id : "unknown", false, meta_boot, sizeof meta_boot);
    d9_sigv4_header h[16];
    size_t nh = 0;
    h[nh++] = (d9_sigv4_header){"host", u->authority};
    h[nh++] = (d9_sigv4_header){"content-type", "application/octet-stream"};
    if (strcmp(suffix, ".bin.gz") == 0) h[nh++] = (d9_sigv4_header){"content-encoding", "gzip"};
    h[nh++] = (d9_sigv4_header){"x-amz-checksum-sha256", hash_b64};
    h[nh++] = (d9_sigv4_header){"x-amz-content-sha256", hash_hex};
    h[nh++] = (d9_sigv4_header){"x-amz-date", amz_date};
    h[nh++] = (d9_sigv4_header){"x-amz-meta-boot-id", meta_boot};
    h[nh++] = (d9_sigv4_header){"x-amz-meta-host", meta_host};
    h[nh++] = (d9_sigv4_header){"x-amz-meta-segment-index", index_s};
    h[nh++] = (d9_sigv4_header){"x-amz-meta-service", meta_service};
    h[nh++] = (d9_sigv4_header){"x-amz-meta-start-time", start_s};
    if (cred.session_token[0]) h[nh++] = (d9_sigv4_header){"x-amz-security-token", cred.session_token};
    d9_sigv4_request req = {.method = "PUT", .canonical_uri = uri, .canonical_query = "", .headers = h,
                            .nheaders = nh, .payload_hash = hash_hex, .amz_date = amz_date,
                            .region = u->region, .service = "s3", .access_key = cred.access_key,
                            .secret_key = cred.secret_key};
    char auth[1024];
    if (d9_sigv4_authorization(&req, auth, sizeof auth, NULL, 0) != 0) {
        snprintf(err, errlen, "cannot sign the request (credentials too long?)");
        res = D9_UPLOAD_FATAL;
        goto done;
    }
    bool ok = true;
    for (size_t i = 0; i < nh; i++) hl = add_header(c, hl, h[i].name, h[i].value, &ok); /* copied */
    memset(&cred, 0, sizeof cred);
    hl = add_header(c, hl, "authorization", auth, &ok);
    hl = c->slist_append(hl, "Expect:"); /* no 100-continue round trip */
    if (!ok || !hl) {
        snprintf(err, errlen, "out of memory");
        res = D9_UPLOAD_RETRY;
        goto done;
    }
    CURL *e = u->h;
    c->easy_reset(e);
    c->easy_setopt(e, CURLOPT_URL, url);
    c->easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    c->easy_setopt(e, CURLOPT_NOSIGNAL, 1L); /* never touch the application's signals */
    c->easy_setopt(e, CURLOPT_UPLOAD, 1L);
    c->easy_setopt(e, CURLOPT_READFUNCTION, read_body);
    c->easy_setopt(e, CURLOPT_READDATA, &t);
    c->easy_setopt(e, CURLOPT_INFILESIZE_LARGE, (curl_off_t)st.st_size);
    c->easy_setopt(e, CURLOPT_HTTPHEADER, hl);
    c->easy_setopt(e, CURLOPT_WRITEFUNCTION, keep_answer);
    c->easy_setopt(e, CURLOPT_WRITEDATA, &t);
    c->easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
    c->easy_setopt(e, CURLOPT_XFERINFOFUNCTION, progress);
    c->easy_setopt(e, CURLOPT_XFERINFODATA, &t);
    c->easy_setopt(e, CURLOPT_CONNECTTIMEOUT, 10L);
    /* a stalled transfer (under 1 KiB/s for 30 s) is abandoned and retried */
    c->easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1024L);
    c->easy_setopt(e, CURLOPT_LOW_SPEED_TIME, 30L);
    c->easy_setopt(e, CURLOPT_USERAGENT, "dial9-c/" D9_VERSION);
    CURLcode cr = c->easy_perform(e);
    if (cr != CURLE_OK) {
        snprintf(err, errlen, "PUT %s%s: %s", u->target, key, c->easy_strerror(cr));
        res = D9_UPLOAD_RETRY;
        goto done;
    }
    long status = 0;
    c->easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    char code[128], message[512];
    xml_field(t.body, "Code", code, sizeof code);
    xml_field(t.body, "Message", message, sizeof message);
    res = classify(status, code);
    if (res != D9_UPLOAD_OK)
        snprintf(err, errlen, "PUT %s%s: HTTP %ld %s%s%s", u->target, key, status, code[0] ? code : "(no error code)",
                 message[0] ? ": " : "", message);
done:
    if (hl) c->slist_free_all(hl);
    free(buf);
    close(t.fd);
    return res;
}
