/* Memory mode's segment buffers (src/sinks/segment_buffer.c): a buffer is zeroed, 2 MiB
 * aligned (whole huge pages) with its bytes page-aligned, holds what is written, and a sealed segment's trim gives back
 * the pages past its bytes (mincore says ENOMEM for pages no longer mapped). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "sinks/segment_buffer.h"

static bool mapped(const uint8_t *p) {
    uintptr_t page = (uintptr_t)p & ~(uintptr_t)(sysconf(_SC_PAGESIZE) - 1);
    unsigned char v;
    return mincore((void *)page, 1, &v) == 0 || errno != ENOMEM;
}

int main(void) {
    size_t cap = 16u << 20;
    uint8_t *b = d9_segbuf_alloc(cap);
    CHECK(b != NULL);
    if (!b) return d9t_summary("test_segment_buffer");
    CHECK(b[0] == 0 && b[cap - 1] == 0);
    CHECK((uintptr_t)b % 4096 == 0);                       /* page-aligned: a dump writes it with O_DIRECT */
    CHECK(((uintptr_t)b - 4096) % (2u << 20) == 0);        /* the mapping starts on a huge page */
    for (size_t i = 0; i < 100000; i++) b[i] = (uint8_t)(i * 7);
    CHECK(mapped(b + cap - 1));
    d9_segbuf_trim(b, 100000);
    bool same = true;
    for (size_t i = 0; i < 100000; i++) same = same && b[i] == (uint8_t)(i * 7);
    CHECK(same);
    CHECK(mapped(b + 99999));
    CHECK(!mapped(b + 200000)); /* past the bytes and their page: given back */
    CHECK(!mapped(b + cap - 1));
    d9_segbuf_trim(b, 100000); /* again: nothing more to give back */
    CHECK(mapped(b + 99999));
    d9_segbuf_free(b);
    d9_segbuf_free(NULL);
    CHECK(d9_segbuf_alloc(SIZE_MAX - 100) == NULL);
    return d9t_summary("test_segment_buffer");
}
