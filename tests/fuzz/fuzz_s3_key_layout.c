/* The S3 key layout parser (src/fleet/s3_key_layout.c) on arbitrary keys: a bucket listing is
 * outside input. It never reads past the key (ASan), every field it fills is a terminated
 * string within its array, a key it reads in a known layout has the file name's epoch and
 * index, and the same key always reads the same way. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fleet/s3_key_layout.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_terminated(const char *s, size_t cap) {
    if (strnlen(s, cap) == cap) abort();
}

static bool same(const d9_key_parts *a, const d9_key_parts *b) {
    return a->layout == b->layout && a->start == b->start && a->index == b->index &&
           !strcmp(a->service, b->service) && !strcmp(a->instance, b->instance) &&
           !strcmp(a->boot, b->boot);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *key = malloc(size + 1); /* exactly the key: ASan sees any read past its NUL */
    if (!key) return 0;
    memcpy(key, data, size);
    key[size] = '\0';
    d9_key_parts a, b;
    memset(&a, 0xA5, sizeof a); /* garbage in: the parser must fill what it reports */
    bool trace = d9_key_parse(key, &a);
    if (trace) {
        check_terminated(a.service, sizeof a.service);
        check_terminated(a.instance, sizeof a.instance);
        check_terminated(a.boot, sizeof a.boot);
        if (a.layout != D9_KEY_OTHER && (a.start < 0 || a.index < 0 || !a.service[0] || !a.instance[0]))
            abort();
        if ((a.layout == D9_KEY_HIVE || a.layout == D9_KEY_DATED_BOOT) && !a.boot[0]) abort();
        memset(&b, 0x5A, sizeof b);
        if (!d9_key_parse(key, &b) || !same(&a, &b)) abort();
    }
    free(key);
    return 0;
}
