/* Memory mode's segment buffers (segment_buffer.h). A fresh 16 MiB segment written in 4 KiB
 * pages took 4 096 page faults on the collector's thread: memory mode cost twice disk mode's
 * CPU per event while its store filled. A 2 MiB-aligned mapping with MADV_HUGEPAGE takes 8. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "sinks/segment_buffer.h"

#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#define HUGE_PAGE ((size_t)2 << 20)
/* The mapping's length sits in front of the bytes, so that freeing needs only the pointer; a
 * page of its own, so that the bytes are page-aligned, as a dump's direct writes need them
 * (core/flight_dump_direct.c). */
#define HEADER ((size_t)4096)

static size_t page_size(void) {
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096;
}

static size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

uint8_t *d9_segbuf_alloc(size_t cap) {
    if (cap > SIZE_MAX - HEADER - 2 * HUGE_PAGE) {
        errno = ENOMEM;
        return NULL;
    }
    size_t len = round_up(HEADER + cap, page_size());
    /* over-map by a huge page, then cut the head and tail so the start is 2 MiB-aligned: the
     * kernel backs only aligned 2 MiB ranges with huge pages */
    size_t span = len + HUGE_PAGE;
    uint8_t *raw = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) return NULL;
    uintptr_t start = ((uintptr_t)raw + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
    uint8_t *base = (uint8_t *)start;
    if (base > raw) (void)munmap(raw, (size_t)(base - raw));
    if (raw + span > base + len) (void)munmap(base + len, (size_t)(raw + span - (base + len)));
    (void)madvise(base, len, MADV_HUGEPAGE); /* a hint: without THP, 4 KiB pages as before */
    *(size_t *)base = len;
    return base + HEADER;
}

void d9_segbuf_trim(uint8_t *buf, size_t used) {
    if (!buf) return;
    uint8_t *base = buf - HEADER;
    size_t len = *(size_t *)base, keep = round_up(HEADER + used, page_size());
    if (keep >= len) return;
    if (munmap(base + keep, len - keep) == 0) *(size_t *)base = keep;
}

void d9_segbuf_free(uint8_t *buf) {
    if (!buf) return;
    uint8_t *base = buf - HEADER;
    (void)munmap(base, *(size_t *)base);
}
