/* Every key under a prefix of one bucket (ListObjectsV2, paginated, each page retried), for
 * readers that want the keys themselves rather than the trace segments s3_fetch.h selects:
 * `dial9 fold --to s3://` reads back what a table prefix holds. */
#ifndef D9_FLEET_S3_LIST_H
#define D9_FLEET_S3_LIST_H

#include <stddef.h>
#include <stdint.h>

#include "aws/s3_client.h"

typedef struct d9_s3_key_list {
    char **keys;
    uint64_t *sizes;
    size_t count;
} d9_s3_key_list;

/* Each object under prefix (taken as it is: give "p/" for a folder), page by page
 * (ListObjectsV2, each page retried): fn(ctx, key, size, last_modified) for each, in the order
 * listed; last_modified is the listing's text ("" when absent). fn returns 0 to go on, -1 to stop
 * with its own message in err. 0, or -1 with a message. */
typedef int (*d9_s3_list_fn)(void *ctx, const char *key, uint64_t size, const char *last_modified, char *err,
                             size_t errlen);
int d9_s3_list_each(d9_s3_client *c, const char *prefix, d9_s3_list_fn fn, void *ctx, char *err, size_t errlen);

/* One page's answer (its body, NUL-terminated): fn for each <Contents> with a <Key>, as above;
 * token is the next page's continuation token, "" when this page is the last. 0, or -1 with a
 * message (fn's, or the page's fault). */
int d9_s3_list_page(const char *body, d9_s3_list_fn fn, void *ctx, char *token, size_t token_len, char *err,
                    size_t errlen);

/* Appends every key under prefix (taken as it is: give "p/" for a folder) to out. 0, or -1 with
 * a message (what was listed before stays in out; free it). */
int d9_s3_list_keys(d9_s3_client *c, const char *prefix, d9_s3_key_list *out, char *err, size_t errlen);
void d9_s3_key_list_free(d9_s3_key_list *l);

#endif
