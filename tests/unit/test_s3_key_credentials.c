/* S3 object keys (dial9's layout, Hive escaping, prefixes) and the credential chain's order:
 * environment, then the profile in the shared credentials file, then in the config file. */
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "aws/s3_credentials.h"
#include "sinks/s3_key.h"
#include "trace_files_util.h"

static void keys(void) {
    char out[1024];
    CHECK(d9_hive_escape("a:b/c=d%e#f\x01g{h}i", out, sizeof out) == 0);
    CHECK_STR(out, "a%3Ab%2Fc%3Dd%25e%23f%01g%7Bh}i");
    CHECK(d9_hive_escape("plain-name_1.x é", out, sizeof out) == 0);
    CHECK_STR(out, "plain-name_1.x é"); /* UTF-8 and spaces stay */
    CHECK(d9_hive_escape("::::", out, 12) == -1);  /* does not fit */
    /* 2024-02-29 23:59:30 UTC */
    time_t t = 1709251170;
    CHECK(d9_s3_key(out, sizeof out, "dial9-traces", "api:blue", "host-1", "b00t", t, 7, ".bin.gz") == 0);
    CHECK_STR(out, "dial9-traces/version=1/date=2024-02-29/service=api%3Ablue/time=2359/instance=host-1/"
                   "boot=b00t/1709251170-7.bin.gz");
    CHECK(d9_s3_key(out, sizeof out, "a/b//", "s", "h", "b", t, 0, ".bin") == 0);
    CHECK_STR(out, "a/b/version=1/date=2024-02-29/service=s/time=2359/instance=h/boot=b/1709251170-0.bin");
    CHECK(d9_s3_key(out, sizeof out, "", "s", "h", "", t, 0, ".bin.gz") == 0);
    CHECK_STR(out, "version=1/date=2024-02-29/service=s/time=2359/instance=h/boot=unknown/1709251170-0.bin.gz");
    CHECK(d9_s3_key(out, 40, "p", "s", "h", "b", t, 0, ".bin.gz") == -1);
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

static void credentials(void) {
    char *dir = d9t_mkdtemp("s3cred");
    char creds[512], config[512], err[2048];
    snprintf(creds, sizeof creds, "%s/credentials", dir);
    snprintf(config, sizeof config, "%s/config", dir);
    write_file(creds, "[default]\naws_access_key_id = DEFAULTKEY\naws_secret_access_key = defsecret\n"
                      "[half]\naws_access_key_id = ONLYKEY\n");
    write_file(config, "[default]\nregion = us-east-1\n; comment\n[profile cfg]\n  aws_access_key_id=CFGKEY \n"
                       "aws_secret_access_key= cfgsecret\naws_session_token = tok\n[profile half]\n"
                       "aws_access_key_id = HALF2\naws_secret_access_key = halfsecret\n");
    setenv("AWS_SHARED_CREDENTIALS_FILE", creds, 1);
    setenv("AWS_CONFIG_FILE", config, 1);
    unsetenv("AWS_ACCESS_KEY_ID");
    unsetenv("AWS_SECRET_ACCESS_KEY");
    unsetenv("AWS_SESSION_TOKEN");
    unsetenv("AWS_PROFILE");
    /* no network source: only the environment and the files are asked */
    unsetenv("AWS_WEB_IDENTITY_TOKEN_FILE");
    unsetenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
    unsetenv("AWS_CONTAINER_CREDENTIALS_FULL_URI");
    setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
    d9_s3_credentials c;
    CHECK(d9_s3_credentials_load(&c, NULL, err, sizeof err) == 0);
    CHECK_STR(c.access_key, "DEFAULTKEY");
    CHECK_STR(c.secret_key, "defsecret");
    CHECK_STR(c.session_token, "");
    setenv("AWS_PROFILE", "cfg", 1); /* only in the config file, as [profile cfg] */
    CHECK(d9_s3_credentials_load(&c, NULL, err, sizeof err) == 0);
    CHECK_STR(c.access_key, "CFGKEY");
    CHECK_STR(c.secret_key, "cfgsecret");
    CHECK_STR(c.session_token, "tok");
    setenv("AWS_PROFILE", "half", 1); /* incomplete in credentials: the config file's is used */
    CHECK(d9_s3_credentials_load(&c, NULL, err, sizeof err) == 0);
    CHECK_STR(c.access_key, "HALF2");
    setenv("AWS_PROFILE", "missing", 1);
    CHECK(d9_s3_credentials_load(&c, NULL, err, sizeof err) == -1);
    CHECK(strstr(err, "profile missing") != NULL && strstr(err, creds) != NULL);
    /* the message names every place looked at */
    CHECK(strstr(err, "AWS_ACCESS_KEY_ID") && strstr(err, config) && strstr(err, "AWS_WEB_IDENTITY_TOKEN_FILE") &&
          strstr(err, "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI") && strstr(err, "AWS_EC2_METADATA_DISABLED=true"));
    setenv("AWS_ACCESS_KEY_ID", "ENVKEY", 1); /* the environment comes first */
    setenv("AWS_SECRET_ACCESS_KEY", "envsecret", 1);
    setenv("AWS_SESSION_TOKEN", "envtok", 1);
    CHECK(d9_s3_credentials_load(&c, NULL, err, sizeof err) == 0);
    CHECK_STR(c.access_key, "ENVKEY");
    CHECK_STR(c.session_token, "envtok");
    d9t_rm_rf(dir);
    free(dir);
}

int main(void) {
    keys();
    credentials();
    return d9t_summary("test_s3_key_credentials");
}
