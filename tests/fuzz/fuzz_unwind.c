/* The stack unwinder (src/sources/stack_unwind.c, cfi_unwind.c) on random registers, stack
 * bytes and frame-pointer chains, against this process's real unwind tables: never reads
 * outside the stack copy or the tables' copies (ASan), never loops (bounded frames, the
 * fuzzer's timeout), every frame past the leaf is code, and the leaf is the given ip.
 *
 * Input: 3 selector words for ip, sp, bp, then the stack copy; the chain is read from the
 * input's tail. A selector with its low bit set names a real code address (an object and an
 * offset into its text), so the CFI programs of real functions run on random stacks; stack
 * words with the low two bits 3 become real code addresses too (plausible return addresses). */
#include <stdlib.h>
#include <string.h>

#include "sources/stack_unwind.h"
#include "sources/unwind_tables.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_OUT 128
#define MAX_STACK 4096

static uint64_t word_at(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static uint64_t code_address(const d9_unwind_tables *t, uint64_t sel) {
    if (t->nobjs == 0) return sel;
    const d9_unwind_object *o = &t->objs[(sel >> 1) % t->nobjs];
    uint64_t span = o->text_hi - o->text_lo;
    return span ? o->text_lo + (sel >> 8) % span : o->text_lo;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 24) return 0;
    d9_unwind_tables *t = d9_unwind_tables_acquire();
    if (!t) return 0;
    uint64_t sel[3] = {word_at(data), word_at(data + 8), word_at(data + 16)};
    data += 24;
    size -= 24;
    static uint8_t stack[MAX_STACK];
    size_t len = size < MAX_STACK ? size : MAX_STACK;
    len &= ~(size_t)7;
    memcpy(stack, data, len);
    uint64_t sp = (sel[1] & 1) ? 0x7ffd00000000ull + ((sel[1] >> 1) & 0xffff0) : sel[1];
    for (size_t i = 0; i + 8 <= len; i += 8) {
        uint64_t w = word_at(stack + i);
        if ((w & 3) == 3) w = code_address(t, w >> 2);
        else if ((w & 3) == 1) w = sp + ((w >> 2) % (len + 64)); /* a pointer into the copy */
        memcpy(stack + i, &w, 8);
    }
    uint64_t chain[64];
    uint32_t nchain = 0;
    uint64_t ip = (sel[0] & 1) ? code_address(t, sel[0] >> 1) : sel[0];
    chain[nchain++] = ip;
    for (size_t i = size >= 8 ? size - 8 : 0; nchain < 64 && i >= 8 && i + 8 <= size; i -= 8) {
        uint64_t w = word_at(data + i);
        chain[nchain++] = (w & 1) ? code_address(t, w) : w;
        if (w % 7 == 0) break;
    }
    d9_unwind_input in = {
        .ip = ip,
        .sp = sp,
        .bp = (sel[2] & 1) ? sp + ((sel[2] >> 1) % (len + 64)) : sel[2],
        .ip_is_return = (sel[2] & 2) != 0,
        .stack = stack,
        .stack_len = len,
        .chain = chain,
        .nchain = (sel[0] & 2) ? 0 : nchain,
    };
    uint64_t out[MAX_OUT];
    d9_stack_method m;
    uint32_t n = d9_unwind_user_stack(t, &in, out, MAX_OUT, &m);
    if (n == 0 || n > MAX_OUT || out[0] != ip || m < D9_STACK_FP || m > D9_STACK_TRUNCATED) abort();
    for (uint32_t i = 1; i < n; i++)
        if (!d9_unwind_tables_is_code(t, out[i])) abort();
    d9_unwind_tables_release();
    return 0;
}
