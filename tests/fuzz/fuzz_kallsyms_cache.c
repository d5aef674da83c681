/* The kallsyms cache's bytes (src/symbols/kallsyms.c, d9_kallsyms_from_bytes) as a file in a
 * directory another program of the same user could write: never read past them (ASan); what
 * is accepted is a table lookups can use (every name inside it, NUL-terminated) and that
 * serializes back to the very same bytes, so nothing in a file is taken in half. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbols/kallsyms.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *copy = malloc(size ? size : 1); /* exactly the bytes: ASan sees any read past them */
    if (!copy) return 0;
    memcpy(copy, data, size);
    char err[256];
    d9_kallsyms *k = d9_kallsyms_from_bytes(copy, size, false, err, sizeof err);
    if (k) {
        size_t len = 0;
        uint8_t *again = d9_kallsyms_serialize(k, &len);
        if (again && (len != size || memcmp(again, copy, size) != 0)) abort();
        free(again);
        uint64_t probe = 0;
        if (size >= 48) memcpy(&probe, copy + 40, 8); /* the first symbol's address */
        for (uint64_t a = probe - 64; a != probe + 4096; a += 8) {
            const char *name = d9_kallsyms_lookup(k, a);
            if (name) (void)strlen(name);
            (void)d9_kallsyms_covers(k, a);
        }
        d9_kallsyms_free(k);
    }
    free(copy);
    return 0;
}
