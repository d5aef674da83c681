/* HTTP to the credential services (see creds_http.h). */
#include "aws/creds_http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aws/libcurl_loader.h"

static size_t keep(char *buf, size_t size, size_t n, void *arg) {
    d9_creds_answer *a = arg;
    size_t len = size * n;
    if (a->len + len + 1 > sizeof a->body) return 0; /* too big for a credentials answer: fail */
    memcpy(a->body + a->len, buf, len);
    a->len += len;
    a->body[a->len] = 0;
    return len;
}

int d9_creds_http_request(const d9_creds_http *r, d9_creds_answer *a, char *err, size_t errlen) {
    a->status = 0;
    a->len = 0;
    a->body[0] = 0;
    a->unreachable = false;
    const d9_libcurl *lc = d9_libcurl_get();
    if (!lc) {
        snprintf(err, errlen, "%s", d9_libcurl_error());
        return -1;
    }
    CURL *e = lc->easy_init();
    if (!e) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    struct curl_slist *hl = NULL;
    bool ok = true;
    for (size_t i = 0; i < sizeof r->headers / sizeof *r->headers && r->headers[i]; i++) {
        struct curl_slist *n = lc->slist_append(hl, r->headers[i]);
        if (!n) ok = false;
        else hl = n;
    }
    struct curl_slist *n = lc->slist_append(hl, "Expect:");
    if (!n) ok = false;
    else hl = n;
    if (!ok) {
        lc->slist_free_all(hl);
        lc->easy_cleanup(e);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    const char *body = r->body ? r->body : "";
    lc->easy_setopt(e, CURLOPT_URL, r->url);
    lc->easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    lc->easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    lc->easy_setopt(e, CURLOPT_NOPROXY, "*"); /* metadata services are never reached through a proxy */
    if (strcmp(r->method, "POST") == 0 || strcmp(r->method, "PUT") == 0) {
        lc->easy_setopt(e, CURLOPT_POSTFIELDS, body);
        lc->easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
        if (strcmp(r->method, "PUT") == 0) lc->easy_setopt(e, CURLOPT_CUSTOMREQUEST, "PUT");
    }
    lc->easy_setopt(e, CURLOPT_HTTPHEADER, hl);
    lc->easy_setopt(e, CURLOPT_WRITEFUNCTION, keep);
    lc->easy_setopt(e, CURLOPT_WRITEDATA, a);
    lc->easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, r->connect_timeout_ms);
    lc->easy_setopt(e, CURLOPT_TIMEOUT_MS, r->timeout_ms);
    lc->easy_setopt(e, CURLOPT_USERAGENT, "dial9-c/" D9_VERSION);
    CURLcode cr = lc->easy_perform(e);
    int rc = 0;
    if (cr != CURLE_OK) {
        curl_off_t connected = 0;
        lc->easy_getinfo(e, CURLINFO_CONNECT_TIME_T, &connected);
        a->unreachable = cr == CURLE_COULDNT_CONNECT || cr == CURLE_COULDNT_RESOLVE_HOST ||
                         (cr == CURLE_OPERATION_TIMEDOUT && connected == 0);
        snprintf(err, errlen, "%s", lc->easy_strerror(cr));
        rc = -1;
    } else {
        lc->easy_getinfo(e, CURLINFO_RESPONSE_CODE, &a->status);
    }
    lc->slist_free_all(hl);
    lc->easy_cleanup(e);
    return rc;
}

int d9_creds_fetch(const d9_creds_http *r, const char *what, d9_creds_parse_fn parse, d9_creds_refused_fn refused,
                   void *ctx, d9_s3_credentials *c, char *err, size_t errlen) {
    char why[512];
    d9_creds_answer *a = malloc(sizeof *a); /* 64 KiB: not on the caller's stack */
    if (!a) {
        snprintf(err, errlen, "%s: out of memory", what);
        return D9_CREDS_RETRY;
    }
    int rc;
    if (d9_creds_http_request(r, a, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s: %s", what, why);
        rc = D9_CREDS_RETRY;
    } else if (a->status != 200) {
        rc = refused(a, what, ctx, err, errlen);
    } else if (parse(a->body, a->len, c, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s: %s", what, why);
        rc = D9_CREDS_RETRY;
    } else {
        snprintf(c->source, sizeof c->source, "%s", what);
        rc = D9_CREDS_OK;
    }
    memset(a, 0, sizeof *a);
    free(a);
    return rc;
}

int d9_creds_url_host(const char *url, char *scheme, size_t slen, char *host, size_t hlen) {
    const char *rest = strstr(url, "://");
    if (!rest) return -1;
    size_t sl = (size_t)(rest - url);
    if (!((sl == 4 && strncmp(url, "http", 4) == 0) || (sl == 5 && strncmp(url, "https", 5) == 0))) return -1;
    snprintf(scheme, slen, "%.*s", (int)sl, url);
    rest += 3;
    size_t alen = strcspn(rest, "/?#");
    if (alen == 0 || memchr(rest, '@', alen)) return -1;
    const char *h = rest;
    size_t hl;
    if (*h == '[') {
        const char *close_ = memchr(h, ']', alen);
        if (!close_) return -1;
        h++;
        hl = (size_t)(close_ - h);
    } else {
        const char *colon = memchr(h, ':', alen);
        hl = colon ? (size_t)(colon - h) : alen;
    }
    if (hl == 0 || hl + 1 > hlen) return -1;
    snprintf(host, hlen, "%.*s", (int)hl, h);
    return 0;
}
