/* The credential chain (see s3_credentials.h): the environment and the shared files here, the
 * network sources in creds_*.c, and the cache of what those give. */
#include "aws/s3_credentials.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aws/creds_sources.h"

#define NO_EXPIRY_SECS 900 /* temporary credentials that do not say when they expire: kept 15 min */
#define STALE_MARGIN 10    /* a failing refresh keeps what it had until this close to Expiration */

static void copy(char *dst, size_t len, const char *src) { snprintf(dst, len, "%s", src); }

static char *trim(char *s) {
    while (isspace((unsigned char)*s)) s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1])) s[--n] = 0;
    return s;
}

/* Read the keys of section `want` of an INI file. true when the section had both keys. */
static bool from_file(const char *path, const char *want, d9_s3_credentials *c) {
    FILE *f = fopen(path, "re");
    if (!f) return false;
    char line[8192];
    bool in = false;
    char ak[sizeof c->access_key] = "", sk[sizeof c->secret_key] = "", tok[sizeof c->session_token] = "";
    while (fgets(line, sizeof line, f)) {
        char *s = trim(line);
        if (*s == '#' || *s == ';' || !*s) continue;
        if (*s == '[') {
            char *end = strchr(s, ']');
            if (!end) continue;
            *end = 0;
            in = strcmp(trim(s + 1), want) == 0;
            continue;
        }
        if (!in) continue;
        char *eq = strchr(s, '=');
        if (!eq) continue;
        *eq = 0;
        char *k = trim(s), *v = trim(eq + 1);
        if (strcmp(k, "aws_access_key_id") == 0) copy(ak, sizeof ak, v);
        else if (strcmp(k, "aws_secret_access_key") == 0) copy(sk, sizeof sk, v);
        else if (strcmp(k, "aws_session_token") == 0) copy(tok, sizeof tok, v);
    }
    fclose(f);
    if (!*ak || !*sk) return false;
    copy(c->access_key, sizeof c->access_key, ak);
    copy(c->secret_key, sizeof c->secret_key, sk);
    copy(c->session_token, sizeof c->session_token, tok);
    return true;
}

/* Environment and shared files: 0 found, else `looked` lists where it looked. */
static int from_env_or_files(d9_s3_credentials *c, char *looked, size_t len) {
    const char *ak = getenv("AWS_ACCESS_KEY_ID"), *sk = getenv("AWS_SECRET_ACCESS_KEY");
    if (ak && *ak && sk && *sk) {
        copy(c->access_key, sizeof c->access_key, ak);
        copy(c->secret_key, sizeof c->secret_key, sk);
        const char *tok = getenv("AWS_SESSION_TOKEN");
        copy(c->session_token, sizeof c->session_token, tok ? tok : "");
        copy(c->source, sizeof c->source, "the environment (AWS_ACCESS_KEY_ID)");
        return 0;
    }
    const char *profile = getenv("AWS_PROFILE");
    if (!profile || !*profile) profile = "default";
    const char *home = getenv("HOME");
    char creds[4096], config[4096], section[512];
    const char *v = getenv("AWS_SHARED_CREDENTIALS_FILE");
    if (v && *v) copy(creds, sizeof creds, v);
    else snprintf(creds, sizeof creds, "%s/.aws/credentials", home ? home : "");
    v = getenv("AWS_CONFIG_FILE");
    if (v && *v) copy(config, sizeof config, v);
    else snprintf(config, sizeof config, "%s/.aws/config", home ? home : "");
    if (from_file(creds, profile, c)) {
        snprintf(c->source, sizeof c->source, "profile %s in %s", profile, creds);
        return 0;
    }
    if (strcmp(profile, "default") == 0) copy(section, sizeof section, "default");
    else snprintf(section, sizeof section, "profile %s", profile);
    if (from_file(config, section, c)) {
        snprintf(c->source, sizeof c->source, "[%s] in %s", section, config);
        return 0;
    }
    snprintf(looked, len,
             "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY are not set; profile %.200s has no "
             "aws_access_key_id/aws_secret_access_key in %.1800s or %.1800s",
             profile, creds, config);
    return -1;
}

time_t d9_s3_credentials_refresh_at(time_t fetched, time_t expires) {
    time_t ahead = 300, life = expires - fetched;
    if (life / 2 < ahead) ahead = life / 2;
    if (ahead < 0) ahead = 0;
    return expires - ahead;
}

/* What a network source gave, for every later load until its refresh time. */
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    char key[2600]; /* the source's configuration (d9_creds_*_config): "" when empty */
    d9_s3_credentials creds;
    time_t expires, refresh_at;
} cache;

void d9_s3_credentials_forget(void) {
    pthread_mutex_lock(&cache_lock);
    memset(&cache, 0, sizeof cache);
    pthread_mutex_unlock(&cache_lock);
}

typedef struct source {
    int (*config)(const char *region, char *key, size_t klen, char *note, size_t nlen);
    int (*fetch)(const char *region, d9_s3_credentials *c, char *err, size_t errlen);
} source;

static int container_config(const char *region, char *key, size_t klen, char *note, size_t nlen) {
    return d9_creds_container_config(key, klen, note, nlen);
}
static int container_fetch(const char *region, d9_s3_credentials *c, char *err, size_t errlen) {
    return d9_creds_container(c, err, errlen);
}
static int imds_config(const char *region, char *key, size_t klen, char *note, size_t nlen) {
    return d9_creds_imds_config(key, klen, note, nlen);
}
static int imds_fetch(const char *region, d9_s3_credentials *c, char *err, size_t errlen) {
    return d9_creds_imds(c, err, errlen);
}

static const source network_sources[] = {
    {d9_creds_web_identity_config, d9_creds_web_identity},
    {container_config, container_fetch},
    {imds_config, imds_fetch},
};

static void append(char *looked, size_t len, const char *what) {
    size_t n = strlen(looked);
    if (n + 3 < len) snprintf(looked + n, len - n, "; %s", what);
}

/* One network source, through the cache (called under cache_lock). */
static int through_cache(const source *s, const char *key, const char *region, d9_s3_credentials *c, char *err,
                         size_t errlen) {
    time_t now = time(NULL);
    if (cache.key[0] && strcmp(cache.key, key) == 0 && now < cache.refresh_at) {
        *c = cache.creds;
        return D9_CREDS_OK;
    }
    d9_s3_credentials fresh;
    memset(&fresh, 0, sizeof fresh);
    int r = s->fetch(region, &fresh, err, errlen);
    if (r == D9_CREDS_OK) {
        now = time(NULL);
        time_t expires = fresh.expiration ? fresh.expiration : now + NO_EXPIRY_SECS;
        memset(&cache, 0, sizeof cache);
        copy(cache.key, sizeof cache.key, key);
        cache.creds = fresh;
        cache.expires = expires;
        cache.refresh_at = d9_s3_credentials_refresh_at(now, expires);
        *c = fresh;
    } else if (r == D9_CREDS_RETRY && cache.key[0] && strcmp(cache.key, key) == 0 &&
               now + STALE_MARGIN < cache.expires) {
        *c = cache.creds; /* the service is failing, what it gave is still good: use that */
        r = D9_CREDS_OK;
    }
    memset(&fresh, 0, sizeof fresh);
    return r;
}

int d9_s3_credentials_load(d9_s3_credentials *c, const char *region, char *err, size_t errlen) {
    memset(c, 0, sizeof *c);
    char looked[6000] = "", note[2600], key[2600];
    if (from_env_or_files(c, looked, sizeof looked) == 0) return D9_CREDS_OK;
    pthread_mutex_lock(&cache_lock);
    int rc = D9_CREDS_FATAL;
    for (size_t i = 0; i < sizeof network_sources / sizeof *network_sources; i++) {
        const source *s = &network_sources[i];
        if (!s->config(region, key, sizeof key, note, sizeof note)) {
            append(looked, sizeof looked, note);
            continue;
        }
        char why[4096];
        int r = through_cache(s, key, region, c, why, sizeof why);
        if (r == D9_CREDS_OK) {
            rc = D9_CREDS_OK;
            goto out;
        }
        if (r == D9_CREDS_ABSENT) {
            append(looked, sizeof looked, why);
            continue;
        }
        /* configured but failing: that is the answer, as in the SDKs' chains */
        snprintf(err, errlen, "cannot get AWS credentials: %s (looked first: %s)", why, looked);
        memset(c, 0, sizeof *c);
        rc = r;
        goto out;
    }
    snprintf(err, errlen, "no AWS credentials: %s", looked);
out:
    pthread_mutex_unlock(&cache_lock);
    return rc;
}

int d9_creds_read_token_file(const char *path, char *out, size_t len, char *err, size_t errlen) {
    FILE *f = fopen(path, "re");
    if (!f) {
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    size_t n = fread(out, 1, len - 1, f);
    bool more = n == len - 1 && fgetc(f) != EOF;
    fclose(f);
    out[n] = 0;
    if (more) {
        snprintf(err, errlen, "%s: longer than %zu bytes", path, len - 1);
        return -1;
    }
    char *s = trim(out);
    if (!*s) {
        snprintf(err, errlen, "%s is empty", path);
        return -1;
    }
    memmove(out, s, strlen(s) + 1);
    return 0;
}
