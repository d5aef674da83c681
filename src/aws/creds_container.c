/* Container credentials (ECS tasks, EKS Pod Identity, anything serving the same JSON): a GET of
 * AWS_CONTAINER_CREDENTIALS_RELATIVE_URI on the ECS agent (http://169.254.170.2), else of
 * AWS_CONTAINER_CREDENTIALS_FULL_URI, with the Authorization header from
 * AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE (read at each fetch) or AWS_CONTAINER_AUTHORIZATION_TOKEN.
 * As the SDKs require, a full URI over plain http must name a loopback address or the ECS/EKS
 * agents (169.254.170.2, 169.254.170.23, fd00:ec2::23): the token is never sent elsewhere. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "aws/creds_http.h"
#include "aws/creds_parse.h"
#include "aws/creds_sources.h"

#define ECS_AGENT "http://169.254.170.2"

static const char *env(const char *name) {
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

static void url_of(char *out, size_t len) {
    const char *rel = env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
    if (rel) snprintf(out, len, "%s%s%s", ECS_AGENT, rel[0] == '/' ? "" : "/", rel);
    else snprintf(out, len, "%s", env("AWS_CONTAINER_CREDENTIALS_FULL_URI"));
}

int d9_creds_container_config(char *key, size_t klen, char *note, size_t nlen) {
    if (!env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI") && !env("AWS_CONTAINER_CREDENTIALS_FULL_URI")) {
        snprintf(note, nlen, "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI and _FULL_URI are not set");
        return 0;
    }
    char url[2048];
    url_of(url, sizeof url);
    snprintf(key, klen, "container %s", url);
    return 1;
}

static bool allowed_http_host(const char *host) {
    if (strcmp(host, "localhost") == 0 || strcmp(host, "::1") == 0 || strcmp(host, "169.254.170.2") == 0 ||
        strcmp(host, "169.254.170.23") == 0 || strcasecmp(host, "fd00:ec2::23") == 0)
        return true;
    int a, b, c, d;
    char tail;
    return sscanf(host, "%d.%d.%d.%d%c", &a, &b, &c, &d, &tail) == 4 && a == 127 && b >= 0 && b < 256 && c >= 0 &&
           c < 256 && d >= 0 && d < 256; /* 127.0.0.0/8 */
}

/* The endpoint's error JSON ({"code", "message"}, as the ECS agent and EKS Pod Identity send). */
static int refused(const d9_creds_answer *a, const char *what, void *ctx, char *err, size_t errlen) {
    char code[128] = "", msg[256] = "";
    d9_creds_json_string(a->body, a->len, "code", code, sizeof code);
    d9_creds_json_string(a->body, a->len, "message", msg, sizeof msg);
    snprintf(err, errlen, "%s: HTTP %ld%s%s%s%s%s", what, a->status, code[0] ? " " : "", code, msg[0] ? ": " : "",
             msg, a->status == 401 || a->status == 403 ? " (is the authorization token right?)" : "");
    return a->status >= 500 || a->status == 429 ? D9_CREDS_RETRY : D9_CREDS_FATAL;
}

int d9_creds_container(d9_s3_credentials *c, char *err, size_t errlen) {
    char url[2048], what[2200], why[512], scheme[8], host[256];
    url_of(url, sizeof url);
    snprintf(what, sizeof what, "container credentials %s", url);
    if (d9_creds_url_host(url, scheme, sizeof scheme, host, sizeof host) != 0) {
        snprintf(err, errlen, "%s: not an http(s)://HOST[:PORT]/PATH URL (%s)", what,
                 env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI") ? "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"
                                                             : "AWS_CONTAINER_CREDENTIALS_FULL_URI");
        return D9_CREDS_FATAL;
    }
    if (strcmp(scheme, "http") == 0 && !allowed_http_host(host)) {
        snprintf(err, errlen,
                 "%s: refused: over plain http only a loopback host or the ECS/EKS agent (169.254.170.2, "
                 "169.254.170.23) may be asked (AWS_CONTAINER_CREDENTIALS_FULL_URI)", what);
        return D9_CREDS_FATAL;
    }
    char token[8192] = "", header[8300] = "";
    const char *file = env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
    if (file) {
        if (d9_creds_read_token_file(file, token, sizeof token, why, sizeof why) != 0) {
            snprintf(err, errlen, "%s: AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE: %s", what, why);
            return D9_CREDS_RETRY; /* rotated by the agent: may be there next time */
        }
    } else if (env("AWS_CONTAINER_AUTHORIZATION_TOKEN")) {
        snprintf(token, sizeof token, "%s", env("AWS_CONTAINER_AUTHORIZATION_TOKEN"));
    }
    if (strpbrk(token, "\r\n")) {
        snprintf(err, errlen, "%s: the authorization token has a line break in it", what);
        return D9_CREDS_FATAL;
    }
    if (token[0]) snprintf(header, sizeof header, "Authorization: %s", token);
    d9_creds_http req = {.method = "GET", .url = url, .headers = {"Accept: application/json", header[0] ? header : NULL},
                         .connect_timeout_ms = 2000, .timeout_ms = 5000};
    int rc = d9_creds_fetch(&req, what, d9_creds_parse_json, refused, NULL, c, err, errlen);
    memset(token, 0, sizeof token);
    memset(header, 0, sizeof header);
    return rc;
}
