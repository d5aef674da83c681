/* Reading the shared test vectors (tests/vectors/NAME.bin, written by test_vectors_encode.c)
 * from the source tree ctest names in D9_SOURCE_DIR. */
#ifndef D9_TESTS_TEST_VECTORS_H
#define D9_TESTS_TEST_VECTORS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* The bytes of vector `name` (malloc'ed, *len set), or NULL after saying why. */
static inline uint8_t *d9t_read_vector(const char *name, size_t *len) {
    const char *src = getenv("D9_SOURCE_DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/vectors/%s.bin", src && *src ? src : ".", name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return NULL;
    }
    uint8_t *buf = NULL;
    size_t n = 0, cap = 0;
    for (int c; (c = getc(f)) != EOF;) {
        if (n == cap) {
            uint8_t *nb = realloc(buf, cap = cap ? 2 * cap : 4096);
            if (!nb) break;
            buf = nb;
        }
        buf[n++] = (uint8_t)c;
    }
    fclose(f);
    *len = n;
    return buf;
}

#endif
