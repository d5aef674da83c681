#include "sinks/s3_credentials.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int d9_s3_credentials_load(d9_s3_credentials *c, char *err, size_t errlen) {
    memset(c, 0, sizeof *c);
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
    snprintf(err, errlen,
             "no AWS credentials: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY are not set and profile %s has "
             "no aws_access_key_id/aws_secret_access_key in %s or %s",
             profile, creds, config);
    return -1;
}
