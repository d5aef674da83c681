/* The pvclock page as `auto` reads it (clock_pvclock.h): made-up struct pvclock_vcpu_time_info
 * bytes (the stable bit set and clear, a page the host was writing, garbage), made-up
 * /proc/self/maps texts of both vDSO layouts, and this host's page: where the library can read
 * it, a plain load of the same page (safe then: the kernel has mapped it) must give the same
 * flags. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "common/small_file.h"
#include "core/clock_pvclock.h"

/* version, mul, shift, flags -> the 32 bytes */
static void make(uint8_t out[D9_PVCLOCK_INFO_BYTES], uint32_t version, uint32_t mul, int8_t shift, uint8_t flags) {
    memset(out, 0, D9_PVCLOCK_INFO_BYTES);
    memcpy(out, &version, 4);
    uint64_t tsc = 0x1702b4774dad5ull, system_time = 0x4fc9e1afull;
    memcpy(out + 8, &tsc, 8);
    memcpy(out + 16, &system_time, 8);
    memcpy(out + 24, &mul, 4);
    out[28] = (uint8_t)shift;
    out[29] = flags;
}

static void judged(uint32_t version, uint32_t mul, int8_t shift, uint8_t flags, d9_pvclock_verdict want) {
    uint8_t b[D9_PVCLOCK_INFO_BYTES];
    make(b, version, mul, shift, flags);
    d9_pvclock_verdict got = d9_pvclock_judge(b);
    if (got != want) printf("version %u mul %#x shift %d flags %#x: got %d, want %d\n", version, mul, shift, flags, got, want);
    CHECK(got == want);
}

static void made_up_pages(void) {
    judged(10, 0xf445c8c6u, 1, 0x01, D9_PVCLOCK_STABLE);   /* this host's, 2026-12-06 */
    judged(10, 0xf445c8c6u, -1, 0x03, D9_PVCLOCK_STABLE);  /* stable, the guest was just paused */
    judged(4, 0x9d9d1a5au, 0, 0x00, D9_PVCLOCK_UNSTABLE);  /* no master clock on the host */
    judged(4, 0x9d9d1a5au, 0, 0x02, D9_PVCLOCK_UNSTABLE);
    judged(11, 0xf445c8c6u, 1, 0x01, D9_PVCLOCK_TORN);     /* odd: the host is writing it */
    judged(10, 0, 1, 0x01, D9_PVCLOCK_GARBAGE);            /* no scale */
    judged(10, 0xf445c8c6u, 40, 0x01, D9_PVCLOCK_GARBAGE); /* a shift no frequency needs */
    judged(10, 0xf445c8c6u, -40, 0x01, D9_PVCLOCK_GARBAGE);
    judged(10, 0xf445c8c6u, 1, 0x05, D9_PVCLOCK_GARBAGE);  /* a flag no hypervisor sets */
    judged(10, 0xf445c8c6u, 1, 0xff, D9_PVCLOCK_GARBAGE);
    uint8_t ff[D9_PVCLOCK_INFO_BYTES];
    memset(ff, 0xff, sizeof ff);
    CHECK(d9_pvclock_judge(ff) == D9_PVCLOCK_TORN); /* an odd version first: read again */
    ff[0] = 0xfe;
    CHECK(d9_pvclock_judge(ff) == D9_PVCLOCK_GARBAGE);
    uint8_t zero[D9_PVCLOCK_INFO_BYTES] = {0};
    CHECK(d9_pvclock_judge(zero) == D9_PVCLOCK_GARBAGE); /* an unset page */
}

static void made_up_maps(void) {
    /* Linux 6.14 on (this host: 6.18): [vvar] the data, [vvar_vclock] pvclock then hvclock */
    const char *split =
        "55d2a5e0e000-55d2a5e10000 r--p 00000000 00:1f 1234     /usr/bin/cat\n"
        "7f8426f72000-7f8426f76000 r--p 00000000 00:00 0                          [vvar]\n"
        "7f8426f76000-7f8426f78000 r--p 00000000 00:00 0                          [vvar_vclock]\n"
        "7f8426f78000-7f8426f7a000 r-xp 00000000 00:00 0                          [vdso]\n"
        "7ffd3b0c1000-7ffd3b0e2000 rw-p 00000000 00:00 0                          [stack]\n";
    CHECK_EQ_U64(d9_pvclock_page_in_maps(split), 0x7f8426f76000ull);
    /* before: one [vvar] of vvar, pvclock, hvclock, timens pages; no newline at the end */
    const char *one = "7ffc1e5f8000-7ffc1e5fc000 r--p 00000000 00:00 0                          [vvar]\n"
                      "7ffc1e5fc000-7ffc1e5fe000 r-xp 00000000 00:00 0                          [vdso]";
    CHECK_EQ_U64(d9_pvclock_page_in_maps(one), 0x7ffc1e5f9000ull);
    /* a [vvar] of one page has no pvclock page; no vDSO at all; a file named like it */
    CHECK_EQ_U64(d9_pvclock_page_in_maps("7ffc1e5f8000-7ffc1e5f9000 r--p 00000000 00:00 0 [vvar]\n"), 0);
    CHECK_EQ_U64(d9_pvclock_page_in_maps("55d2a5e0e000-55d2a5e10000 r--p 00000000 00:1f 1 /usr/bin/cat\n"), 0);
    CHECK_EQ_U64(d9_pvclock_page_in_maps("7f0000000000-7f0000004000 r--p 00000000 00:1f 1 /tmp/[vvar]x\n"), 0);
    CHECK_EQ_U64(d9_pvclock_page_in_maps("garbage [vvar]\n\n[vvar_vclock]\n"), 0);
    CHECK_EQ_U64(d9_pvclock_page_in_maps(""), 0);
}

/* This host: when the library reads a page, it is mapped; load its flags directly and compare. */
static void this_host(void) {
    uint8_t info[D9_PVCLOCK_INFO_BYTES];
    char why[160];
    int verdict = d9_pvclock_read_self(info, why, sizeof why);
    char cs[64] = "";
    d9_read_small_file("/sys/devices/system/clocksource/clocksource0/current_clocksource", cs, sizeof cs);
    cs[strcspn(cs, "\n")] = 0;
    printf("clocksource %s: pvclock verdict %d%s%s\n", cs, verdict, verdict < 0 ? ": " : "", verdict < 0 ? why : "");
    if (verdict < 0) {
        CHECK(why[0] != 0);
        /* kvm-clock or xen with a stable TSC at boot map the page for the vDSO */
        if (strcmp(cs, "kvm-clock") == 0) printf("(a kvm-clock guest whose vDSO does not read the TSC)\n");
        return;
    }
    static char maps[1 << 20];
    CHECK(d9_read_small_file("/proc/self/maps", maps, sizeof maps) > 0);
    uintptr_t page = d9_pvclock_page_in_maps(maps);
    CHECK(page != 0);
    if (!page) return;
    const volatile uint8_t *p = (const volatile uint8_t *)page;
    uint8_t flags = p[29];
    printf("flags read by the library %#x, loaded here %#x\n", info[29], flags);
    CHECK((flags & D9_PVCLOCK_TSC_STABLE_BIT) == (info[29] & D9_PVCLOCK_TSC_STABLE_BIT));
    CHECK(verdict == ((flags & D9_PVCLOCK_TSC_STABLE_BIT) ? D9_PVCLOCK_STABLE : D9_PVCLOCK_UNSTABLE));
}

int main(void) {
    made_up_pages();
    made_up_maps();
    this_host();
    return d9t_summary("test_clock_pvclock");
}
