#include "sources/perf_ring.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int d9_perf_open(struct perf_event_attr *attr, pid_t pid, int cpu) {
    long fd = syscall(SYS_perf_event_open, attr, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
    return fd < 0 ? -errno : (int)fd;
}

void d9_perf_attr_init(struct perf_event_attr *a, uint64_t config, uint64_t sample_type) {
    memset(a, 0, sizeof *a);
    a->size = sizeof *a;
    a->type = PERF_TYPE_SOFTWARE;
    a->config = config;
    a->sample_type = sample_type;
    a->sample_id_all = 1;
    a->use_clockid = 1;
    a->clockid = CLOCK_MONOTONIC;
    a->disabled = 1;
}

int d9_perf_ring_map(d9_perf_ring *r, int fd, unsigned max_pages) {
    memset(r, 0, sizeof *r);
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0) page = 4096;
    int err = -EINVAL;
    for (unsigned pages = max_pages; pages >= 1; pages /= 2) {
        size_t bytes = (size_t)(pages + 1) * (size_t)page;
        void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED) {
            err = -errno;
            if (err != -EPERM && err != -ENOMEM) return err;
            continue;
        }
        r->base = p;
        r->map_bytes = bytes;
        r->meta = p;
        /* data_offset/data_size exist since Linux 4.1; before, data follows the first page */
        uint64_t off = r->meta->data_offset ? r->meta->data_offset : (uint64_t)page;
        r->data_size = r->meta->data_size ? r->meta->data_size : (uint64_t)pages * (uint64_t)page;
        r->data = (uint8_t *)p + off;
        r->scratch = malloc(65536); /* a record's size is a u16 */
        if (!r->scratch) {
            d9_perf_ring_unmap(r);
            return -ENOMEM;
        }
        return 0;
    }
    return err;
}

void d9_perf_ring_unmap(d9_perf_ring *r) {
    if (r->base) munmap(r->base, r->map_bytes);
    free(r->scratch);
    memset(r, 0, sizeof *r);
}

uint64_t d9_perf_ring_pending(const d9_perf_ring *r) {
    if (!r->base) return 0;
    return __atomic_load_n(&r->meta->data_head, __ATOMIC_ACQUIRE) - r->meta->data_tail;
}

static void drain_to(d9_perf_ring *r, uint64_t head, void (*fn)(const struct perf_event_header *h, void *ctx),
                     void *ctx) {
    uint64_t tail = r->meta->data_tail;
    uint64_t mask = r->data_size - 1;
    while (tail + sizeof(struct perf_event_header) <= head) {
        uint64_t off = tail & mask;
        struct perf_event_header h;
        if (off + sizeof h <= r->data_size) {
            memcpy(&h, r->data + off, sizeof h);
        } else { /* records are 8-byte multiples, so this only happens with odd sizes */
            for (size_t i = 0; i < sizeof h; i++) ((uint8_t *)&h)[i] = r->data[(off + i) & mask];
        }
        if (h.size < sizeof h || tail + h.size > head) break; /* torn or corrupt: stop */
        const struct perf_event_header *rec;
        if (off + h.size <= r->data_size) {
            rec = (const struct perf_event_header *)(r->data + off);
        } else {
            uint64_t first = r->data_size - off;
            memcpy(r->scratch, r->data + off, first);
            memcpy(r->scratch + first, r->data, h.size - first);
            rec = (const struct perf_event_header *)r->scratch;
        }
        fn(rec, ctx);
        tail += h.size;
    }
    __atomic_store_n(&r->meta->data_tail, tail, __ATOMIC_RELEASE);
}

void d9_perf_ring_drain(d9_perf_ring *r, void (*fn)(const struct perf_event_header *h, void *ctx),
                        void *ctx) {
    if (!r->base) return;
    drain_to(r, __atomic_load_n(&r->meta->data_head, __ATOMIC_ACQUIRE), fn, ctx);
}

void d9_perf_ring_mark(d9_perf_ring *r) {
    if (r->base) r->mark = __atomic_load_n(&r->meta->data_head, __ATOMIC_ACQUIRE);
}

void d9_perf_ring_drain_marked(d9_perf_ring *r, void (*fn)(const struct perf_event_header *h, void *ctx),
                               void *ctx) {
    if (r->base) drain_to(r, r->mark, fn, ctx);
}
