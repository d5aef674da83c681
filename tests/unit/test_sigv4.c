/* SHA-256 (FIPS 180-4 examples), HMAC-SHA256 (RFC 4231) and SigV4 (the example values in AWS's
 * S3 SigV4 documentation: "GET Object" and "PUT Object", and the signing-key example). */
#include <string.h>

#include "check.h"
#include "aws/sha256.h"
#include "aws/sigv4.h"

static const char *hex_of(const uint8_t *d) {
    static char buf[2 * D9_SHA256_LEN + 1];
    d9_hex(d, D9_SHA256_LEN, buf);
    return buf;
}

static void sha256_vectors(void) {
    uint8_t d[D9_SHA256_LEN];
    d9_sha256_buf("abc", 3, d);
    CHECK_STR(hex_of(d), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    d9_sha256_buf("", 0, d);
    CHECK_STR(hex_of(d), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    const char *m448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    d9_sha256_buf(m448, strlen(m448), d);
    CHECK_STR(hex_of(d), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    /* one million 'a', fed in uneven pieces (block boundaries inside and across updates) */
    d9_sha256 s;
    d9_sha256_init(&s);
    char a[997];
    memset(a, 'a', sizeof a);
    size_t left = 1000000;
    for (size_t piece = 1; left; piece = piece % 990 + 7) { /* 1..996 bytes */
        size_t n = piece < left ? piece : left;
        d9_sha256_update(&s, a, n);
        left -= n;
    }
    d9_sha256_final(&s, d);
    CHECK_STR(hex_of(d), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

static void hmac_vectors(void) {
    uint8_t d[D9_SHA256_LEN], key[131];
    memset(key, 0x0b, 20);
    d9_hmac_sha256(key, 20, "Hi There", 8, d);
    CHECK_STR(hex_of(d), "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
    d9_hmac_sha256("Jefe", 4, "what do ya want for nothing?", 28, d);
    CHECK_STR(hex_of(d), "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    memset(key, 0xaa, sizeof key); /* a key longer than the block: hashed first */
    const char *m = "Test Using Larger Than Block-Size Key - Hash Key First";
    d9_hmac_sha256(key, sizeof key, m, strlen(m), d);
    CHECK_STR(hex_of(d), "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

static void base64_and_uri(void) {
    char out[64];
    d9_base64((const uint8_t *)"foob", 4, out);
    CHECK_STR(out, "Zm9vYg==");
    d9_base64((const uint8_t *)"fooba", 5, out);
    CHECK_STR(out, "Zm9vYmE=");
    d9_base64((const uint8_t *)"foobar", 6, out);
    CHECK_STR(out, "Zm9vYmFy");
    CHECK(d9_uri_encode("/a b/c=d%~", true, out, sizeof out) == 0);
    CHECK_STR(out, "/a%20b/c%3Dd%25~");
    CHECK(d9_uri_encode("/x", false, out, sizeof out) == 0);
    CHECK_STR(out, "%2Fx");
    CHECK(d9_uri_encode("abcdef", true, out, 6) == -1); /* no room for the NUL */
}

#define AK "AKIAIOSFODNN7EXAMPLE"
#define SK "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define EMPTY_HASH "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

static void sigv4_get_example(void) {
    d9_sigv4_header h[] = {
        {"x-amz-date", "20130524T000000Z"},
        {"range", "bytes=0-9"},
        {"host", "examplebucket.s3.amazonaws.com"},
        {"x-amz-content-sha256", EMPTY_HASH},
    };
    d9_sigv4_request r = {.method = "GET", .canonical_uri = "/test.txt", .canonical_query = "",
                          .headers = h, .nheaders = 4, .payload_hash = EMPTY_HASH,
                          .amz_date = "20130524T000000Z", .region = "us-east-1", .service = "s3",
                          .access_key = AK, .secret_key = SK};
    char auth[1024], creq[4096];
    CHECK(d9_sigv4_authorization(&r, auth, sizeof auth, creq, sizeof creq) == 0);
    CHECK_STR(auth, "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
                    "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
                    "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
    /* a different secret gives a different signature */
    r.secret_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEZ";
    CHECK(d9_sigv4_authorization(&r, auth, sizeof auth, NULL, 0) == 0);
    CHECK(strstr(auth, "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41") == NULL);
    CHECK(d9_sigv4_authorization(&r, auth, 40, NULL, 0) == -1); /* does not fit */
}

static void sigv4_put_example(void) {
    const char *body = "Welcome to Amazon S3.";
    uint8_t d[D9_SHA256_LEN];
    char body_hash[65];
    d9_sha256_buf(body, strlen(body), d);
    d9_hex(d, sizeof d, body_hash);
    CHECK_STR(body_hash, "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
    char path[64];
    CHECK(d9_uri_encode("/test$file.text", true, path, sizeof path) == 0);
    CHECK_STR(path, "/test%24file.text");
    d9_sigv4_header h[] = {
        {"host", "examplebucket.s3.amazonaws.com"},
        {"date", "Fri, 24 May 2013 00:00:00 GMT"},
        {"x-amz-date", "20130524T000000Z"},
        {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
        {"x-amz-content-sha256", body_hash},
    };
    d9_sigv4_request r = {.method = "PUT", .canonical_uri = path, .canonical_query = "",
                          .headers = h, .nheaders = 5, .payload_hash = body_hash,
                          .amz_date = "20130524T000000Z", .region = "us-east-1", .service = "s3",
                          .access_key = AK, .secret_key = SK};
    char auth[1024];
    CHECK(d9_sigv4_authorization(&r, auth, sizeof auth, NULL, 0) == 0);
    CHECK(strstr(auth, "SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class,") != NULL);
    CHECK(strstr(auth, "Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd") != NULL);
}

static void signing_key_example(void) {
    /* AWS's "derive a signing key" example (secret with '+', IAM, 20120215) */
    const char *ksecret = "AWS4wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
    uint8_t k[D9_SHA256_LEN];
    d9_hmac_sha256(ksecret, strlen(ksecret), "20120215", 8, k);
    d9_hmac_sha256(k, sizeof k, "us-east-1", 9, k);
    d9_hmac_sha256(k, sizeof k, "iam", 3, k);
    d9_hmac_sha256(k, sizeof k, "aws4_request", 12, k);
    CHECK_STR(hex_of(k), "f4780e2d9f65fa895f9c67b32ce1baf0b0d8a43505a000a1a9e090d414db404d");
}

int main(void) {
    sha256_vectors();
    hmac_vectors();
    base64_and_uri();
    sigv4_get_example();
    sigv4_put_example();
    signing_key_example();
    return d9t_summary("test_sigv4");
}
