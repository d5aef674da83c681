/* The unwinder alone, deterministic, without perf or signals: a stack captured synchronously
 * inside an application comparison function called by Debian's qsort (frameless libc) is
 * unwound to cmp <- libc frames <- sort_caller <- main; the same without a stack copy falls
 * back to the frame-pointer chain (method 1) and misses sort_caller; a chain with an address
 * outside any code is cut there (method 3); random stack bytes never crash and stay bounded;
 * the tables cover this executable, libc and the vDSO. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "format/schemas.h"
#include "sources/fp_unwind.h"
#include "sources/stack_unwind.h"
#include "sources/unwind_tables.h"
#include "test_stack_capture.h"

/* The recorder's methods are the format's StackOriginEvent values, which the readers go by
 * (sources/ may not include format/, src/README.md: the two meet here). */
#define SAME_METHOD(ours, wire) ((int)(ours) == (int)(wire))
_Static_assert(SAME_METHOD(D9_STACK_UNRECORDED, D9_ORIGIN_UNRECORDED) &&
                   SAME_METHOD(D9_STACK_FP, D9_ORIGIN_FRAME_POINTERS) &&
                   SAME_METHOD(D9_STACK_CFI, D9_ORIGIN_CFI) &&
                   SAME_METHOD(D9_STACK_TRUNCATED, D9_ORIGIN_TRUNCATED),
               "d9_stack_method and StackOriginEvent.method differ");

TT_NOINLINE static int cmp_ints(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    if (!g_captured && x == 3) capture_caller();
    return (x > y) - (x < y);
}

TT_NOINLINE static void sort_caller(void) {
    int v[64];
    for (int i = 0; i < 64; i++) v[i] = (i * 37) % 64;
    qsort(v, 64, sizeof v[0], cmp_ints);
}

static tt_range libc_range(const char *name) {
    tt_range r = {0, 0};
    void *fn = dlsym(RTLD_DEFAULT, name);
    Dl_info info;
    uint64_t addr, size;
    if (!fn || !dladdr(fn, &info) || !d9_elf_funcs_find(info.dli_fname, name, &addr, &size)) return r;
    r.lo = (uint64_t)(uintptr_t)fn;
    r.hi = r.lo + size;
    return r;
}

static bool in_libc(uint64_t a) {
    Dl_info info;
    return dladdr((void *)(uintptr_t)a, &info) && info.dli_fname && strstr(info.dli_fname, "libc.so");
}

int main(void) {
    sort_caller();
    CHECK(g_captured == 1);
    d9_unwind_tables *t = d9_unwind_tables_acquire();
    CHECK(t != NULL);
    if (!t || !g_captured) return d9t_summary("source_unwinder");
    tt_range cmp = tt_function_range("cmp_ints", (const void *)cmp_ints);
    tt_range caller = tt_function_range("sort_caller", (const void *)sort_caller);
    tt_range mainr = tt_function_range("main", (const void *)main);
    tt_range qs = libc_range("qsort");
    CHECK(d9_unwind_tables_is_code(t, cmp.lo) && d9_unwind_tables_is_code(t, qs.lo));
    CHECK(!d9_unwind_tables_is_code(t, (uint64_t)(uintptr_t)&g_cap));
    CHECK(d9_unwind_tables_find(t, qs.lo) && d9_unwind_tables_find(t, qs.lo)->copy); /* libc's tables */
    bool vdso = false;
    for (size_t i = 0; i < t->nobjs; i++) {
        Dl_info info;
        if (dladdr((void *)(uintptr_t)t->objs[i].text_lo, &info) && info.dli_fname && strstr(info.dli_fname, "vdso"))
            vdso = t->objs[i].copy != NULL;
    }
    CHECK(vdso);

    /* with the copy: cmp_ints <- libc (msort, qsort) <- sort_caller <- main */
    static uint64_t out[128]; /* off the stack: the 2 KiB copy reaches main's callers */
    d9_stack_method m;
    d9_unwind_input in = {.ip = g_cap.ip, .sp = g_cap.sp, .bp = g_cap.bp, .ip_is_return = true, .stack = g_cap.stack,
                          .stack_len = g_cap.len, .chain = g_cap.chain, .nchain = g_cap.nchain};
    uint32_t n = d9_unwind_user_stack(t, &in, out, 128, &m);
    CHECK(n >= 4 && tt_in(cmp, out[0]));
    CHECK(n >= 2 && (in_libc(out[1]) || TT_INTERCEPTED)); /* cmp_ints' caller is libc's sort */
    int at_caller = -1, at_main = -1;
    for (uint32_t i = 1; i < n; i++) {
        if (at_caller < 0 && tt_in(caller, out[i])) at_caller = (int)i;
        if (at_main < 0 && tt_in(mainr, out[i])) at_main = (int)i;
    }
    CHECK(at_caller > 1 && at_main > at_caller);
    for (int i = 1; i < at_caller && !TT_INTERCEPTED; i++) CHECK(in_libc(out[i]));
    if (getenv("D9_TEST_VERBOSE"))
        for (uint32_t i = 0; i < n; i++) {
            Dl_info di;
            fprintf(stderr, "  %2u %" PRIx64 " %s\n", i, out[i],
                    dladdr((void *)(uintptr_t)out[i], &di) && di.dli_sname ? di.dli_sname : "?");
        }
    CHECK_EQ_U64(m, D9_STACK_CFI);
    for (uint32_t i = 1; i < n; i++) CHECK(d9_unwind_tables_is_code(t, out[i]));

    /* the frame-pointer chain alone skips sort_caller (qsort has no frame pointer) */
    d9_unwind_input fp_only = in;
    fp_only.stack = NULL;
    fp_only.stack_len = 0;
    n = d9_unwind_user_stack(t, &fp_only, out, 128, &m);
    bool chain_has_caller = false;
    for (uint32_t i = 0; i < n; i++) chain_has_caller |= tt_in(caller, out[i]);
    printf("frame pointers only: %u frames, sort_caller %s\n", n, chain_has_caller ? "present" : "missing");
    if (TT_INTERCEPTED) printf("SKIP: the sanitizer's qsort interceptor has frame pointers\n");
    else CHECK(!chain_has_caller);
    CHECK(m == D9_STACK_FP || m == D9_STACK_TRUNCATED);

    /* a chain with a value that is no code is cut there */
    uint64_t bad_chain[4] = {g_cap.ip, g_cap.chain[1], 0x55fa3829d310ull, g_cap.chain[1]};
    d9_unwind_input bad = fp_only;
    bad.chain = bad_chain;
    bad.nchain = 4;
    n = d9_unwind_user_stack(t, &bad, out, 128, &m);
    CHECK(n == 2 || !d9_unwind_tables_is_code(t, g_cap.chain[1]));
    CHECK_EQ_U64(m, D9_STACK_TRUNCATED);

    /* random stack bytes with real registers: bounded, never outside code */
    uint64_t seed = 12345;
    size_t bounded = 0;
    for (int r = 0; r < 2000; r++) {
        static capture noisy;
        noisy = g_cap;
        for (uint32_t i = 0; i < noisy.len; i += 8) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            if ((seed >> 60) < 3) memcpy(noisy.stack + i, &seed, 8);
        }
        d9_unwind_input ni = in;
        ni.stack = noisy.stack;
        n = d9_unwind_user_stack(t, &ni, out, 128, &m);
        bool ok = n >= 1 && n <= 128 && out[0] == g_cap.ip;
        for (uint32_t i = 1; i < n && ok; i++) ok = d9_unwind_tables_is_code(t, out[i]);
        bounded += ok;
    }
    CHECK_EQ_U64(bounded, 2000);
    d9_unwind_tables_release();
    return d9t_summary("source_unwinder");
}
