/* The .debug_frame index (d9_cfi_index_debug_frame) is built in O(n log n), counted: callgrind's
 * instructions inside the indexing of a synthetic .debug_frame of N FDEs written in descending
 * address order (link order is not address order in a large binary; descending is the worst
 * case of the insertion sort the index used before, quadratic in N), at two sizes: the
 * difference over the difference of the FDEs is one FDE's cost, bounded here. The index is
 * also checked as lookups see it: sorted by start, ties (two FDEs at one address) in order of
 * offset, so the lookup's pick (the last FDE starting at or below pc) is the one before, and a
 * row is found for an address of every FDE checked.
 *
 * Skips without valgrind and in a sanitizer build. Labelled nosan in CMakeLists.txt. */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "callgrind_total.h"
#include "check.h"
#include "sources/cfi_unwind.h"
#include "sources/unwind_tables.h"

/* Measured (gcc 12, -O2, glibc's qsort): 1 318 instructions an FDE, its parse (the CIE's
 * included) most of them; with the insertion sort before, 45 738 (~N/2 moves an FDE). */
#define BOUND_PER_FDE 2000.0
#define N1 1000
#define N2 8000

#define BASE 0x400000u
#define FDE_LEN 24 /* length word + body: CIE pointer, start, range */

static void le(uint8_t *p, uint64_t v, int n) {
    for (int i = 0; i < n; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* FDE i's start: descending, every 16 bytes; the last two share one start (a tie) */
static uint64_t fde_start(size_t i, size_t n) { return BASE + 16u * (uint64_t)(i + 1 == n ? n - i : n - 1 - i); }

/* A .debug_frame: one CIE (version 1, no augmentation, CFA = rsp + 8, return address at
 * CFA - 8), then n FDEs of 16 bytes of code each. malloc'ed; *len its size. */
static uint8_t *make_debug_frame(size_t n, uint64_t *len) {
    static const uint8_t cie[] = {14, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 1, 0, 1, 0x78, 16,
                                  0x0c, 7, 8, 0x90, 1};
    *len = sizeof cie + (uint64_t)n * FDE_LEN;
    uint8_t *s = malloc(*len);
    if (!s) return NULL;
    memcpy(s, cie, sizeof cie);
    for (size_t i = 0; i < n; i++) {
        uint8_t *f = s + sizeof cie + i * FDE_LEN;
        le(f, FDE_LEN - 4, 4);
        le(f + 4, 0, 4); /* the CIE at offset 0 */
        le(f + 8, fde_start(i, n), 8);
        le(f + 16, 16, 8);
    }
    return s;
}

static d9_unwind_object make_object(size_t n) {
    d9_unwind_object o = {.text_lo = BASE, .text_hi = BASE + 16u * (uint64_t)(n + 2)};
    o.dbg = make_debug_frame(n, &o.dbg_len);
    return o;
}

/* The counted part (callgrind --toggle-collect). */
static __attribute__((noipa)) bool counted_index(d9_unwind_object *o) { return d9_cfi_index_debug_frame(o); }

static long long count(const char *self, const char *dir, int n) {
    char out[1200], command[2048];
    snprintf(out, sizeof out, "%s/cg.%d", dir, n);
    snprintf(command, sizeof command, "'%s' index %d", self, n);
    return d9t_callgrind_total(out, "--toggle-collect=counted_index", command);
}

/* The index as lookups see it, and a row found for an address of every FDE. */
static void check_index(size_t n) {
    d9_unwind_object o = make_object(n);
    CHECK(o.dbg != NULL);
    if (!o.dbg) return;
    CHECK(d9_cfi_index_debug_frame(&o));
    CHECK_EQ_U64(o.dbg_count, n);
    size_t unsorted = 0, ties = 0, misplaced_ties = 0;
    for (size_t i = 1; i < o.dbg_count; i++) {
        if (o.dbg_fdes[i - 1].lo > o.dbg_fdes[i].lo) unsorted++;
        if (o.dbg_fdes[i - 1].lo == o.dbg_fdes[i].lo) {
            ties++;
            if (o.dbg_fdes[i - 1].off > o.dbg_fdes[i].off) misplaced_ties++;
        }
    }
    CHECK_EQ_U64(unsorted, 0);
    CHECK_EQ_U64(ties, 1);
    CHECK_EQ_U64(misplaced_ties, 0);
    d9_unwind_tables t = {.objs = &o, .nobjs = 1, .built = true, .generation = 1};
    size_t found = 0;
    for (size_t i = 0; i < n; i++) {
        d9_cfi_row row;
        if (d9_cfi_find_row(&t, fde_start(i, n) + 7, &row) == D9_CFI_OK && !row.cfa_is_expr &&
            row.cfa.reg == D9_DW_RSP && row.cfa.off == 8)
            found++;
    }
    CHECK_EQ_U64(found, n);
    free(t.row_cache);
    free(o.dbg_fdes);
    free(o.dbg);
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "index")) {
        d9_unwind_object o = make_object((size_t)atoi(argv[2]));
        bool ok = o.dbg && counted_index(&o);
        printf("%u FDEs indexed\n", o.dbg_count);
        return ok ? 0 : 1;
    }
    check_index(N1);
    check_index(5);
#ifdef D9T_SANITIZED
    printf("SKIP the count: a sanitizer build (valgrind refuses it; the count is of the plain build)\n");
    return d9t_summary("debug_frame_index_instructions");
#endif
    if (d9t_run("command -v valgrind >/dev/null 2>&1") != 0) {
        printf("SKIP the count: valgrind is not installed (apt-get install valgrind)\n");
        return d9t_summary("debug_frame_index_instructions");
    }
    char self[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) {
        fprintf(stderr, "FAIL: readlink /proc/self/exe: %s\n", strerror(errno));
        return 1;
    }
    self[len] = '\0';
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/debug-frame-index.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir)) {
        fprintf(stderr, "FAIL: mkdtemp %s: %s\n", dir, strerror(errno));
        return 1;
    }
    long long a = count(self, dir, N1), b = count(self, dir, N2);
    CHECK(a > 0 && b > a);
    if (a > 0 && b > a) {
        double per = (double)(b - a) / (N2 - N1);
        printf("%s: %.1f instructions an FDE indexed (bound %.0f; %lld for %d, %lld for %d)\n",
               per <= BOUND_PER_FDE ? "ok" : "FAIL", per, BOUND_PER_FDE, a, N1, b, N2);
        CHECK(per <= BOUND_PER_FDE);
    }
    char cmd[1100];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    (void)d9t_run(cmd);
    return d9t_summary("debug_frame_index_instructions");
}
