/* Frame-pointer stack walks that never fault: every frame is checked against the bounds of the
 * stack it lives on before it is read (rules in docs/kernel-sources.md). Usable from a signal
 * handler: no lock, no allocation, no libc call other than async-signal-safe system calls. */
#ifndef D9_SOURCES_FP_UNWIND_H
#define D9_SOURCES_FP_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define D9_FP_MAX_FRAME_BYTES (256u * 1024u) /* a larger hop is not a frame link */

/* A stack's readable range [lo, hi). */
typedef struct d9_stack_bounds {
    uint64_t lo, hi;
} d9_stack_bounds;

/* Whether `addr` can be a return address in user space (not in the first or last 4 KiB). */
static inline bool d9_fp_plausible_pc(uint64_t addr) {
    return addr >= 4096 && addr < 0x800000000000ull - 4096;
}

/* Walk the frame chain starting at frame pointer `fp`, with `sp` the current stack pointer
 * (frames below it are dead). Writes `pc` first when nonzero, then the return address of each
 * frame, leaf first, at most `max` entries. Stops at the first frame that is out of bounds,
 * misaligned, not above the previous one, too large, or whose return address is implausible.
 * Returns the number of entries written. */
size_t d9_fp_walk(uint64_t pc, uint64_t fp, uint64_t sp, const d9_stack_bounds *b, uint64_t *out,
                  size_t max);

/* Copy up to `max` bytes of the stack from `sp` (8-aligned, inside `b`) to `dst`, for unwinding
 * later. Returns the bytes copied (0 when sp is outside the bounds). Async-signal-safe; never a
 * call to an (intercepted) memcpy. */
uint32_t d9_fp_copy_stack(uint8_t *dst, uint64_t sp, const d9_stack_bounds *b, uint32_t max);

/* The calling thread's stack from pthread_getattr_np. Not async-signal-safe (glibc may read
 * /proc/self/maps for the main thread); call it once per thread. False when unknown. */
bool d9_stack_bounds_of_self(d9_stack_bounds *b);

/* The mapping of /proc/self/maps that contains `addr` (a stack pointer). Async-signal-safe
 * (open, read, close and plain parsing), but costs tens of µs: cache the answer. */
bool d9_stack_bounds_from_maps(uint64_t addr, d9_stack_bounds *b);

#endif
