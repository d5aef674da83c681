/* SigV4: canonical request -> string to sign -> signature with the derived key
 * (HMAC chain over date, region, service, "aws4_request"). */
#include "aws/sigv4.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aws/sha256.h"

int d9_uri_encode(const char *in, bool keep_slash, char *out, size_t outlen) {
    static const char digits[] = "0123456789ABCDEF";
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)in; *p; p++) {
        bool plain = (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
                     *p == '-' || *p == '.' || *p == '_' || *p == '~' || (keep_slash && *p == '/');
        if (o + (plain ? 1 : 3) >= outlen) return -1;
        if (plain) {
            out[o++] = (char)*p;
        } else {
            out[o++] = '%';
            out[o++] = digits[*p >> 4];
            out[o++] = digits[*p & 15];
        }
    }
    if (o >= outlen) return -1;
    out[o] = 0;
    return 0;
}

static int by_name(const void *a, const void *b) {
    return strcmp(((const d9_sigv4_header *)a)->name, ((const d9_sigv4_header *)b)->name);
}

/* Appends with bounds: the whole result is rejected when anything does not fit. */
typedef struct { char *p; size_t len, cap; bool full; } sbuf;
static void put(sbuf *b, const char *s) {
    size_t n = strlen(s);
    if (b->full || b->len + n >= b->cap) { b->full = true; return; }
    memcpy(b->p + b->len, s, n + 1);
    b->len += n;
}

int d9_sigv4_authorization(const d9_sigv4_request *r, char *out, size_t outlen, char *canonical_out,
                           size_t canonical_len) {
    d9_sigv4_header *h = malloc((r->nheaders ? r->nheaders : 1) * sizeof *h);
    size_t creq_cap = 16384;
    char *creq = malloc(creq_cap);
    char signed_names[2048];
    if (!h || !creq) { free(h); free(creq); return -1; }
    memcpy(h, r->headers, r->nheaders * sizeof *h);
    qsort(h, r->nheaders, sizeof *h, by_name);

    sbuf names = {signed_names, 0, sizeof signed_names, false};
    signed_names[0] = 0;
    for (size_t i = 0; i < r->nheaders; i++) {
        if (i) put(&names, ";");
        put(&names, h[i].name);
    }
    sbuf c = {creq, 0, creq_cap, false};
    creq[0] = 0;
    put(&c, r->method); put(&c, "\n");
    put(&c, r->canonical_uri); put(&c, "\n");
    put(&c, r->canonical_query); put(&c, "\n");
    for (size_t i = 0; i < r->nheaders; i++) {
        put(&c, h[i].name); put(&c, ":"); put(&c, h[i].value); put(&c, "\n");
    }
    put(&c, "\n");
    put(&c, signed_names); put(&c, "\n");
    put(&c, r->payload_hash);
    free(h);
    if (c.full || names.full || strlen(r->amz_date) != 16) { free(creq); return -1; }
    if (canonical_out && canonical_len) snprintf(canonical_out, canonical_len, "%s", creq);

    uint8_t digest[D9_SHA256_LEN];
    char creq_hex[2 * D9_SHA256_LEN + 1];
    d9_sha256_buf(creq, c.len, digest);
    free(creq);
    d9_hex(digest, sizeof digest, creq_hex);

    char date[9];
    memcpy(date, r->amz_date, 8);
    date[8] = 0;
    char scope[256], to_sign[512];
    if (snprintf(scope, sizeof scope, "%s/%s/%s/aws4_request", date, r->region, r->service) >= (int)sizeof scope)
        return -1;
    int n = snprintf(to_sign, sizeof to_sign, "AWS4-HMAC-SHA256\n%s\n%s\n%s", r->amz_date, scope, creq_hex);
    if (n >= (int)sizeof to_sign) return -1;

    char ksecret[512];
    if (snprintf(ksecret, sizeof ksecret, "AWS4%s", r->secret_key) >= (int)sizeof ksecret) return -1;
    uint8_t k[D9_SHA256_LEN];
    d9_hmac_sha256(ksecret, strlen(ksecret), date, 8, k);
    memset(ksecret, 0, sizeof ksecret);
    d9_hmac_sha256(k, sizeof k, r->region, strlen(r->region), k);
    d9_hmac_sha256(k, sizeof k, r->service, strlen(r->service), k);
    d9_hmac_sha256(k, sizeof k, "aws4_request", 12, k);
    d9_hmac_sha256(k, sizeof k, to_sign, (size_t)n, digest);
    char sig[2 * D9_SHA256_LEN + 1];
    d9_hex(digest, sizeof digest, sig);
    n = snprintf(out, outlen, "AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s", r->access_key,
                 scope, signed_names, sig);
    return n < 0 || (size_t)n >= outlen ? -1 : 0;
}
