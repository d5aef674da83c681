/* One ListObjectsV2 page as d9_s3_list_page reads it (src/fleet/s3_list.c): the keys and sizes
 * listed, entities decoded, the next page's token; and the pages it once read wrong without a
 * word, each now an error that says why: a truncated page without a token (the rest of the
 * listing was dropped), a <Size> that is no byte count ("-1" was 2^64 - 1), an empty key, a key
 * too long for its buffer (cut, it named another object). */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "fleet/s3_list.h"

typedef struct listed {
    char keys[4][64];
    uint64_t sizes[4];
    size_t n;
} listed;

static int on_key(void *ctx, const char *key, uint64_t size, const char *last_modified, char *err, size_t errlen) {
    listed *l = ctx;
    if (l->n < 4) {
        snprintf(l->keys[l->n], sizeof l->keys[l->n], "%s", key);
        l->sizes[l->n] = size;
    }
    l->n++;
    return 0;
}

/* the page's outcome: 0 or -1, with what was listed and the token in *l and token */
static int page(const char *body, listed *l, char *token, char *err, size_t errlen) {
    memset(l, 0, sizeof *l);
    err[0] = 0;
    return d9_s3_list_page(body, on_key, l, token, 2048, err, errlen);
}

int main(void) {
    listed l;
    char token[2048], err[512];

    CHECK(page("<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>a/b&amp;c.bin</Key>"
               "<Size>18342</Size></Contents><Contents><Key>d</Key></Contents></ListBucketResult>",
               &l, token, err, sizeof err) == 0);
    CHECK_EQ_U64(l.n, 2);
    CHECK_STR(l.keys[0], "a/b&c.bin");
    CHECK_EQ_U64(l.sizes[0], 18342);
    CHECK_STR(l.keys[1], "d");
    CHECK_EQ_U64(l.sizes[1], 0); /* no <Size>: 0, as before */
    CHECK_STR(token, "");

    CHECK(page("<IsTruncated>true</IsTruncated><Contents><Key>k</Key><Size>1</Size></Contents>"
               "<NextContinuationToken>t/1=</NextContinuationToken>", &l, token, err, sizeof err) == 0);
    CHECK_STR(token, "t/1=");

    /* truncated, and no way to ask for the rest */
    CHECK(page("<IsTruncated>true</IsTruncated><Contents><Key>k</Key></Contents>", &l, token, err, sizeof err) == -1);
    CHECK(strstr(err, "truncated") != NULL);
    CHECK(page("<IsTruncated>true</IsTruncated><NextContinuationToken></NextContinuationToken>", &l, token, err,
               sizeof err) == -1);

    /* a size that is no byte count */
    CHECK(page("<Contents><Key>k</Key><Size>-1</Size></Contents>", &l, token, err, sizeof err) == -1);
    CHECK(strstr(err, "<Size> \"-1\"") != NULL);
    CHECK_EQ_U64(l.n, 0);

    /* an empty key, and a key longer than the buffer: never handed on */
    CHECK(page("<Contents><Key></Key></Contents>", &l, token, err, sizeof err) == -1);
    CHECK_EQ_U64(l.n, 0);
    static char long_key[5000];
    int n = snprintf(long_key, sizeof long_key, "<Contents><Key>");
    memset(long_key + n, 'k', 3000);
    snprintf(long_key + n + 3000, sizeof long_key - (size_t)n - 3000, "</Key></Contents>");
    CHECK(page(long_key, &l, token, err, sizeof err) == -1);
    CHECK(strstr(err, "<Key>") != NULL);
    CHECK_EQ_U64(l.n, 0);
    return d9t_summary("s3_list_page");
}
