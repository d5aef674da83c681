/* perf_event_open and its mmap ring: open with CLOCK_MONOTONIC timestamps, map a small ring,
 * and visit the records the kernel wrote since the last visit (on the collector's thread). */
#ifndef D9_SOURCES_PERF_RING_H
#define D9_SOURCES_PERF_RING_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* perf_event_open(2) with O_CLOEXEC; returns the fd or -errno. */
int d9_perf_open(struct perf_event_attr *attr, pid_t pid, int cpu);

/* A software event attribute with the settings every dial9 event shares: CLOCK_MONOTONIC
 * timestamps, sample_id_all, opened disabled. */
void d9_perf_attr_init(struct perf_event_attr *a, uint64_t config, uint64_t sample_type);

typedef struct d9_perf_ring {
    void *base;                        /* NULL when not mapped */
    size_t map_bytes;
    struct perf_event_mmap_page *meta;
    uint8_t *data;
    uint64_t data_size;                /* power of two */
    uint8_t *scratch;                  /* a record that wraps is copied here */
    uint64_t mark;                     /* data_head at the last d9_perf_ring_mark */
} d9_perf_ring;

/* Map `fd`'s ring with up to `max_pages` data pages (a power of two), halving while the
 * kernel refuses (the locked-memory budget). 0, or -errno of the last failure. */
int d9_perf_ring_map(d9_perf_ring *r, int fd, unsigned max_pages);
void d9_perf_ring_unmap(d9_perf_ring *r);

/* Call fn for each complete record written since the last call, then release them. */
void d9_perf_ring_drain(d9_perf_ring *r, void (*fn)(const struct perf_event_header *h, void *ctx),
                        void *ctx);

/* Note how far the kernel has written; d9_perf_ring_drain_marked then visits the records
 * before that point only (those after it stay for the next call). */
void d9_perf_ring_mark(d9_perf_ring *r);
void d9_perf_ring_drain_marked(d9_perf_ring *r, void (*fn)(const struct perf_event_header *h, void *ctx),
                               void *ctx);

/* Bytes written and not yet released (0 when empty). */
uint64_t d9_perf_ring_pending(const d9_perf_ring *r);

#endif
