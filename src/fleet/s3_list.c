/* Keys under a prefix (s3_list.h). */
#include "fleet/s3_list.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aws/sigv4.h"
#include "common/plain_number.h"

#define LIST_ATTEMPTS 4

static int add(d9_s3_key_list *l, const char *key, uint64_t size) {
    char **k = realloc(l->keys, (l->count + 1) * sizeof *k);
    if (!k) return -1;
    l->keys = k;
    uint64_t *s = realloc(l->sizes, (l->count + 1) * sizeof *s);
    if (!s) return -1;
    l->sizes = s;
    if (!(k[l->count] = strdup(key))) return -1;
    s[l->count++] = size;
    return 0;
}

int d9_s3_list_page(const char *body, d9_s3_list_fn fn, void *ctx, char *token, size_t token_len, char *err,
                    size_t errlen) {
    const char *p = body, *contents;
    while ((contents = strstr(p, "<Contents>"))) {
        const char *end = strstr(contents, "</Contents>");
        if (!end) break;
        char *block = strndup(contents, (size_t)(end - contents));
        p = end + 11;
        if (!block) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        char key[2048] = "", size[32] = "", modified[64] = "";
        const char *q = block;
        bool have = d9_s3_xml_next(&q, "Key", key, sizeof key);
        q = block;
        d9_s3_xml_next(&q, "Size", size, sizeof size);
        q = block;
        d9_s3_xml_next(&q, "LastModified", modified, sizeof modified);
        free(block);
        if (!have) continue;
        uint64_t bytes = 0; /* no <Size> (or an empty one): 0 */
        if (strlen(key) + 1 >= sizeof key || !key[0]) { /* a cut key would name another object */
            snprintf(err, errlen, "listing: a <Key> of %zu bytes or more, or an empty one", sizeof key - 1);
            return -1;
        }
        if (size[0] && !d9_plain_u64(size, 0, UINT64_MAX, &bytes)) {
            snprintf(err, errlen, "listing: key \"%.300s\": <Size> \"%s\" is not a byte count", key, size);
            return -1;
        }
        if (fn(ctx, key, bytes, modified, err, errlen) != 0) return -1;
    }
    char truncated[16] = "";
    p = body;
    d9_s3_xml_next(&p, "IsTruncated", truncated, sizeof truncated);
    token[0] = 0;
    if (strcmp(truncated, "true") != 0) return 0;
    p = body;
    if (!d9_s3_xml_next(&p, "NextContinuationToken", token, token_len) || !token[0] ||
        strlen(token) + 1 >= token_len) { /* the rest of the listing cannot be asked for */
        snprintf(err, errlen, "listing: truncated, without a usable <NextContinuationToken>");
        token[0] = 0;
        return -1;
    }
    return 0;
}

int d9_s3_list_each(d9_s3_client *c, const char *prefix, d9_s3_list_fn fn, void *ctx, char *err, size_t errlen) {
    char token[2048] = "";
    for (;;) {
        char enc_prefix[4096], enc_token[6144] = "", query[12000];
        d9_uri_encode(prefix, false, enc_prefix, sizeof enc_prefix);
        if (token[0]) d9_uri_encode(token, false, enc_token, sizeof enc_token);
        snprintf(query, sizeof query, "%s%s%slist-type=2&prefix=%s", token[0] ? "continuation-token=" : "",
                 enc_token, token[0] ? "&" : "", enc_prefix);
        d9_s3_answer ans = D9_S3_ANSWER_INIT;
        d9_s3_result r = D9_S3_RETRY;
        for (int attempt = 0; attempt < LIST_ATTEMPTS && r == D9_S3_RETRY; attempt++) {
            if (attempt) sleep(1u << (attempt - 1));
            d9_s3_answer_free(&ans);
            ans = D9_S3_ANSWER_INIT;
            r = d9_s3_request(c, "GET", "", query, NULL, 0, NULL, &ans, NULL, NULL, err, errlen);
        }
        if (r != D9_S3_OK) {
            d9_s3_answer_free(&ans);
            return -1;
        }
        char asked[sizeof token];
        memcpy(asked, token, sizeof token);
        int rc = d9_s3_list_page(ans.body ? ans.body : "", fn, ctx, token, sizeof token, err, errlen);
        d9_s3_answer_free(&ans);
        if (rc != 0) return -1;
        if (!token[0]) return 0;
        if (!strcmp(token, asked)) { /* the same page again: it would never end */
            snprintf(err, errlen, "listing: the continuation token \"%.300s\" came back unchanged", token);
            return -1;
        }
    }
}

static int add_key(void *ctx, const char *key, uint64_t size, const char *last_modified, char *err, size_t errlen) {
    (void)last_modified;
    if (add(ctx, key, size) == 0) return 0;
    snprintf(err, errlen, "out of memory");
    return -1;
}

int d9_s3_list_keys(d9_s3_client *c, const char *prefix, d9_s3_key_list *out, char *err, size_t errlen) {
    return d9_s3_list_each(c, prefix, add_key, out, err, errlen);
}

void d9_s3_key_list_free(d9_s3_key_list *l) {
    for (size_t i = 0; i < l->count; i++) free(l->keys[i]);
    free(l->keys);
    free(l->sizes);
    *l = (d9_s3_key_list){0};
}
