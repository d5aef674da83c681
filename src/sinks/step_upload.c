/* S3 PutObject, or a multipart upload for large files, through s3_client.c. A file range is
 * read twice: once to hash it (the signature covers the body's SHA-256), once to send it, 64
 * KiB at a time. */
#include "sinks/step_upload.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/host_boot_id.h"
#include "common/plain_number.h"
#include "sinks/run_claim.h" /* D9_RUN_BOOT_ID_MAX */
#include "sinks/s3_key.h"
#include "aws/sha256.h"
#include "aws/sigv4.h"

#define MIB (1024ull * 1024ull)
#define S3_MIN_PART (5 * MIB)
#define S3_MAX_PARTS 10000u

struct d9_uploader {
    d9_s3_client *s3;
    char *prefix, *service;
    char host[256], boot_id[D9_RUN_BOOT_ID_MAX];
    uint64_t threshold, part_size;
};

const char *d9_uploader_target(const d9_uploader *u) { return d9_s3_client_target(u->s3); }
uint64_t d9_uploader_multipart_threshold(const d9_uploader *u) { return u->threshold; }
uint64_t d9_uploader_part_size(const d9_uploader *u) { return u->part_size; }

/* A whole number of MiB from the environment, within [lo, hi]; 0 or -1 with a message. */
static int mib_from_env(const char *name, uint64_t lo, uint64_t hi, uint64_t *out, char *err, size_t errlen) {
    const char *v = getenv(name);
    if (!v || !*v) return 0;
    uint64_t n;
    if (!d9_plain_u64(v, lo, hi, &n)) {
        snprintf(err, errlen, "%s=\"%s\": expected MiB from %" PRIu64 " to %" PRIu64 " (decimal digits only, no sign)",
                 name, v, lo, hi);
        return -1;
    }
    *out = n * MIB;
    return 0;
}

d9_uploader *d9_uploader_new(const d9_config *cfg, char *err, size_t errlen) {
    d9_uploader *u = calloc(1, sizeof *u);
    if (!u) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    u->threshold = 16 * MIB;
    u->part_size = 8 * MIB;
    if (mib_from_env("DIAL9_S3_MULTIPART_THRESHOLD_MB", D9_S3_PART_MIN_MB, D9_S3_PART_MAX_MB, &u->threshold, err,
                     errlen) != 0 ||
        mib_from_env("DIAL9_S3_PART_SIZE_MB", D9_S3_PART_MIN_MB, D9_S3_PART_MAX_MB, &u->part_size, err, errlen) != 0)
        goto fail;
    u->s3 = d9_s3_client_new(cfg, err, errlen);
    if (!u->s3) goto fail;
    u->prefix = strdup(cfg->s3_prefix ? cfg->s3_prefix : "dial9-traces");
    u->service = strdup(cfg->service ? cfg->service : "unknown");
    if (!u->prefix || !u->service) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    if (gethostname(u->host, sizeof u->host) != 0) snprintf(u->host, sizeof u->host, "unknown");
    u->host[sizeof u->host - 1] = 0;
    d9_host_boot_id(u->boot_id, sizeof u->boot_id);
    return u;
fail:
    d9_uploader_free(u);
    return NULL;
}

void d9_uploader_free(d9_uploader *u) {
    if (!u) return;
    d9_s3_client_free(u->s3);
    free(u->prefix);
    free(u->service);
    free(u);
}

/* The hex and base64 SHA-256 of a file range. */
static int hash_range(int fd, uint64_t off, uint64_t len, char hex[65], char b64[48], char *err, size_t errlen) {
    uint8_t digest[D9_SHA256_LEN];
    if (d9_sha256_file_range(fd, off, len, digest, err, errlen) != 0) return -1;
    d9_hex(digest, sizeof digest, hex);
    d9_base64(digest, sizeof digest, b64);
    return 0;
}

typedef struct object_headers {
    d9_sigv4_header h[8];
    size_t n;
    char index_s[24], start_s[24], meta_service[800], meta_host[800], meta_boot[200];
} object_headers;

/* Content type and encoding, metadata: what PutObject and CreateMultipartUpload carry. */
static void object_headers_fill(object_headers *o, const d9_uploader *u, const char *encoding, uint64_t index, time_t start,
                                const char *service, const char *boot_id) {
    snprintf(o->index_s, sizeof o->index_s, "%" PRIu64, index);
    snprintf(o->start_s, sizeof o->start_s, "%lld", (long long)start);
    /* metadata must be ASCII: percent-encoded like a URI component */
    d9_uri_encode(service, false, o->meta_service, sizeof o->meta_service);
    d9_uri_encode(u->host, false, o->meta_host, sizeof o->meta_host);
    d9_uri_encode(boot_id[0] ? boot_id : "unknown", false, o->meta_boot, sizeof o->meta_boot);
    o->n = 0;
    o->h[o->n++] = (d9_sigv4_header){"content-type", "application/octet-stream"};
    if (encoding) o->h[o->n++] = (d9_sigv4_header){"content-encoding", encoding};
    o->h[o->n++] = (d9_sigv4_header){"x-amz-meta-boot-id", o->meta_boot};
    o->h[o->n++] = (d9_sigv4_header){"x-amz-meta-host", o->meta_host};
    o->h[o->n++] = (d9_sigv4_header){"x-amz-meta-segment-index", o->index_s};
    o->h[o->n++] = (d9_sigv4_header){"x-amz-meta-service", o->meta_service};
    o->h[o->n++] = (d9_sigv4_header){"x-amz-meta-start-time", o->start_s};
}

static d9_upload_result put_whole(d9_uploader *u, int fd, uint64_t size, const object_headers *oh, const char *key,
                                  bool (*give_up)(void *), void *ctx, char *err, size_t errlen) {
    char hex[65], b64[48];
    if (hash_range(fd, 0, size, hex, b64, err, errlen) != 0) return D9_UPLOAD_REJECTED;
    d9_sigv4_header h[9];
    memcpy(h, oh->h, oh->n * sizeof *h);
    size_t n = oh->n;
    h[n++] = (d9_sigv4_header){"x-amz-checksum-sha256", b64};
    d9_s3_body body = {.fd = fd, .offset = 0, .length = size, .sha256_hex = hex};
    d9_s3_answer ans = D9_S3_ANSWER_INIT;
    d9_upload_result r = d9_s3_request(u->s3, "PUT", key, "", h, n, &body, &ans, give_up, ctx, err, errlen);
    d9_s3_answer_free(&ans);
    return r;
}

/* Aborting is best effort: S3 down is often why we abort. The message says what remains. */
static void abort_upload(d9_uploader *u, const char *key, const char *query_id, char *err, size_t errlen) {
    char aerr[512];
    d9_s3_answer ans = D9_S3_ANSWER_INIT;
    d9_s3_result r = D9_S3_RETRY;
    for (int attempt = 0; attempt < 3 && r == D9_S3_RETRY; attempt++)
        r = d9_s3_request(u->s3, "DELETE", key, query_id, NULL, 0, NULL, &ans, NULL, NULL, aerr, sizeof aerr);
    d9_s3_answer_free(&ans);
    size_t used = strlen(err);
    if (r == D9_S3_OK || ans.status == 404)
        snprintf(err + used, errlen - used, " (multipart upload aborted, no parts left)");
    else
        snprintf(err + used, errlen - used,
                 " (aborting the multipart upload failed too, its parts stay until a bucket lifecycle rule for "
                 "incomplete multipart uploads removes them: %s)", aerr);
}

static d9_upload_result put_multipart(d9_uploader *u, int fd, uint64_t size, const object_headers *oh,
                                      const char *key, bool (*give_up)(void *), void *ctx, char *err,
                                      size_t errlen) {
    uint64_t part = u->part_size;
    uint64_t nparts = (size + part - 1) / part;
    while (nparts > S3_MAX_PARTS) { /* a file too large for the part size: larger parts */
        part *= 2;
        nparts = (size + part - 1) / part;
    }
    d9_sigv4_header h[9];
    memcpy(h, oh->h, oh->n * sizeof *h);
    size_t n = oh->n;
    h[n++] = (d9_sigv4_header){"x-amz-checksum-algorithm", "SHA256"};
    d9_s3_answer ans = D9_S3_ANSWER_INIT;
    d9_upload_result r = d9_s3_request(u->s3, "POST", key, "uploads=", h, n, NULL, &ans, give_up, ctx, err, errlen);
    if (r != D9_UPLOAD_OK) return r;
    char upload_id[1024], enc_id[3072], query_id[3100];
    const char *p = ans.body ? ans.body : "";
    bool have_id = d9_s3_xml_next(&p, "UploadId", upload_id, sizeof upload_id) && upload_id[0];
    d9_s3_answer_free(&ans);
    if (!have_id || d9_uri_encode(upload_id, false, enc_id, sizeof enc_id) != 0) {
        snprintf(err, errlen, "POST %s%s?uploads: no UploadId in the answer", d9_uploader_target(u), key);
        return D9_UPLOAD_RETRY;
    }
    snprintf(query_id, sizeof query_id, "uploadId=%s", enc_id);
    /* what CompleteMultipartUpload lists: ETag and checksum of each part */
    size_t per_part = 400;
    char *complete = malloc(128 + (size_t)nparts * per_part);
    if (!complete) {
        snprintf(err, errlen, "out of memory");
        abort_upload(u, key, query_id, err, errlen);
        return D9_UPLOAD_RETRY;
    }
    size_t len = (size_t)sprintf(complete, "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">");
    for (uint64_t i = 0; i < nparts; i++) {
        uint64_t off = i * part, plen = size - off < part ? size - off : part;
        char hex[65], b64[48], query[3200];
        if (hash_range(fd, off, plen, hex, b64, err, errlen) != 0) {
            r = D9_UPLOAD_REJECTED;
            break;
        }
        snprintf(query, sizeof query, "partNumber=%" PRIu64 "&%s", i + 1, query_id);
        d9_sigv4_header ph[1] = {{"x-amz-checksum-sha256", b64}};
        d9_s3_body body = {.fd = fd, .offset = off, .length = plen, .sha256_hex = hex};
        r = d9_s3_request(u->s3, "PUT", key, query, ph, 1, &body, &ans, give_up, ctx, err, errlen);
        d9_s3_answer_free(&ans);
        if (r != D9_UPLOAD_OK) break;
        if (!ans.etag[0] || strlen(ans.etag) > 200 || strpbrk(ans.etag, "<>&")) {
            snprintf(err, errlen, "PUT %s%s part %" PRIu64 ": no usable ETag in the answer", d9_uploader_target(u),
                     key, i + 1);
            r = D9_UPLOAD_RETRY;
            break;
        }
        len += (size_t)sprintf(complete + len, "<Part><PartNumber>%" PRIu64 "</PartNumber><ETag>%s</ETag>"
                                               "<ChecksumSHA256>%s</ChecksumSHA256></Part>",
                               i + 1, ans.etag, b64);
    }
    if (r == D9_UPLOAD_OK) {
        len += (size_t)sprintf(complete + len, "</CompleteMultipartUpload>");
        d9_s3_body body = {.fd = -1, .mem = complete, .length = len};
        r = d9_s3_request(u->s3, "POST", key, query_id, NULL, 0, &body, &ans, give_up, ctx, err, errlen);
        /* S3 may answer 200 with an <Error> in the body when completing fails late */
        if (r == D9_UPLOAD_OK && ans.body && strstr(ans.body, "<Error>")) {
            char code[128] = "", message[512] = "";
            const char *q = ans.body;
            d9_s3_xml_next(&q, "Code", code, sizeof code);
            q = ans.body;
            d9_s3_xml_next(&q, "Message", message, sizeof message);
            snprintf(err, errlen, "POST %s%s?uploadId: %s: %s", d9_uploader_target(u), key, code, message);
            r = D9_UPLOAD_RETRY;
        }
        d9_s3_answer_free(&ans);
    }
    free(complete);
    if (r != D9_UPLOAD_OK) abort_upload(u, key, query_id, err, errlen);
    return r;
}

d9_upload_result d9_uploader_put(d9_uploader *u, const char *path, uint64_t index, time_t start,
                                 const char *service, const char *boot_id,
                                 bool (*give_up)(void *), void *ctx, char *key, size_t keylen,
                                 char *err, size_t errlen) {
    if (!service) service = u->service;
    if (!boot_id) boot_id = u->boot_id;
    /* the file's compression, from its name (step_compress.h): the key's suffix and the
     * object's Content-Encoding (RFC 9110's gzip, RFC 8878's zstd) */
    size_t plen = strlen(path);
    bool gz = plen > 3 && strcmp(path + plen - 3, ".gz") == 0, zst = plen > 4 && strcmp(path + plen - 4, ".zst") == 0;
    const char *encoding = gz ? "gzip" : zst ? "zstd" : NULL;
    if (d9_s3_key(key, keylen, u->prefix, service, u->host, boot_id, start, index,
                  gz ? ".bin.gz" : zst ? ".bin.zst" : ".bin") != 0) {
        snprintf(key, keylen, "?");
        snprintf(err, errlen, "object key too long");
        return D9_UPLOAD_REJECTED;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "open %s: %s", path, strerror(errno));
        return D9_UPLOAD_REJECTED;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        close(fd);
        return D9_UPLOAD_REJECTED;
    }
    object_headers oh;
    object_headers_fill(&oh, u, encoding, index, start, service, boot_id);
    uint64_t size = (uint64_t)st.st_size;
    d9_upload_result r = size >= u->threshold ? put_multipart(u, fd, size, &oh, key, give_up, ctx, err, errlen)
                                              : put_whole(u, fd, size, &oh, key, give_up, ctx, err, errlen);
    close(fd);
    return r;
}
