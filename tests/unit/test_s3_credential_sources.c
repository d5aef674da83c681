/* The credential services' answers decoded (creds_parse.c): the container/IMDS JSON, STS's XML,
 * ISO 8601 expirations; the refresh time of temporary credentials; and the chain's behaviour
 * that needs no server: an http full URI to a host that is not loopback refused before any
 * connection, a missing web identity token file, and an absent IMDS remembered (asked once). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "aws/creds_parse.h"
#include "aws/s3_credentials.h"

static void times(void) {
    time_t t;
    CHECK(d9_creds_parse_time("2026-12-01T16:00:00Z", &t) == 0 && t == 1796140800);
    CHECK(d9_creds_parse_time("2026-12-01T16:00:00.123456Z", &t) == 0 && t == 1796140800);
    CHECK(d9_creds_parse_time("2026-12-01T18:30:00+02:30", &t) == 0 && t == 1796140800);
    CHECK(d9_creds_parse_time("2026-12-01T15:00:00-01:00", &t) == 0 && t == 1796140800);
    CHECK(d9_creds_parse_time("2024-02-29T23:59:59Z", &t) == 0 && t == 1709251199);
    CHECK(d9_creds_parse_time("2000-02-29T12:00:00Z", &t) == 0 && t == 951825600);
    CHECK(d9_creds_parse_time("2100-03-01T00:00:00Z", &t) == 0 && t == 4107542400);
    CHECK(d9_creds_parse_time("1970-01-01T00:00:00Z", &t) == 0 && t == 0);
    const char *bad[] = {"", "2026-12-01", "2026-12-01T16:00:00", "2026-12-01T16:00Z", "2026-13-01T00:00:00Z",
                         "2100-02-29T00:00:00Z", "2026-12-01T24:00:00Z", "2026-12-01T16:00:00.Z",
                         "2026-12-01T16:00:00Zjunk", "1969-12-31T23:59:59Z", "2026-12-01T16:00:00+2:00",
                         "１９７０-01-01T00:00:00Z", "2026-12-01T16:00:00+02"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int r = d9_creds_parse_time(bad[i], &t);
        if (r != -1) fprintf(stderr, "accepted %s\n", bad[i]);
        CHECK(r == -1);
    }
}

static void json(void) {
    d9_s3_credentials c;
    char err[512];
    /* IMDS's answer, with members in another order, escapes and nested values around */
    const char *imds = "{\n  \"Code\" : \"Success\",\n  \"LastUpdated\" : \"2026-12-01T15:00:00Z\",\n"
                       "  \"Nested\": {\"AccessKeyId\": \"NOTTHIS\", \"a\": [1, 2.5e3, true, null, {}]},\n"
                       "  \"Type\" : \"AWS-HMAC\",\n  \"AccessKeyId\" : \"ASIA\\u0041BC\",\n"
                       "  \"SecretAccessKey\" : \"se\\/cr\\\"et\\u00e9\\ud83d\\ude00\",\n"
                       "  \"Token\" : \"tok==\",\n  \"Expiration\" : \"2026-12-01T16:00:00Z\"\n}";
    memset(&c, 0, sizeof c);
    CHECK(d9_creds_parse_json(imds, strlen(imds), &c, err, sizeof err) == 0);
    CHECK_STR(c.access_key, "ASIAABC");
    CHECK_STR(c.secret_key, "se/cr\"et\xc3\xa9\xf0\x9f\x98\x80");
    CHECK_STR(c.session_token, "tok==");
    CHECK(c.expiration == 1796140800);
    /* a container answer without Token or Expiration: long-term keys */
    const char *plain = "{\"AccessKeyId\":\"AK\",\"SecretAccessKey\":\"SK\"}";
    CHECK(d9_creds_parse_json(plain, strlen(plain), &c, err, sizeof err) == 0);
    CHECK_STR(c.session_token, "");
    CHECK(c.expiration == 0);
    /* IMDS saying it failed */
    const char *failed = "{\"Code\":\"AssumeRoleUnauthorizedAccess\",\"Message\":\"no role\"}";
    CHECK(d9_creds_parse_json(failed, strlen(failed), &c, err, sizeof err) == -1);
    CHECK(strstr(err, "AssumeRoleUnauthorizedAccess") && strstr(err, "no role"));
    const char *bad[] = {
        "", "[]", "{}", "{\"AccessKeyId\":\"AK\"}", "{\"AccessKeyId\":\"AK\",\"SecretAccessKey\":\"\"}",
        "{\"AccessKeyId\":\"AK\",\"SecretAccessKey\":\"SK\"", /* cut */
        "{\"AccessKeyId\":\"A\\u0000K\",\"SecretAccessKey\":\"SK\"}",
        "{\"AccessKeyId\":\"AK\",\"SecretAccessKey\":\"S\\ud800K\"}", /* a lone surrogate */
        "{\"AccessKeyId\":\"AK\",\"SecretAccessKey\":\"S\\qK\"}",
        "{\"AccessKeyId\":AK,\"SecretAccessKey\":\"SK\"}",
        "{\"AccessKeyId\":\"AK\",\"SecretAccessKey\":\"SK\",\"Expiration\":\"tomorrow\"}",
        "{\"AccessKeyId\":\"AK\",\"SecretAccessKey\":\"S\nK\"}", /* a raw control character */
        "{\"x\":[[[}]]],\"AccessKeyId\":\"AK\",\"SecretAccessKey\":\"SK\"}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int r = d9_creds_parse_json(bad[i], strlen(bad[i]), &c, err, sizeof err);
        if (r != -1) fprintf(stderr, "accepted %s\n", bad[i]);
        CHECK(r == -1 && err[0]);
    }
    /* a key too long for the buffer is refused, not cut */
    char big[400];
    snprintf(big, sizeof big, "{\"AccessKeyId\":\"%0200d\",\"SecretAccessKey\":\"SK\"}", 0);
    CHECK(d9_creds_parse_json(big, strlen(big), &c, err, sizeof err) == -1);
    /* only the length given is read */
    CHECK(d9_creds_parse_json(plain, strlen(plain) - 1, &c, err, sizeof err) == -1);
    char out[32];
    CHECK(d9_creds_json_string("{\"code\":\"Forbidden\"}", 20, "code", out, sizeof out) == 0);
    CHECK_STR(out, "Forbidden");
}

static void sts(void) {
    d9_s3_credentials c;
    char err[512];
    const char *ok =
        "<AssumeRoleWithWebIdentityResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">\n"
        "  <AssumeRoleWithWebIdentityResult>\n"
        "    <SubjectFromWebIdentityToken>system:serviceaccount:ns:sa</SubjectFromWebIdentityToken>\n"
        "    <AssumedRoleUser><Arn>arn:aws:sts::123:assumed-role/r/s</Arn>"
        "<AssumedRoleId>AROA:s</AssumedRoleId></AssumedRoleUser>\n"
        "    <Credentials>\n      <SessionToken>FwoG&amp;tok&lt;en</SessionToken>\n"
        "      <SecretAccessKey>wJalr/K7MDENG</SecretAccessKey>\n"
        "      <Expiration>2026-12-01T16:00:00Z</Expiration>\n      <AccessKeyId>ASIASTS</AccessKeyId>\n"
        "    </Credentials>\n  </AssumeRoleWithWebIdentityResult>\n</AssumeRoleWithWebIdentityResponse>\n";
    CHECK(d9_creds_parse_sts(ok, strlen(ok), &c, err, sizeof err) == 0);
    CHECK_STR(c.access_key, "ASIASTS");
    CHECK_STR(c.secret_key, "wJalr/K7MDENG");
    CHECK_STR(c.session_token, "FwoG&tok<en");
    CHECK(c.expiration == 1796140800);
    const char *error = "<ErrorResponse><Error><Type>Sender</Type><Code>InvalidIdentityToken</Code>"
                        "<Message>Couldn't retrieve verification key</Message></Error></ErrorResponse>";
    CHECK(d9_creds_parse_sts(error, strlen(error), &c, err, sizeof err) == -1);
    CHECK_STR(err, "InvalidIdentityToken: Couldn't retrieve verification key");
    const char *outside = "<AccessKeyId>OUT</AccessKeyId><Credentials><SecretAccessKey>S</SecretAccessKey>"
                          "</Credentials>"; /* fields outside <Credentials> do not count */
    CHECK(d9_creds_parse_sts(outside, strlen(outside), &c, err, sizeof err) == -1);
    const char *cut = "<Credentials><AccessKeyId>A</AccessKeyId><SecretAccessKey>S</SecretAccessKey>";
    CHECK(d9_creds_parse_sts(cut, strlen(cut), &c, err, sizeof err) == -1);
    const char *badtime = "<Credentials><AccessKeyId>A</AccessKeyId><SecretAccessKey>S</SecretAccessKey>"
                          "<Expiration>soon</Expiration></Credentials>";
    CHECK(d9_creds_parse_sts(badtime, strlen(badtime), &c, err, sizeof err) == -1);
    CHECK(strstr(err, "Expiration") != NULL);
    CHECK(d9_creds_parse_sts("", 0, &c, err, sizeof err) == -1);
}

static void refresh(void) {
    /* an hour's credentials: fetched again 5 minutes before they expire */
    CHECK(d9_s3_credentials_refresh_at(1000, 1000 + 3600) == 1000 + 3600 - 300);
    /* 6 minutes: after half their life */
    CHECK(d9_s3_credentials_refresh_at(1000, 1000 + 360) == 1000 + 180);
    /* already expired when fetched: fetched again at once */
    CHECK(d9_s3_credentials_refresh_at(1000, 900) == 900);
}

static void clear_env(void) {
    const char *vars[] = {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
                          "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                          "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_AUTHORIZATION_TOKEN",
                          "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", "AWS_EC2_METADATA_SERVICE_ENDPOINT"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) unsetenv(vars[i]);
    setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials", 1);
    setenv("AWS_CONFIG_FILE", "/nonexistent/config", 1);
    setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
}

static void chain(void) {
    d9_s3_credentials c;
    char err[8192];
    clear_env();
    /* an http full URI to a host that is not loopback: refused, the token never sent */
    setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://192.0.2.1/creds", 1);
    setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", "secret-token", 1);
    CHECK(d9_s3_credentials_load(&c, NULL, err, sizeof err) == D9_CREDS_FATAL);
    CHECK(strstr(err, "http://192.0.2.1/creds") && strstr(err, "loopback") && !strstr(err, "secret-token"));
    CHECK(strstr(err, "/nonexistent/credentials") && strstr(err, "AWS_WEB_IDENTITY_TOKEN_FILE"));
    setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://localhost.example.com/creds", 1);
    CHECK(d9_s3_credentials_load(&c, NULL, err, sizeof err) == D9_CREDS_FATAL);
    setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "ftp://127.0.0.1/creds", 1);
    CHECK(d9_s3_credentials_load(&c, NULL, err, sizeof err) == D9_CREDS_FATAL);
    CHECK(strstr(err, "not an http(s)") != NULL);
    CHECK(strstr(err, "URL (AWS_CONTAINER_CREDENTIALS_FULL_URI)") != NULL); /* the variable that holds it */
    unsetenv("AWS_CONTAINER_CREDENTIALS_FULL_URI");
    /* an STS endpoint that is no URL: the message names the variable it came from */
    setenv("AWS_WEB_IDENTITY_TOKEN_FILE", "/nonexistent/token", 1);
    setenv("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/r", 1);
    setenv("AWS_ENDPOINT_URL_STS", "ftp://127.0.0.1/sts", 1);
    CHECK(d9_s3_credentials_load(&c, NULL, err, sizeof err) == D9_CREDS_FATAL);
    CHECK(strstr(err, "ftp://127.0.0.1/sts") && strstr(err, "(AWS_ENDPOINT_URL_STS)"));
    unsetenv("AWS_ENDPOINT_URL_STS");
    unsetenv("AWS_WEB_IDENTITY_TOKEN_FILE");
    unsetenv("AWS_ROLE_ARN");
    /* web identity before the container: its token file missing is said (and may come: retried) */
    setenv("AWS_WEB_IDENTITY_TOKEN_FILE", "/nonexistent/token", 1);
    setenv("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/r", 1);
    setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://192.0.2.1/creds", 1);
    CHECK(d9_s3_credentials_load(&c, NULL, err, sizeof err) == D9_CREDS_RETRY);
    CHECK(strstr(err, "/nonexistent/token") && strstr(err, "arn:aws:iam::123456789012:role/r"));
    clear_env();
    /* nothing anywhere: every place named */
    CHECK(d9_s3_credentials_load(&c, NULL, err, sizeof err) == D9_CREDS_FATAL);
    CHECK(strstr(err, "no AWS credentials") && strstr(err, "AWS_ACCESS_KEY_ID") &&
          strstr(err, "/nonexistent/config") && strstr(err, "AWS_WEB_IDENTITY_TOKEN_FILE") &&
          strstr(err, "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI") && strstr(err, "AWS_EC2_METADATA_DISABLED=true"));
}

/* IMDS on a loopback port that refuses: absent, and not asked again by the next load. */
static void imds_absent_remembered(void) {
    d9_s3_credentials c;
    char err[8192], url[64];
    clear_env();
    int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    CHECK(s >= 0 && bind(s, (struct sockaddr *)&a, sizeof a) == 0 && getsockname(s, (struct sockaddr *)&a, &al) == 0);
    snprintf(url, sizeof url, "http://127.0.0.1:%d", ntohs(a.sin_port));
    setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", url, 1);
    setenv("AWS_EC2_METADATA_DISABLED", "false", 1);
    /* bound, not listening: the connection is refused */
    CHECK(d9_s3_credentials_load(&c, NULL, err, sizeof err) == D9_CREDS_FATAL);
    CHECK(strstr(err, "no AWS credentials") && strstr(err, url) && strstr(err, "not asked again"));
    CHECK(listen(s, 8) == 0); /* now a connection would wait in the queue */
    CHECK(d9_s3_credentials_load(&c, NULL, err, sizeof err) == D9_CREDS_FATAL);
    CHECK(strstr(err, "not asked again") != NULL);
    int conn = accept(s, NULL, NULL);
    CHECK(conn < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)); /* nobody came */
    if (conn >= 0) close(conn);
    close(s);
    clear_env();
}

int main(void) {
    times();
    json();
    sts();
    refresh();
    chain();
    imds_absent_remembered();
    return d9t_summary("test_s3_credential_sources");
}
