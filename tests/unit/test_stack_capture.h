/* A stack captured synchronously, as a sampler would see it, for the unwinder's deterministic
 * tests (no perf, no signals): call capture_caller() from the function whose caller the
 * sample is to start in; g_cap then holds that caller's ip, sp and bp, the stack copied from
 * sp (d9_fp_copy_stack, the samplers' own copy) and the frame-pointer chain. One capture per
 * program: g_captured counts them. */
#ifndef D9_TEST_STACK_CAPTURE_H
#define D9_TEST_STACK_CAPTURE_H

#include <stdint.h>

#include "sources/fp_unwind.h"
#include "sources/stack_unwind.h"
#include "test_source_util.h"

#if defined(__clang__)
#define NO_SANITIZE __attribute__((no_sanitize("address", "undefined")))
#else
#define NO_SANITIZE __attribute__((no_sanitize_address, no_sanitize_undefined))
#endif

typedef struct capture {
    uint64_t ip, sp, bp;
    uint32_t len, nchain;
    uint8_t stack[D9_UNWIND_STACK_BYTES];
    uint64_t chain[64];
} capture;

static capture g_cap;
static int g_captured;

/* The caller's state as a sampler sees it right after this call returns: ip its return
 * address, sp above it, bp the caller's rbp; the stack from there. */
TT_NOINLINE NO_SANITIZE static void capture_caller(void) {
    const uint64_t *fp = __builtin_frame_address(0);
    d9_stack_bounds b;
    if (!d9_stack_bounds_of_self(&b)) return;
    g_cap.ip = fp[1];
    g_cap.sp = (uint64_t)(uintptr_t)(fp + 2);
    g_cap.bp = fp[0];
    g_cap.len = d9_fp_copy_stack(g_cap.stack, g_cap.sp, &b, sizeof g_cap.stack);
    g_cap.nchain = (uint32_t)d9_fp_walk(g_cap.ip, g_cap.bp, g_cap.sp, &b, g_cap.chain, 64);
    g_captured++;
}

#endif
