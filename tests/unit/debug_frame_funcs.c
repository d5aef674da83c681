/* Functions whose only unwind tables are in .debug_frame: test_source_debug_frame builds this
 * file with -g -fno-asynchronous-unwind-tables -fno-unwind-tables (no .eh_frame entries) and
 * -fomit-frame-pointer (the frame-pointer chain skips them), as some programs are built. Each
 * keeps a frame of its own (locals, work after the call), so unwinding needs its CFI. */
#include "debug_frame_funcs.h"

__attribute__((noinline)) int df_middle(void (*fn)(void), int x) {
    volatile int pad[16];
    for (int i = 0; i < 16; i++) pad[i] = x + i;
    fn();
    return pad[3] + pad[7];
}

__attribute__((noinline)) int df_outer(void (*fn)(void), int x) {
    volatile int pad[8];
    for (int i = 0; i < 8; i++) pad[i] = x * i;
    int r = df_middle(fn, x + 1);
    return r + pad[2];
}
