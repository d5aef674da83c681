/* An x86-64 DWARF call-frame-information interpreter over the copied unwind tables
 * (unwind_tables.h): for a code address, the row of the CIE/FDE program that says where the
 * caller's registers are (the CFA rule and the register rules), and one step from a frame's
 * registers to its caller's, reading memory only from a copy of the stack. Every read is
 * bounds-checked; nothing from a sample is ever dereferenced as a pointer. */
#ifndef D9_SOURCES_CFI_UNWIND_H
#define D9_SOURCES_CFI_UNWIND_H

#include <stdbool.h>
#include <stdint.h>

#include "sources/unwind_tables.h"

/* DWARF register numbers of x86-64 (System V ABI): 6 rbp, 7 rsp, 16 the return address. */
enum { D9_DW_RBP = 6, D9_DW_RSP = 7, D9_DW_RA = 16, D9_DW_NREGS = 17 };

typedef struct d9_regs {
    uint64_t r[D9_DW_NREGS];
    uint32_t known; /* bit i: r[i] is known */
} d9_regs;

/* A copy of the stack: the bytes at [base, base + len). */
typedef struct d9_stack_copy {
    uint64_t base;
    const uint8_t *bytes;
    uint64_t len;
} d9_stack_copy;

enum { D9_RULE_SAME, D9_RULE_UNDEF, D9_RULE_OFFSET, D9_RULE_VAL_OFFSET, D9_RULE_REGISTER, D9_RULE_EXPR,
       D9_RULE_VAL_EXPR };

typedef struct d9_cfi_rule {
    uint8_t kind;
    uint8_t reg;          /* D9_RULE_REGISTER; the CFA's base register */
    int64_t off;
    const uint8_t *expr;  /* D9_RULE_*EXPR: in the tables' copy */
    uint32_t expr_len;
} d9_cfi_rule;

typedef struct d9_cfi_row {
    bool cfa_is_expr;
    d9_cfi_rule cfa;      /* register + offset, or an expression */
    d9_cfi_rule rules[D9_DW_NREGS];
    bool ra_specified;    /* the program said where the return address is */
    bool signal_frame;    /* 'S': the caller's pc is exact (looked up as is, not pc - 1) */
} d9_cfi_row;

typedef enum d9_cfi_status {
    D9_CFI_OK,        /* the caller's registers are in *out */
    D9_CFI_END,       /* the outermost frame (return address undefined) */
    D9_CFI_NO_INFO,   /* no unwind tables cover this address */
    D9_CFI_FAIL,      /* malformed tables, an unknown register or memory outside the copy */
} d9_cfi_status;

/* Index the FDEs of o->dbg (.debug_frame) into o->dbg_fdes. False when none could be read
 * (o->dbg is then freed). */
bool d9_cfi_index_debug_frame(d9_unwind_object *o);

/* The row for code address `pc` (already pc - 1 for a return address). Rows are cached per
 * address in the tables (t->row_cache), so the CIE/FDE programs of the hot return addresses
 * run once per rebuild of the tables. */
d9_cfi_status d9_cfi_find_row(d9_unwind_tables *t, uint64_t pc, d9_cfi_row *row);

/* The CFA of the frame described by `row` with registers `regs`. */
bool d9_cfi_cfa(const d9_cfi_row *row, const d9_regs *regs, const d9_stack_copy *stk, uint64_t *cfa);

/* The caller's registers: `out`'s rip is the return address, rsp the CFA. */
d9_cfi_status d9_cfi_apply(const d9_cfi_row *row, uint64_t cfa, const d9_regs *regs, const d9_stack_copy *stk,
                           d9_regs *out);

/* 8 bytes of the stack copy at `addr`; false when outside it. */
static inline bool d9_stack_copy_read(const d9_stack_copy *s, uint64_t addr, uint64_t *v) {
    if (addr < s->base || s->len < 8 || addr - s->base > s->len - 8) return false;
    const uint8_t *p = s->bytes + (addr - s->base);
    uint64_t x = 0;
    for (int i = 7; i >= 0; i--) x = x << 8 | p[i];
    *v = x;
    return true;
}

#endif
