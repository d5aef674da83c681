/* User stacks that name every caller on a distribution whose libraries have no frame
 * pointers: the leaf frames are unwound with the objects' CFI (cfi_unwind.h) over a copy of
 * the top of the stack taken with the sample; where the copy ends, the walk continues with
 * the frame-pointer chain taken with the same sample (the kernel's PERF_SAMPLE_CALLCHAIN, or
 * the SIGPROF handler's walk), spliced at the frame whose CFA is a link of that chain. Every
 * return address must lie in an executable segment of a loaded object: the walk ends at the
 * first one that does not. Runs on the recorder's background thread. */
#ifndef D9_SOURCES_STACK_UNWIND_H
#define D9_SOURCES_STACK_UNWIND_H

#include <stdbool.h>
#include <stdint.h>

#include "sources/unwind_tables.h"

/* Bytes of the user stack copied with each sample (perf PERF_SAMPLE_STACK_USER, the SIGPROF
 * handler, task dumps); chosen by measurement (docs/kernel-sources.md, "Unwinding"). */
#define D9_UNWIND_STACK_BYTES 2048u

/* How a stack was obtained (StackOriginEvent.method, docs/schemas.md; the values are the
 * format's D9_ORIGIN_*, which test_source_unwinder checks). */
typedef enum d9_stack_method {
    D9_STACK_UNRECORDED = 0, /* no unwinding was attempted (not a user stack, old traces) */
    D9_STACK_FP = 1,         /* frame pointers only: no unwind data applied; callers of frameless functions may be missing */
    D9_STACK_CFI = 2,        /* leaf frames recovered with CFI, the rest spliced from the frame-pointer chain or ended at the outermost frame */
    D9_STACK_TRUNCATED = 3,  /* ended early: the copy ran out with nothing to splice, or an address outside any code */
} d9_stack_method;

typedef struct d9_unwind_input {
    uint64_t ip, sp, bp;          /* user registers at the sample */
    bool ip_is_return;            /* ip is a return address (task dumps): looked up at ip - 1 */
    const uint8_t *stack;         /* a copy of [sp, sp + stack_len) */
    uint64_t stack_len;
    const uint64_t *chain;        /* the frame-pointer walk from (ip, bp): chain[0] = ip, */
    uint32_t nchain;              /* chain[1 + k] = the return address of frame link k */
} d9_unwind_input;

/* Unwind into out[0..max), leaf first (out[0] = ip). Returns the number of frames and sets
 * *method. Never reads memory other than the tables' copies and in->stack/in->chain. */
uint32_t d9_unwind_user_stack(d9_unwind_tables *t, const d9_unwind_input *in, uint64_t *out, uint32_t max,
                              d9_stack_method *method);

#endif
