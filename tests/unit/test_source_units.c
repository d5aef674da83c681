/* The pieces under the kernel sources, alone: the bounded frame-pointer walk (on a synthetic
 * stack with every kind of bad link, and on this thread's real stack), stack bounds from
 * pthread and from /proc/self/maps, function symbols from the ELF file, the frame-pointer
 * verdict for this binary and for a distribution library built without them, the host
 * capability reading (and its skipping when the program is ending), the switch-stack probe
 * giving up when told to, and the collector's sort of source events (per-CPU runs, merged). */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "core/source_batch.h"
#include "sources/fp_unwind.h"
#include "sources/host_caps.h"
#include "sources/perf_events.h"
#include "sources/perf_ring.h"
#include "test_source_util.h"

/* ---------------------------------------------------------------- synthetic stacks */

static uint64_t g_fake[1024]; /* 8 KiB "stack" */

static uint64_t addr_of(size_t i) { return (uint64_t)(uintptr_t)&g_fake[i]; }

/* Frames at word indexes idx[0] < idx[1] < ...: each links to the next, returns rets[i]. */
static void build(const size_t *idx, const uint64_t *rets, size_t n) {
    memset(g_fake, 0, sizeof g_fake);
    for (size_t i = 0; i < n; i++) {
        g_fake[idx[i]] = i + 1 < n ? addr_of(idx[i + 1]) : 0;
        g_fake[idx[i] + 1] = rets[i];
    }
}

static void test_synthetic_walks(void) {
    d9_stack_bounds b = {addr_of(0), addr_of(1024)};
    uint64_t out[16];
    size_t idx[] = {10, 40, 100, 300};
    uint64_t rets[] = {0x401000, 0x402000, 0x403000, 0x404000};

    build(idx, rets, 4);
    size_t n = d9_fp_walk(0x400500, addr_of(10), addr_of(8), &b, out, 16);
    CHECK_EQ_U64(n, 5);
    CHECK_EQ_U64(out[0], 0x400500);
    for (int i = 0; i < 4; i++) CHECK_EQ_U64(out[i + 1], rets[i]);

    /* no pc: return addresses only; max respected */
    CHECK_EQ_U64(d9_fp_walk(0, addr_of(10), addr_of(8), &b, out, 16), 4);
    CHECK_EQ_U64(d9_fp_walk(0x400500, addr_of(10), addr_of(8), &b, out, 2), 2);
    CHECK_EQ_U64(d9_fp_walk(0x400500, addr_of(10), addr_of(8), &b, out, 0), 0);
    /* unknown bounds: the pc only */
    CHECK_EQ_U64(d9_fp_walk(0x400500, addr_of(10), addr_of(8), NULL, out, 16), 1);

    /* frame below the stack pointer: dead, not followed */
    CHECK_EQ_U64(d9_fp_walk(0, addr_of(10), addr_of(12), &b, out, 16), 0);
    /* misaligned link */
    build(idx, rets, 4);
    g_fake[40] = addr_of(100) + 4;
    CHECK_EQ_U64(d9_fp_walk(0, addr_of(10), addr_of(8), &b, out, 16), 2);
    /* a link that goes down (a loop) */
    build(idx, rets, 4);
    g_fake[100] = addr_of(40);
    CHECK_EQ_U64(d9_fp_walk(0, addr_of(10), addr_of(8), &b, out, 16), 3);
    /* a link to itself */
    build(idx, rets, 4);
    g_fake[40] = addr_of(40);
    CHECK_EQ_U64(d9_fp_walk(0, addr_of(10), addr_of(8), &b, out, 16), 2);
    /* out of the stack's upper bound (no read happens there) */
    build(idx, rets, 4);
    g_fake[100] = addr_of(1024) + 64;
    CHECK_EQ_U64(d9_fp_walk(0, addr_of(10), addr_of(8), &b, out, 16), 3);
    /* a hop larger than 256 KiB is not a frame link, even inside wide bounds */
    build(idx, rets, 4);
    d9_stack_bounds wide = {addr_of(0), addr_of(0) + (1u << 20)};
    g_fake[100] = addr_of(100) + 300 * 1024;
    CHECK_EQ_U64(d9_fp_walk(0, addr_of(10), addr_of(8), &wide, out, 16), 3);
    /* implausible return addresses end the walk: null page, kernel half */
    build(idx, rets, 4);
    g_fake[101] = 12;
    CHECK_EQ_U64(d9_fp_walk(0, addr_of(10), addr_of(8), &b, out, 16), 2);
    build(idx, rets, 4);
    g_fake[41] = 0xffffffff81000000ull;
    CHECK_EQ_U64(d9_fp_walk(0, addr_of(10), addr_of(8), &b, out, 16), 1);
    /* a frame whose two words would cross the upper bound */
    build(idx, rets, 4);
    d9_stack_bounds tight = {addr_of(0), addr_of(301)};
    CHECK_EQ_U64(d9_fp_walk(0, addr_of(10), addr_of(8), &tight, out, 16), 3);
    CHECK(!d9_fp_plausible_pc(0) && !d9_fp_plausible_pc(4095) && d9_fp_plausible_pc(0x401000));
}

/* ---------------------------------------------------------------- a real stack */

static uint64_t g_real[32];
static size_t g_real_n;

TT_NOINLINE static void level3(void) {
    d9_stack_bounds b;
    CHECK(d9_stack_bounds_of_self(&b));
    uint64_t fp = (uint64_t)(uintptr_t)__builtin_frame_address(0);
    g_real_n = d9_fp_walk(0, fp, fp, &b, g_real, 32);
    __asm__ volatile("" ::: "memory");
}

TT_NOINLINE static void level2(void) {
    level3();
    __asm__ volatile("" ::: "memory");
}

TT_NOINLINE static void level1(void) {
    level2();
    __asm__ volatile("" ::: "memory");
}

static void test_real_walk(void) {
    level1();
    tt_range r2 = tt_function_range("level2", (const void *)level2);
    tt_range r1 = tt_function_range("level1", (const void *)level1);
    tt_range rt = tt_function_range("test_real_walk", (const void *)test_real_walk);
    printf("real walk: %zu frames\n", g_real_n);
    CHECK(g_real_n >= 4);
    CHECK(g_real_n >= 3 && tt_in(r2, g_real[0]) && tt_in(r1, g_real[1]) && tt_in(rt, g_real[2]));
}

/* ---------------------------------------------------------------- bounds */

static void *bounds_thread(void *arg) {
    (void)arg;
    int local = 0;
    uint64_t a = (uint64_t)(uintptr_t)&local;
    d9_stack_bounds p, m;
    CHECK(d9_stack_bounds_of_self(&p));
    CHECK(d9_stack_bounds_from_maps(a, &m));
    CHECK(a >= p.lo && a < p.hi);
    CHECK(a >= m.lo && a < m.hi);
    /* a thread stack is its own mapping (or part of one): the two must overlap around us */
    CHECK(m.lo <= a && p.hi <= m.hi + 4096 * 16);
    return NULL;
}

static void test_bounds(void) {
    int local = 0;
    uint64_t a = (uint64_t)(uintptr_t)&local;
    d9_stack_bounds b;
    CHECK(d9_stack_bounds_of_self(&b));
    CHECK(a >= b.lo && a < b.hi);
    CHECK(d9_stack_bounds_from_maps(a, &b));
    CHECK(a >= b.lo && a < b.hi);
    /* an address in the data segment is found; one nobody mapped is not */
    CHECK(d9_stack_bounds_from_maps(addr_of(3), &b) && addr_of(3) >= b.lo);
    CHECK(!d9_stack_bounds_from_maps(4096, &b));
    pthread_t th;
    pthread_create(&th, NULL, bounds_thread, NULL);
    pthread_join(th, NULL);
}

/* ---------------------------------------------------------------- ELF and frame pointers */

static void test_elf_and_fp(void) {
    uint64_t addr = 0, size = 0;
    CHECK(d9_elf_funcs_find("/proc/self/exe", "level3", &addr, &size));
    CHECK(size > 0 && size < 4096);
    CHECK(!d9_elf_funcs_find("/proc/self/exe", "no_such_function_xyz", &addr, &size));
    CHECK(!d9_elf_funcs_find("/nonexistent", "main", &addr, &size));
    CHECK(!d9_elf_funcs_find("/proc/self/maps", "main", &addr, &size)); /* not an ELF */

    d9_host_caps caps;
    d9_host_caps_detect(&caps, false);
    char buf[128];
    printf("this binary: frame pointers %s\n", d9_host_fp_verdict(&caps, buf, sizeof buf));
    CHECK(caps.fp_checked >= 20);
    CHECK(d9_host_has_frame_pointers(&caps)); /* built with -fno-omit-frame-pointer */
    CHECK(tt_starts_with(buf, "yes ("));

    /* Debian's libc is built without frame pointers */
    Dl_info info;
    if (dladdr((void *)printf, &info) && info.dli_fname) {
        int checked = 0, with = 0;
        if (d9_host_scan_frame_pointers(info.dli_fname, &checked, &with)) {
            printf("%s: %d of %d sampled functions set up a frame pointer\n", info.dli_fname, with, checked);
            d9_host_caps libc = caps;
            libc.fp_checked = checked;
            libc.fp_with = with;
            CHECK(checked >= 20);
            CHECK(!d9_host_has_frame_pointers(&libc));
        }
    }
}

static void test_host_caps(void) {
    d9_host_caps c;
    d9_host_caps_detect(&c, false);
    FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
    int p = D9_CAP_UNKNOWN;
    if (f) {
        if (fscanf(f, "%d", &p) != 1) p = D9_CAP_UNKNOWN;
        fclose(f);
    }
    CHECK_EQ_U64((uint64_t)(int64_t)c.paranoid, (uint64_t)(int64_t)p);
    CHECK(c.ncpu >= 1);
    if (geteuid() == 0) CHECK(c.perfmon && d9_host_kernel_frames_expected(&c));
    printf("paranoid %d, kptr_restrict %d, perfmon %d, kernel symbols %d, mlock %d KiB, %d CPUs\n",
           c.paranoid, c.kptr_restrict, c.perfmon, c.kernel_symbols, c.mlock_kb, c.ncpu);
    CHECK(c.checked && c.fp_scanned);

    /* a program already ending: nothing read, and the notes say so */
    d9_host_caps ending;
    memset(&ending, 0x5a, sizeof ending);
    d9_host_caps_detect(&ending, true);
    CHECK(!ending.checked && !ending.fp_scanned);
    CHECK(ending.paranoid == D9_CAP_UNKNOWN && ending.kptr_restrict == D9_CAP_UNKNOWN &&
          ending.mlock_kb == D9_CAP_UNKNOWN);
    CHECK(!ending.perfmon && !ending.kernel_symbols && ending.ncpu == 1);
    char buf[128];
    CHECK(tt_starts_with(d9_host_fp_verdict(&ending, buf, sizeof buf), "not checked ("));
}

static int g_cancel_after; /* calls of cancel_after_calls that still answer "go on" */
static bool cancel_after_calls(void) { return g_cancel_after-- <= 0; }

static int open_fds(void) {
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    if (!d) return -1;
    while (readdir(d)) n++;
    closedir(d);
    return n;
}

/* The switch-stack probe gives up when its caller says the answer is no longer wanted, before
 * the event opens or between its sleeps, and leaves no descriptor behind. */
static void test_probe_cancelled(void) {
    int fds = open_fds();
    g_cancel_after = 0;
    CHECK_EQ_U64((uint64_t)(int64_t)d9_perf_probe_switch_stacks(cancel_after_calls), (uint64_t)(int64_t)-ECANCELED);
    CHECK(g_cancel_after == -1); /* asked once, before anything was opened */
    g_cancel_after = 1;
    int rc = d9_perf_probe_switch_stacks(cancel_after_calls);
    printf("probe cancelled after it opened: %d (%s)\n", rc, rc == -ECANCELED ? "ECANCELED" : "refused by perf");
    CHECK(rc == -ECANCELED || (rc < 0 && g_cancel_after == 0)); /* refused: no second question */
    CHECK(open_fds() == fds);
    g_cancel_after = 1000;
    rc = d9_perf_probe_switch_stacks(cancel_after_calls);
    printf("probe not cancelled: %d\n", rc);
    CHECK(rc != -ECANCELED);
    CHECK(open_fds() == fds);
}

/* ---------------------------------------------------------------- perf ring reading */

typedef struct ring_seen {
    int records;
    int bad;
    uint64_t next_seq;
} ring_seen;

/* Records: header + N words, every word = the record's sequence number. */
static void check_record(const struct perf_event_header *h, void *ctx) {
    ring_seen *rs = ctx;
    const uint64_t *w = (const uint64_t *)(h + 1);
    size_t n = (h->size - sizeof *h) / 8;
    if (h->type != 9 || n == 0) rs->bad++;
    for (size_t i = 0; i < n; i++)
        if (w[i] != rs->next_seq) rs->bad++;
    rs->next_seq++;
    rs->records++;
}

static void put_bytes(uint8_t *data, uint64_t size, uint64_t pos, const void *src, size_t n) {
    for (size_t i = 0; i < n; i++) data[(pos + i) & (size - 1)] = ((const uint8_t *)src)[i];
}

static void test_perf_ring_wrap(void) {
    static struct perf_event_mmap_page meta;
    static uint8_t data[256];
    d9_perf_ring r;
    memset(&r, 0, sizeof r);
    r.base = &meta;
    r.meta = &meta;
    r.data = data;
    r.data_size = sizeof data;
    r.scratch = malloc(65536);
    ring_seen rs = {0, 0, 0};
    uint64_t head = 0, seq = 0;
    /* many rounds of records of varying sizes: headers and bodies straddle the end */
    for (int round = 0; round < 50; round++) {
        for (int k = 0; k < 3; k++, seq++) {
            size_t words = 1 + (size_t)((round * 3 + k) % 7);
            struct perf_event_header h = {.type = 9, .misc = 0, .size = (uint16_t)(8 + words * 8)};
            put_bytes(data, sizeof data, head, &h, sizeof h);
            for (size_t i = 0; i < words; i++) put_bytes(data, sizeof data, head + 8 + i * 8, &seq, 8);
            head += h.size;
        }
        /* publish, as the kernel does with data_head */
        meta.data_head = head;
        d9_perf_ring_drain(&r, check_record, &rs);
        CHECK_EQ_U64(meta.data_tail, head);
        CHECK_EQ_U64(d9_perf_ring_pending(&r), 0);
    }
    CHECK_EQ_U64(rs.records, 150);
    CHECK_EQ_U64(rs.bad, 0);
    /* a torn record (size beyond data_head) is left for the next drain */
    struct perf_event_header h = {.type = 9, .misc = 0, .size = 32};
    put_bytes(data, sizeof data, head, &h, sizeof h);
    meta.data_head = head + 16;
    d9_perf_ring_drain(&r, check_record, &rs);
    CHECK_EQ_U64(meta.data_tail, head);
    CHECK_EQ_U64(rs.records, 150);
    free(r.scratch);
}

/* ---------------------------------------------------------------- source batch sort */

/* `runs` sorted runs of random lengths and steps (ties included), interleaved in time; the
 * sort must give time order, and keep the order of equal timestamps (the `tid` says it). */
static void check_batch_sort(unsigned runs, unsigned seed) {
    d9_src_batch b = {0};
    uint64_t want = 0;
    for (unsigned r = 0; r < runs; r++) {
        uint64_t ts = rand_r(&seed) % 50;
        unsigned len = (unsigned)rand_r(&seed) % 300;
        for (unsigned i = 0; i < len; i++) {
            d9_src_event e = {.kind = D9_SRC_SWITCH, .ts_ns = ts, .tid = (uint32_t)want++};
            CHECK(d9_src_batch_add(&b, &e));
            ts += (uint64_t)(rand_r(&seed) % 3); /* steps of 0, 1 or 2: ties within and across runs */
        }
    }
    d9_src_batch_sort(&b);
    CHECK_EQ_U64(b.count, want);
    int bad = 0;
    for (size_t i = 1; i < b.count; i++) {
        const d9_src_event *x = &b.events[i - 1], *y = &b.events[i];
        if (y->ts_ns < x->ts_ns || (y->ts_ns == x->ts_ns && y->tid < x->tid)) bad++;
    }
    CHECK_EQ_U64(bad, 0);
    d9_src_batch_free(&b);
}

static void test_batch_sort(void) {
    for (unsigned seed = 1; seed <= 40; seed++) check_batch_sort(1 + seed % 9, seed);
    check_batch_sort(0, 7);
}

int main(void) {
    test_batch_sort();
    test_perf_ring_wrap();
    test_synthetic_walks();
    test_real_walk();
    test_bounds();
    test_elf_and_fp();
    test_host_caps();
    test_probe_cancelled();
    return d9t_summary("source_units");
}
