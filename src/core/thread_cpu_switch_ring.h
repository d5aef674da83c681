/* The thread's CPU time after a switch without a system call (issue #32): its task-clock event
 * (thread_cpu_clock.h) also asks the kernel for PERF_RECORD_SWITCH records (context_switch,
 * sample_id_all with PERF_SAMPLE_TIME on CLOCK_MONOTONIC) into a one-page ring mapped
 * read-only (so the kernel overwrites it: nothing to consume, never full, never a LOST record).
 *
 * Why it is enough: without cap_user_time the page gives the task clock at the last sched-in
 * (c_in, `offset`) but not when that was; the CPU time now is c_in + (t - t_in). The kernel
 * writes the thread's switch-out record as it leaves the CPU and its switch-in record as it
 * comes back, after rewriting the page (measured on 6.18: each switch-out + switch-in pair, 32
 * bytes, comes with `lock` + 2), and writes nothing while the thread runs. So, read under the
 * page's seqcount, the ring's last record is the switch in of the page's sched-in (t_in) and
 * the one before it the switch out before that (t_out). A snapshot counts as the page's only
 * while `lock` - data_head / 16 is what it was when the thread's event opened (a page update
 * without a record, or a record lost, breaks it): else the reader falls back to read(). */
#ifndef D9_CORE_THREAD_CPU_SWITCH_RING_H
#define D9_CORE_THREAD_CPU_SWITCH_RING_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A switch record as this event's attributes make it: the header, then the sample id's time. */
#define D9_TCC_SWITCH_RECORD_BYTES 16u

/* The ring's relation to the page that a snapshot must keep: lock - head / 16 (mod 2^32). */
static inline uint32_t d9_tcc_ring_key(uint32_t lock, uint64_t head) {
    return lock - (uint32_t)(head / D9_TCC_SWITCH_RECORD_BYTES);
}

/* What a consistent snapshot of the page and its ring gives. */
typedef struct d9_tcc_switch_in {
    uint32_t lock;  /* the page's lock */
    uint64_t c_in;  /* the task clock at the last sched-in (the page's offset) */
    uint64_t t_in;  /* that switch in (CLOCK_MONOTONIC ns) */
    uint64_t t_out; /* the switch out before it */
} d9_tcc_switch_in;

/* One record of the ring at byte `at` (the ring is data_size bytes, a power of 2). */
static inline void d9_tcc_ring_record(const volatile char *data, uint64_t size, uint64_t at, uint32_t *type_misc,
                                      uint16_t *bytes, uint64_t *time_ns) {
    const volatile struct perf_event_header *h =
        (const volatile struct perf_event_header *)(data + (at & (size - 1)));
    *type_misc = h->type | (uint32_t)h->misc << 16;
    *bytes = h->size;
    *time_ns = *(const volatile uint64_t *)(data + ((at + 8) & (size - 1)));
}

/* The page's lock and c_in with the last switch in and out, consistent (the seqcount, at most 8
 * tries); false when the ring cannot say: no switch yet, torn 8 times, the last two records not
 * this thread's switch out then in, or the key not `key` (thread_cpu_switch_ring.h above). */
static inline bool d9_tcc_ring_snapshot(const volatile struct perf_event_mmap_page *p, const volatile char *data,
                                        uint64_t size, uint32_t key, d9_tcc_switch_in *out) {
    for (int tries = 0; tries < 8; tries++) {
        uint32_t before = p->lock;
        __asm__ __volatile__("" ::: "memory");
        int64_t offset = p->offset;
        uint64_t head = p->data_head;
        if (head < 2 * D9_TCC_SWITCH_RECORD_BYTES) return false; /* no switch yet */
        uint32_t in_kind, out_kind;
        uint16_t in_bytes, out_bytes;
        uint64_t t_in, t_out;
        d9_tcc_ring_record(data, size, head - D9_TCC_SWITCH_RECORD_BYTES, &in_kind, &in_bytes, &t_in);
        d9_tcc_ring_record(data, size, head - 2 * D9_TCC_SWITCH_RECORD_BYTES, &out_kind, &out_bytes, &t_out);
        __asm__ __volatile__("" ::: "memory");
        if (p->lock != before || (before & 1)) continue;
        const uint32_t switch_in = PERF_RECORD_SWITCH,
                       switch_out = PERF_RECORD_SWITCH | (uint32_t)PERF_RECORD_MISC_SWITCH_OUT << 16;
        /* preempted or not: the out record's PREEMPT bit may say so */
        if (in_kind != switch_in || (out_kind & ~((uint32_t)PERF_RECORD_MISC_SWITCH_OUT_PREEMPT << 16)) != switch_out ||
            in_bytes != D9_TCC_SWITCH_RECORD_BYTES || out_bytes != D9_TCC_SWITCH_RECORD_BYTES || t_out > t_in ||
            d9_tcc_ring_key(before, head) != key)
            return false;
        *out = (d9_tcc_switch_in){.lock = before, .c_in = (uint64_t)offset, .t_in = t_in, .t_out = t_out};
        return true;
    }
    return false;
}

/* The thread's line after that switch in, for a hook whose time is `at_ns` (CLOCK_MONOTONIC):
 * the task clock at_ns, c_in plus the time since the switch in, when that came first; else (a
 * switch came between the hook's clock read and now) at the switch in, c_in then: the line
 * holds only from there, and the hook's own value, earlier, is short of c_in only by what the
 * thread ran from its time to the switch out. Short of read()'s value by the kernel's few
 * hundred ns between starting the clock at the sched-in and writing the record. */
static inline void d9_tcc_ring_line(const d9_tcc_switch_in *sw, uint64_t at_ns, uint64_t *clock, uint64_t *line_ns) {
    if ((int64_t)(at_ns - sw->t_in) >= 0) {
        *clock = sw->c_in + (at_ns - sw->t_in);
        *line_ns = at_ns;
    } else {
        *clock = sw->c_in;
        *line_ns = sw->t_in;
    }
}

/* ---- The rings as the off-CPU source's switch records (issue #32: one event per thread) ----
 * Where the off-CPU source is on, the collector consumes the recorded threads' rings instead of
 * opening switch events of its own (the inherited per-CPU dummy events cost a recorded thread's
 * switch more than its own event's records: bench/README.md, "One event per recorded thread").
 * The ring is then D9_TCC_SOURCE_RING_PAGES pages (16: 4 096 records, 2 048 switches of the
 * thread between two drains; 4 lost 17 % of memcached's records at ~21 k switches a second of
 * its worker, whenever the loaded collector drained late), still mapped read-only: the kernel overwrites
 * what was not read, never stops and writes no LOST record, so the hooks' snapshot above keeps
 * its key. The collector keeps its own position in each ring and, when the kernel went round
 * past it, counts the records it wrote over as lost (d9_tcc_ring_consume): no silent loss. */
#define D9_TCC_SOURCE_RING_PAGES 16u
/* Records the reader keeps clear of the kernel's head: the one it may be writing past its
 * published head (a thread's records are written one at a time, by its own switches), and one
 * more for safety. */
#define D9_TCC_RING_GUARD_RECORDS 2u

/* One switch record consumed: its time and its header's misc (PERF_RECORD_MISC_SWITCH_OUT,
 * ..._PREEMPT). */
typedef void (*d9_tcc_record_fn)(void *ctx, uint64_t time_ns, uint16_t misc);

/* What one pass over a ring found. */
typedef struct d9_tcc_consumed {
    uint64_t records; /* handed to the callback */
    uint64_t lost;    /* records the kernel wrote over before they were read, or unreadable */
    uint64_t lost_until_ns; /* the first record after the loss (0: none came after it yet) */
} d9_tcc_consumed;

/* Hands every record from *at (the reader's position, bytes) up to the ring's head to fn, in
 * order, and moves *at to the head. The ring is `size` bytes (a power of 2) that the kernel
 * overwrites: a record is read into `scratch` (size / 16 entries of 2 words) first, and kept
 * only if the head, read again after the copy, shows the kernel cannot have reached it (its
 * start at least head - size + the guard); the ones before are lost, as are those the reader
 * was too slow for (head - *at past size - the guard). A record that is not a 16-byte switch
 * record ends the pass (the rest counted lost: nothing else is written into this ring). */
static inline d9_tcc_consumed d9_tcc_ring_consume(const volatile struct perf_event_mmap_page *p,
                                                  const volatile char *data, uint64_t size, uint64_t *at,
                                                  uint64_t (*scratch)[2], d9_tcc_record_fn fn, void *ctx) {
    d9_tcc_consumed r = {0, 0, 0};
    const uint64_t rec = D9_TCC_SWITCH_RECORD_BYTES, keep = size - D9_TCC_RING_GUARD_RECORDS * rec;
    uint64_t head = __atomic_load_n(&p->data_head, __ATOMIC_ACQUIRE);
    uint64_t from = *at;
    if (head - from > keep) from = head - keep; /* went round past the reader */
    from -= (from - *at) % rec;                 /* whole records */
    r.lost = (from - *at) / rec;
    uint64_t n = (head - from) / rec;
    for (uint64_t i = 0; i < n; i++) {
        const volatile uint64_t *w = (const volatile uint64_t *)(data + ((from + i * rec) & (size - 1)));
        scratch[i][0] = w[0];
        scratch[i][1] = w[1];
    }
    /* the copies before the second read of the head (a load barrier; TSan refuses
     * atomic_thread_fence): loads stay in order on x86, the compiler is told not to move them */
#if defined(__aarch64__)
    __asm__ __volatile__("dmb ishld" ::: "memory");
#else
    __asm__ __volatile__("" ::: "memory");
#endif
    uint64_t head_after = __atomic_load_n(&p->data_head, __ATOMIC_ACQUIRE);
    uint64_t safe_from = head_after - from > keep ? head_after - keep : from; /* written over meanwhile */
    bool readable = true;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t pos = from + i * rec;
        struct perf_event_header h;
        __builtin_memcpy(&h, &scratch[i][0], sizeof h);
        bool ok = readable && (int64_t)(pos - safe_from) >= 0 && h.type == PERF_RECORD_SWITCH && h.size == rec;
        if (!ok) {
            if ((int64_t)(pos - safe_from) >= 0) readable = false; /* not a switch record: stop */
            r.lost++;
            continue;
        }
        if (r.lost && !r.lost_until_ns) r.lost_until_ns = scratch[i][1];
        fn(ctx, scratch[i][1], h.misc);
        r.records++;
    }
    *at = head;
    return r;
}

/* The collector's side (thread_cpu_clock.c). d9_tcc_rings_consume, at the off-CPU source's open:
 * whether the threads' rings can be its switch records (the page in use, not
 * DIAL9_THREAD_CPU=page, a ring of D9_TCC_SOURCE_RING_PAGES allowed: why not in `why`); from
 * then on threads open their event with that ring, and one that exits leaves it mapped until
 * read. d9_tcc_rings_unconsume at the source's close. */
bool d9_tcc_rings_consume(char *why, size_t why_size);
void d9_tcc_rings_unconsume(void);
/* For each recorded thread (`tids`, sorted) without its event, opens one for it (pid = its tid)
 * with the ring, which the thread takes over at its first park or unpark; up to
 * D9_TCC_MAX_RING_THREADS. Returns how many of them have no ring (not covered). */
size_t d9_tcc_rings_cover(const uint32_t *tids, size_t n);
/* The same for the calling thread, at its registration (its switches recorded from then on). */
void d9_tcc_rings_open_self(void);
/* Every ring's records since the last call, in each thread's order, to fn; a thread's records
 * the kernel wrote over first to lost (how many, the time of the first record after them, 0 if
 * none yet). A ring whose thread is gone is freed once read. */
typedef void (*d9_tcc_switch_fn)(void *ctx, uint32_t tid, uint64_t time_ns, uint16_t misc);
typedef void (*d9_tcc_lost_fn)(void *ctx, uint32_t tid, uint64_t count, uint64_t until_ns);
void d9_tcc_rings_drain(d9_tcc_switch_fn fn, d9_tcc_lost_fn lost, void *ctx);

#endif
