/* .debug_frame is read where .eh_frame has nothing: a stack captured inside functions built
 * with -g -fno-asynchronous-unwind-tables -fomit-frame-pointer (debug_frame_funcs.c: their only
 * unwind tables are in .debug_frame, and no frame pointer links them) unwinds to
 *   df_middle <- df_outer <- run_test <- main
 * with CFI (method 2); the same stack with the executable's .debug_frame index removed from
 * the tables misses df_outer (what the unwinder did before it read .debug_frame). Deterministic:
 * no perf, no signals. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "debug_frame_funcs.h"
#include "sources/fp_unwind.h"
#include "sources/stack_unwind.h"
#include "sources/unwind_tables.h"
#include "test_stack_capture.h"

static volatile int g_sink;

TT_NOINLINE static void run_test(void) {
    g_sink += df_outer(capture_caller, 3);
}

static int at(const uint64_t *out, uint32_t n, tt_range r) {
    for (uint32_t i = 0; i < n; i++)
        if (tt_in(r, out[i])) return (int)i;
    return -1;
}

static void print_stack(const char *what, const uint64_t *out, uint32_t n) {
    if (!getenv("D9_TEST_VERBOSE")) return;
    fprintf(stderr, "%s:", what);
    for (uint32_t i = 0; i < n; i++) {
        Dl_info di;
        fprintf(stderr, " %s", dladdr((void *)(uintptr_t)out[i], &di) && di.dli_sname ? di.dli_sname : "?");
    }
    fprintf(stderr, "\n");
}

int main(void) {
    run_test();
    CHECK(g_captured == 1);
    d9_unwind_tables *t = d9_unwind_tables_acquire();
    CHECK(t != NULL);
    if (!t || !g_captured) return d9t_summary("source_debug_frame");
    tt_range middle = tt_function_range("df_middle", (const void *)df_middle);
    tt_range outer = tt_function_range("df_outer", (const void *)df_outer);
    tt_range test = tt_function_range("run_test", (const void *)run_test);
    tt_range mainr = tt_function_range("main", (const void *)main);
    d9_unwind_object *exe = (d9_unwind_object *)d9_unwind_tables_find(t, middle.lo);
    CHECK(exe != NULL);
    if (!exe) return d9t_summary("source_debug_frame");
    printf("executable: .debug_frame %" PRIu64 " bytes, %u FDEs; .eh_frame_hdr %u FDEs\n", exe->dbg_len,
           exe->dbg_count, exe->fde_count);
    CHECK(exe->dbg_count > 0);

    static uint64_t out[128];
    d9_stack_method m;
    d9_unwind_input in = {.ip = g_cap.ip, .sp = g_cap.sp, .bp = g_cap.bp, .ip_is_return = true, .stack = g_cap.stack,
                          .stack_len = g_cap.len, .chain = g_cap.chain, .nchain = g_cap.nchain};
    uint32_t n = d9_unwind_user_stack(t, &in, out, 128, &m);
    print_stack("with .debug_frame", out, n);
    int im = at(out, n, middle), io = at(out, n, outer), it = at(out, n, test), imain = at(out, n, mainr);
    printf("with .debug_frame: %u frames, df_middle at %d, df_outer at %d, run_test at %d, main at %d, method %d\n", n,
           im, io, it, imain, (int)m);
    CHECK(im == 0 && io == 1 && it == 2 && imain > it);
    CHECK_EQ_U64(m, D9_STACK_CFI);

    /* the same without the executable's .debug_frame: df_outer is lost */
    uint32_t saved = exe->dbg_count;
    exe->dbg_count = 0;
    t->generation++; /* the row cache holds the rows found above */
    n = d9_unwind_user_stack(t, &in, out, 128, &m);
    exe->dbg_count = saved;
    t->generation++;
    print_stack("without", out, n);
    printf("without .debug_frame: %u frames, df_outer %s\n", n, at(out, n, outer) >= 0 ? "present" : "missing");
    CHECK(at(out, n, outer) < 0);
    d9_unwind_tables_release();
    return d9t_summary("source_debug_frame");
}
