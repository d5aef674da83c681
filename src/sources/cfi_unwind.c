/* DWARF CFI for x86-64 (.eh_frame, DWARF 4 section 6.4 and the LSB's .eh_frame format; and
 * .debug_frame, whose CIE id, CIE pointers and addresses differ: see `section`). All
 * table reads go through a bounds-checked cursor over the object's copy; all stack reads
 * through d9_stack_copy_read. Loops are bounded by the bytes they consume. */
#include "sources/cfi_unwind.h"

#include <stdlib.h>
#include <string.h>

#define MAX_REMEMBERED 8   /* DW_CFA_remember_state depth */
#define MAX_EXPR_STACK 16
#define MAX_EXPR_STEPS 256 /* branches can loop: stop there */

typedef struct cursor {
    const uint8_t *p, *end;
    uint64_t vaddr;        /* run-time address of p */
    bool ok;
} cursor;

/* The table an entry lives in: .eh_frame (run-time addresses; CIE id 0; an FDE's CIE pointer
 * is relative to itself) or .debug_frame (section offsets; CIE id 0xffffffff; CIE pointers are
 * section offsets; absolute addresses are link-time, plus `bias`). */
typedef struct section {
    const uint8_t *bytes;
    uint64_t base, len; /* bytes[0] is at address `base` */
    bool debug;
    uint64_t bias;
} section;

static section eh_section(const d9_unwind_object *o) {
    return (section){o->copy, o->copy_vaddr, o->copy_len, false, 0};
}

static section debug_section(const d9_unwind_object *o) { return (section){o->dbg, 0, o->dbg_len, true, o->bias}; }

static cursor cursor_at(const section *s, uint64_t vaddr, uint64_t len) {
    cursor c = {NULL, NULL, vaddr, false};
    if (s->bytes && vaddr >= s->base && len <= s->len && vaddr - s->base <= s->len - len) {
        c.p = s->bytes + (vaddr - s->base);
        c.end = c.p + len;
        c.ok = true;
    }
    return c;
}

static bool take(cursor *c, size_t n) {
    if (!c->ok || (size_t)(c->end - c->p) < n) {
        c->ok = false;
        return false;
    }
    return true;
}

static uint64_t rd_le(cursor *c, size_t n) {
    if (!take(c, n)) return 0;
    uint64_t v = 0;
    for (size_t i = n; i-- > 0;) v = v << 8 | c->p[i];
    c->p += n;
    c->vaddr += n;
    return v;
}

static uint8_t rd_u8(cursor *c) { return (uint8_t)rd_le(c, 1); }

static uint64_t rd_uleb(cursor *c) {
    uint64_t v = 0;
    for (unsigned shift = 0;; shift += 7) {
        if (!take(c, 1)) return 0;
        uint8_t b = *c->p++;
        c->vaddr++;
        if (shift < 64) v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) return v;
        if (shift > 63) { /* longer than any value we use */
            c->ok = false;
            return 0;
        }
    }
}

static int64_t rd_sleb(cursor *c) {
    uint64_t v = 0;
    unsigned shift = 0;
    uint8_t b;
    do {
        if (!take(c, 1)) return 0;
        b = *c->p++;
        c->vaddr++;
        if (shift < 64) v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
        if (shift > 70) {
            c->ok = false;
            return 0;
        }
    } while (b & 0x80);
    if (shift < 64 && (b & 0x40)) v |= ~0ull << shift;
    return (int64_t)v;
}

/* A pointer in encoding `enc` (DW_EH_PE_*). Only the applications .eh_frame uses: absolute
 * and pc-relative; `value_only` reads the format without applying (FDE address ranges). */
static uint64_t rd_encoded(cursor *c, uint8_t enc, bool value_only) {
    if (enc == 0xff) return 0; /* omitted */
    uint64_t at = c->vaddr, v;
    switch (enc & 0x0f) {
    case 0x00: v = rd_le(c, 8); break;
    case 0x01: v = rd_uleb(c); break;
    case 0x02: v = rd_le(c, 2); break;
    case 0x03: v = rd_le(c, 4); break;
    case 0x04: v = rd_le(c, 8); break;
    case 0x09: v = (uint64_t)rd_sleb(c); break;
    case 0x0a: v = (uint64_t)(int64_t)(int16_t)rd_le(c, 2); break;
    case 0x0b: v = (uint64_t)(int64_t)(int32_t)rd_le(c, 4); break;
    case 0x0c: v = rd_le(c, 8); break;
    default: c->ok = false; return 0;
    }
    if (value_only) return v;
    switch (enc & 0x70) {
    case 0x00: break;
    case 0x10: v += at; break;
    default: c->ok = false; return 0; /* textrel, datarel, funcrel, aligned: not in .eh_frame of x86-64 */
    }
    return v;
}

/* ---------------------------------------------------------------- CIE and FDE */

typedef struct cie_info {
    uint64_t code_align;
    int64_t data_align;
    uint64_t ra_reg;
    uint8_t fde_enc;
    bool has_z, signal;
    uint64_t bias;       /* added to absolute addresses (.debug_frame's are link-time) */
    cursor insns;        /* the initial instructions */
} cie_info;

#define DEBUG_CIE_ID 0xffffffffu

/* An entry's length word (32-bit, or 0xffffffff then 64-bit); a cursor over its body. */
static bool entry_body(const section *s, uint64_t vaddr, cursor *body) {
    cursor c = cursor_at(s, vaddr, 4);
    uint64_t len = rd_le(&c, 4);
    uint64_t start = vaddr + 4;
    if (len == 0xffffffffu) {
        if (s->debug) return false; /* 64-bit DWARF: its ids and pointers are 8 bytes (not read) */
        c = cursor_at(s, start, 8);
        len = rd_le(&c, 8);
        start += 8;
    }
    if (!c.ok || len == 0 || len > s->len) return false;
    *body = cursor_at(s, start, len);
    return body->ok;
}

/* An absolute address of the table plus the bias (encodings without an application). */
static uint64_t rd_address(cursor *c, const cie_info *ci) {
    uint64_t v = rd_encoded(c, ci->fde_enc, false);
    return (ci->fde_enc & 0x70) == 0 && ci->fde_enc != 0xff ? v + ci->bias : v;
}

static bool parse_cie(const section *s, uint64_t vaddr, cie_info *ci) {
    cursor c;
    if (!entry_body(s, vaddr, &c)) return false;
    if (rd_le(&c, 4) != (s->debug ? DEBUG_CIE_ID : 0)) return false;
    uint8_t version = rd_u8(&c);
    if (version != 1 && version != 3 && version != 4) return false;
    char aug[8];
    size_t n = 0;
    for (;;) {
        uint8_t ch = rd_u8(&c);
        if (!c.ok) return false;
        if (ch == 0) break;
        if (n == sizeof aug - 1) return false;
        aug[n++] = (char)ch;
    }
    aug[n] = 0;
    if (version == 4) { /* address size, segment selector size */
        if (rd_u8(&c) != 8) return false;
        rd_u8(&c);
    }
    ci->code_align = rd_uleb(&c);
    ci->data_align = rd_sleb(&c);
    ci->ra_reg = version == 1 ? rd_u8(&c) : rd_uleb(&c);
    ci->fde_enc = 0; /* absptr: the only encoding of .debug_frame without augmentation */
    ci->bias = s->debug ? s->bias : 0;
    ci->signal = false;
    ci->has_z = aug[0] == 'z';
    if (aug[0] && !ci->has_z) return false; /* "eh" and other pre-'z' augmentations */
    if (ci->has_z) {
        uint64_t alen = rd_uleb(&c);
        if (!take(&c, alen)) return false;
        cursor a = c;
        a.end = c.p + alen;
        for (size_t i = 1; aug[i] && a.ok; i++) {
            if (aug[i] == 'R') ci->fde_enc = rd_u8(&a);
            else if (aug[i] == 'L') rd_u8(&a);
            else if (aug[i] == 'P') rd_encoded(&a, (uint8_t)(rd_u8(&a) & 0x7f), true);
            else if (aug[i] == 'S') ci->signal = true;
            else if (aug[i] == 'B' || aug[i] == 'G') continue;
            else break; /* unknown: the rest is skipped by its length */
        }
        c.p += alen;
        c.vaddr += alen;
    }
    if (!c.ok || ci->ra_reg != D9_DW_RA || ci->code_align == 0) return false;
    ci->insns = c;
    return true;
}

typedef struct fde_info {
    uint64_t pc_begin, pc_end;
    cie_info cie;
    cursor insns;
} fde_info;

static bool parse_fde(const section *s, uint64_t vaddr, fde_info *fi) {
    cursor c;
    if (!entry_body(s, vaddr, &c)) return false;
    uint64_t id_at = c.vaddr;
    uint64_t cie_ptr = rd_le(&c, 4);
    if (!c.ok) return false;
    if (s->debug) {
        if (cie_ptr == DEBUG_CIE_ID || cie_ptr >= s->len) return false; /* a CIE, or pointing outside */
        if (!parse_cie(s, s->base + cie_ptr, &fi->cie)) return false;
    } else {
        if (cie_ptr == 0 || cie_ptr > id_at) return false; /* a CIE, or pointing outside */
        if (!parse_cie(s, id_at - cie_ptr, &fi->cie)) return false;
    }
    uint8_t enc = fi->cie.fde_enc;
    fi->pc_begin = rd_address(&c, &fi->cie);
    uint64_t range = rd_encoded(&c, (uint8_t)(enc & 0x0f), true);
    fi->pc_end = fi->pc_begin + range;
    if (fi->cie.has_z) {
        uint64_t alen = rd_uleb(&c);
        if (!take(&c, alen)) return false;
        c.p += alen;
        c.vaddr += alen;
    }
    fi->insns = c;
    return c.ok && fi->pc_end > fi->pc_begin;
}

/* The FDE of .debug_frame covering pc (the index is sorted by lo). */
static bool find_debug_fde(const d9_unwind_object *o, uint64_t pc, fde_info *fi) {
    size_t lo = 0, hi = o->dbg_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (o->dbg_fdes[mid].lo <= pc) lo = mid + 1;
        else hi = mid;
    }
    if (lo == 0 || pc >= o->dbg_fdes[lo - 1].hi) return false;
    section s = debug_section(o);
    return parse_fde(&s, o->dbg_fdes[lo - 1].off, fi) && pc >= fi->pc_begin && pc < fi->pc_end;
}

static int by_lo_then_offset(const void *a, const void *b) {
    const d9_dbg_fde *x = a, *y = b;
    if (x->lo != y->lo) return x->lo < y->lo ? -1 : 1;
    return x->off < y->off ? -1 : x->off > y->off;
}

bool d9_cfi_index_debug_frame(d9_unwind_object *o) {
    section s = debug_section(o);
    size_t n = 0, cap = 0;
    d9_dbg_fde *v = NULL;
    for (uint64_t off = 0; off + 4 <= o->dbg_len;) {
        cursor c;
        if (!entry_body(&s, off, &c)) break;
        uint64_t next = (uint64_t)(c.end - s.bytes); /* bodies lie inside the section */
        fde_info fi;
        if (parse_fde(&s, off, &fi)) {
            if (n == cap) {
                cap = cap ? cap * 2 : 64;
                d9_dbg_fde *w = realloc(v, cap * sizeof *w);
                if (!w) break;
                v = w;
            }
            v[n++] = (d9_dbg_fde){fi.pc_begin, fi.pc_end, off};
        }
        off = next;
    }
    /* Sorted once (an insertion sort per FDE was quadratic in a large binary's thousands of
     * them); ties in order of offset, as found, so the lookup's pick among them is unchanged. */
    if (n > 1) qsort(v, n, sizeof *v, by_lo_then_offset); /* v is NULL when none was found */
    if (n == 0) {
        free(v);
        free(o->dbg);
        o->dbg = NULL;
        o->dbg_len = 0;
        return false;
    }
    o->dbg_fdes = v;
    o->dbg_count = (uint32_t)n;
    return true;
}

static bool find_eh_fde(const d9_unwind_object *o, uint64_t pc, fde_info *fi);

/* The FDE whose initial location is the last one at or below pc (.eh_frame_hdr's sorted
 * table of datarel sdata4 pairs); else the one .debug_frame has. */
static bool find_fde(const d9_unwind_object *o, uint64_t pc, fde_info *fi) {
    if (o->copy && o->fde_count > 0 && find_eh_fde(o, pc, fi)) return true;
    return o->dbg_count > 0 && find_debug_fde(o, pc, fi);
}

static bool find_eh_fde(const d9_unwind_object *o, uint64_t pc, fde_info *fi) {
    const uint8_t *table = d9_unwind_object_bytes(o, o->table_vaddr, (uint64_t)o->fde_count * 8);
    if (!table) return false;
    size_t lo = 0, hi = o->fde_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int32_t loc;
        memcpy(&loc, table + mid * 8, 4);
        if (o->hdr_vaddr + (uint64_t)(int64_t)loc <= pc) lo = mid + 1;
        else hi = mid;
    }
    if (lo == 0) return false;
    int32_t fde;
    memcpy(&fde, table + (lo - 1) * 8 + 4, 4);
    section s = eh_section(o);
    if (!parse_fde(&s, o->hdr_vaddr + (uint64_t)(int64_t)fde, fi)) return false;
    return pc >= fi->pc_begin && pc < fi->pc_end;
}

/* ---------------------------------------------------------------- the CFA program */

typedef struct cfa_state {
    bool cfa_is_expr;
    d9_cfi_rule cfa;
    d9_cfi_rule rules[D9_DW_NREGS];
    bool ra_specified;
} cfa_state;

static d9_cfi_rule *rule_of(cfa_state *s, uint64_t reg) {
    return reg < D9_DW_NREGS ? &s->rules[reg] : NULL; /* others (vector registers): ignored */
}

static void note_rule(cfa_state *s, uint64_t reg, d9_cfi_rule r) {
    d9_cfi_rule *d = rule_of(s, reg);
    if (!d) return;
    *d = r;
    if (reg == D9_DW_RA) s->ra_specified = true;
}

/* factor * the CIE's data alignment, wrapping as the address arithmetic does: a hostile table's
 * huge factor gives an offset outside the stack copy (a failed read), never an overflow. */
static int64_t data_scaled(uint64_t factor, const cie_info *ci) {
    return (int64_t)(factor * (uint64_t)ci->data_align);
}

/* Run instructions until the location passes `pc` (initial instructions: `pc` = UINT64_MAX,
 * no location). `init` holds the rules after the CIE's instructions (DW_CFA_restore). */
static bool run_program(cursor c, const cie_info *ci, uint64_t loc, uint64_t pc, cfa_state *s, const cfa_state *init) {
    cfa_state stack[MAX_REMEMBERED];
    int depth = 0;
    while (c.ok && c.p < c.end) {
        uint8_t op = rd_u8(&c);
        uint8_t low = op & 0x3f;
        uint64_t reg, delta = 0;
        d9_cfi_rule r;
        memset(&r, 0, sizeof r);
        switch (op >> 6) {
        case 1: delta = low; goto advance;
        case 2:
            r.kind = D9_RULE_OFFSET;
            r.off = data_scaled(rd_uleb(&c), ci);
            note_rule(s, low, r);
            continue;
        case 3:
            if (init && low < D9_DW_NREGS) s->rules[low] = init->rules[low];
            continue;
        default: break;
        }
        switch (op) {
        case 0x00: break; /* nop */
        case 0x01: { /* set_loc */
            uint64_t to = rd_address(&c, ci);
            if (to > pc) return c.ok;
            loc = to;
            break;
        }
        case 0x02: delta = rd_le(&c, 1); goto advance;
        case 0x03: delta = rd_le(&c, 2); goto advance;
        case 0x04: delta = rd_le(&c, 4); goto advance;
        case 0x05: /* offset_extended */
            reg = rd_uleb(&c);
            r.kind = D9_RULE_OFFSET;
            r.off = data_scaled(rd_uleb(&c), ci);
            note_rule(s, reg, r);
            break;
        case 0x06: /* restore_extended */
            reg = rd_uleb(&c);
            if (init && reg < D9_DW_NREGS) s->rules[reg] = init->rules[reg];
            break;
        case 0x07: r.kind = D9_RULE_UNDEF; note_rule(s, rd_uleb(&c), r); break;
        case 0x08: r.kind = D9_RULE_SAME; note_rule(s, rd_uleb(&c), r); break;
        case 0x09: /* register */
            reg = rd_uleb(&c);
            r.kind = D9_RULE_REGISTER;
            r.reg = (uint8_t)(rd_uleb(&c) & 0xff);
            if (r.reg >= D9_DW_NREGS) r.kind = D9_RULE_UNDEF;
            note_rule(s, reg, r);
            break;
        case 0x0a:
            if (depth == MAX_REMEMBERED) return false;
            stack[depth++] = *s;
            break;
        case 0x0b: {
            if (depth == 0) return false;
            /* the whole row, CFA rule included, as GCC's own unwinder restores it */
            *s = stack[--depth];
            break;
        }
        case 0x0c: /* def_cfa */
            s->cfa_is_expr = false;
            s->cfa.reg = (uint8_t)(rd_uleb(&c) & 0xff);
            s->cfa.off = (int64_t)rd_uleb(&c);
            break;
        case 0x0d: s->cfa_is_expr = false; s->cfa.reg = (uint8_t)(rd_uleb(&c) & 0xff); break;
        case 0x0e: s->cfa.off = (int64_t)rd_uleb(&c); break;
        case 0x0f: { /* def_cfa_expression */
            uint64_t n = rd_uleb(&c);
            if (!take(&c, n)) return false;
            s->cfa_is_expr = true;
            s->cfa.expr = c.p;
            s->cfa.expr_len = (uint32_t)n;
            c.p += n;
            c.vaddr += n;
            break;
        }
        case 0x10: case 0x16: { /* expression, val_expression */
            reg = rd_uleb(&c);
            uint64_t n = rd_uleb(&c);
            if (!take(&c, n)) return false;
            r.kind = op == 0x10 ? D9_RULE_EXPR : D9_RULE_VAL_EXPR;
            r.expr = c.p;
            r.expr_len = (uint32_t)n;
            c.p += n;
            c.vaddr += n;
            note_rule(s, reg, r);
            break;
        }
        case 0x11: /* offset_extended_sf */
            reg = rd_uleb(&c);
            r.kind = D9_RULE_OFFSET;
            r.off = data_scaled((uint64_t)rd_sleb(&c), ci);
            note_rule(s, reg, r);
            break;
        case 0x12: /* def_cfa_sf */
            s->cfa_is_expr = false;
            s->cfa.reg = (uint8_t)(rd_uleb(&c) & 0xff);
            s->cfa.off = data_scaled((uint64_t)rd_sleb(&c), ci);
            break;
        case 0x13: s->cfa.off = data_scaled((uint64_t)rd_sleb(&c), ci); break;
        case 0x14: case 0x15: /* val_offset, val_offset_sf */
            reg = rd_uleb(&c);
            r.kind = D9_RULE_VAL_OFFSET;
            r.off = data_scaled(op == 0x14 ? rd_uleb(&c) : (uint64_t)rd_sleb(&c), ci);
            note_rule(s, reg, r);
            break;
        case 0x2e: rd_uleb(&c); break; /* GNU_args_size */
        case 0x2f: /* GNU_negative_offset_extended */
            reg = rd_uleb(&c);
            r.kind = D9_RULE_OFFSET;
            r.off = data_scaled(0 - rd_uleb(&c), ci);
            note_rule(s, reg, r);
            break;
        default: return false; /* unknown opcode: its operands cannot be skipped */
        }
        continue;
    advance:
        if (pc != UINT64_MAX) {
            uint64_t next = loc + delta * ci->code_align;
            if (next > pc || next < loc) return c.ok;
            loc = next;
        }
    }
    return c.ok;
}

static d9_cfi_status decode_row(const d9_unwind_tables *t, uint64_t pc, d9_cfi_row *row) {
    const d9_unwind_object *o = d9_unwind_tables_find(t, pc);
    if (!o || (!o->copy && !o->dbg_count)) return D9_CFI_NO_INFO;
    fde_info fi;
    if (!find_fde(o, pc, &fi)) return D9_CFI_NO_INFO;
    cfa_state init;
    memset(&init, 0, sizeof init); /* D9_RULE_SAME everywhere */
    init.cfa.reg = D9_DW_RSP;
    if (!run_program(fi.cie.insns, &fi.cie, fi.pc_begin, UINT64_MAX, &init, NULL)) return D9_CFI_FAIL;
    cfa_state s = init;
    if (!run_program(fi.insns, &fi.cie, fi.pc_begin, pc, &s, &init)) return D9_CFI_FAIL;
    row->cfa_is_expr = s.cfa_is_expr;
    row->cfa = s.cfa;
    memcpy(row->rules, s.rules, sizeof row->rules);
    row->ra_specified = s.ra_specified;
    row->signal_frame = fi.cie.signal;
    return D9_CFI_OK;
}

/* A direct-mapped cache of rows by address: a sample's return addresses repeat (the same
 * callers), its leaf mostly does not. ~300 KiB. */
#define ROW_CACHE_SLOTS 512

typedef struct row_slot {
    uint64_t pc, generation; /* generation 0: empty (the tables' generation starts at 1) */
    d9_cfi_status status;
    d9_cfi_row row;
} row_slot;

d9_cfi_status d9_cfi_find_row(d9_unwind_tables *t, uint64_t pc, d9_cfi_row *row) {
    if (!t->row_cache) t->row_cache = calloc(ROW_CACHE_SLOTS, sizeof(row_slot));
    row_slot *slots = t->row_cache;
    if (!slots) return decode_row(t, pc, row);
    row_slot *sl = &slots[(pc ^ (pc >> 9) ^ (pc >> 19)) % ROW_CACHE_SLOTS];
    if (sl->generation == t->generation && sl->pc == pc) {
        if (sl->status == D9_CFI_OK) *row = sl->row;
        return sl->status;
    }
    d9_cfi_status st = decode_row(t, pc, row);
    sl->pc = pc;
    sl->generation = t->generation;
    sl->status = st;
    if (st == D9_CFI_OK) sl->row = *row;
    return st;
}

/* ---------------------------------------------------------------- DWARF expressions */

static bool reg_value(const d9_regs *regs, uint64_t reg, uint64_t *v) {
    if (reg >= D9_DW_NREGS || !(regs->known & (1u << reg))) return false;
    *v = regs->r[reg];
    return true;
}

/* Evaluate a location expression (the subset unwind tables use: constants, registers,
 * arithmetic, comparisons, branches, dereferences of the stack copy). */
static bool eval_expr(const uint8_t *expr, uint32_t len, const d9_regs *regs, const d9_stack_copy *stk,
                      bool push_cfa, uint64_t cfa, uint64_t *result) {
    uint64_t st[MAX_EXPR_STACK];
    int sp = 0;
    if (push_cfa) st[sp++] = cfa;
    cursor c = {expr, expr + len, 0, true};
    for (int steps = 0; c.p < c.end && c.ok; steps++) {
        if (steps == MAX_EXPR_STEPS) return false;
        uint8_t op = rd_u8(&c);
        uint64_t a, b, v;
#define NEED(n) do { if (sp < (n)) return false; } while (0)
#define PUSH(x) do { uint64_t x_ = (x); if (sp == MAX_EXPR_STACK) return false; st[sp++] = x_; } while (0)
        if (op >= 0x30 && op <= 0x4f) { PUSH((uint64_t)(op - 0x30)); continue; }  /* lit */
        if (op >= 0x50 && op <= 0x6f) { /* reg */
            if (!reg_value(regs, op - 0x50u, &v)) return false;
            PUSH(v);
            continue;
        }
        if (op >= 0x70 && op <= 0x8f) { /* breg */
            int64_t off = rd_sleb(&c);
            if (!reg_value(regs, op - 0x70u, &v)) return false;
            PUSH(v + (uint64_t)off);
            continue;
        }
        switch (op) {
        case 0x06: NEED(1); if (!d9_stack_copy_read(stk, st[sp - 1], &st[sp - 1])) return false; break;
        case 0x08: PUSH(rd_le(&c, 1)); break;
        case 0x09: PUSH((uint64_t)(int64_t)(int8_t)rd_le(&c, 1)); break;
        case 0x0a: PUSH(rd_le(&c, 2)); break;
        case 0x0b: PUSH((uint64_t)(int64_t)(int16_t)rd_le(&c, 2)); break;
        case 0x0c: PUSH(rd_le(&c, 4)); break;
        case 0x0d: PUSH((uint64_t)(int64_t)(int32_t)rd_le(&c, 4)); break;
        case 0x0e: case 0x0f: PUSH(rd_le(&c, 8)); break;
        case 0x10: PUSH(rd_uleb(&c)); break;
        case 0x11: PUSH((uint64_t)rd_sleb(&c)); break;
        case 0x12: NEED(1); PUSH(st[sp - 1]); break;
        case 0x13: NEED(1); sp--; break;
        case 0x14: NEED(2); PUSH(st[sp - 2]); break;
        case 0x15: { uint8_t i = rd_u8(&c); NEED(i + 1); PUSH(st[sp - 1 - i]); break; }
        case 0x16: NEED(2); a = st[sp - 1]; st[sp - 1] = st[sp - 2]; st[sp - 2] = a; break;
        case 0x17: NEED(3); a = st[sp - 1]; st[sp - 1] = st[sp - 2]; st[sp - 2] = st[sp - 3]; st[sp - 3] = a; break;
        case 0x19: NEED(1); if ((int64_t)st[sp - 1] < 0) st[sp - 1] = -st[sp - 1]; break;
        case 0x1f: NEED(1); st[sp - 1] = -st[sp - 1]; break;
        case 0x20: NEED(1); st[sp - 1] = ~st[sp - 1]; break;
        case 0x23: NEED(1); st[sp - 1] += rd_uleb(&c); break;
        case 0x1a: case 0x1b: case 0x1c: case 0x1d: case 0x1e: case 0x21: case 0x22: case 0x24:
        case 0x25: case 0x26: case 0x27: case 0x29: case 0x2a: case 0x2b: case 0x2c: case 0x2d:
        case 0x2e:
            NEED(2);
            b = st[--sp];
            a = st[sp - 1];
            switch (op) {
            case 0x1a: v = a & b; break;
            case 0x1b: if (b == 0 || ((int64_t)a == INT64_MIN && (int64_t)b == -1)) return false;
                       v = (uint64_t)((int64_t)a / (int64_t)b); break;
            case 0x1c: v = a - b; break;
            case 0x1d: if (b == 0) return false; v = a % b; break;
            case 0x1e: v = a * b; break;
            case 0x21: v = a | b; break;
            case 0x22: v = a + b; break;
            case 0x24: v = b >= 64 ? 0 : a << b; break;
            case 0x25: v = b >= 64 ? 0 : a >> b; break;
            case 0x26: v = b >= 64 ? (uint64_t)((int64_t)a >> 63) : (uint64_t)((int64_t)a >> b); break;
            case 0x27: v = a ^ b; break;
            case 0x29: v = a == b; break;
            case 0x2a: v = (int64_t)a >= (int64_t)b; break;
            case 0x2b: v = (int64_t)a > (int64_t)b; break;
            case 0x2c: v = (int64_t)a <= (int64_t)b; break;
            case 0x2d: v = (int64_t)a < (int64_t)b; break;
            default: v = a != b; break;
            }
            st[sp - 1] = v;
            break;
        case 0x28: case 0x2f: { /* bra, skip */
            int16_t off = (int16_t)rd_le(&c, 2);
            bool jump = true;
            if (op == 0x28) {
                NEED(1);
                jump = st[--sp] != 0;
            }
            if (!jump) break;
            int64_t pos = (c.p - expr) + off;
            if (pos < 0 || pos > (int64_t)len) return false;
            c.p = expr + pos;
            break;
        }
        case 0x96: break; /* nop */
        default: return false;
        }
#undef NEED
#undef PUSH
    }
    if (!c.ok || sp == 0) return false;
    *result = st[sp - 1];
    return true;
}

/* ---------------------------------------------------------------- one step */

bool d9_cfi_cfa(const d9_cfi_row *row, const d9_regs *regs, const d9_stack_copy *stk, uint64_t *cfa) {
    if (row->cfa_is_expr) return eval_expr(row->cfa.expr, row->cfa.expr_len, regs, stk, false, 0, cfa);
    uint64_t base;
    if (!reg_value(regs, row->cfa.reg, &base)) return false;
    *cfa = base + (uint64_t)row->cfa.off;
    return true;
}

d9_cfi_status d9_cfi_apply(const d9_cfi_row *row, uint64_t cfa, const d9_regs *regs, const d9_stack_copy *stk,
                           d9_regs *out) {
    if (!row->ra_specified) return D9_CFI_FAIL;
    if (row->rules[D9_DW_RA].kind == D9_RULE_UNDEF) return D9_CFI_END;
    d9_regs n;
    memset(&n, 0, sizeof n);
    for (uint32_t i = 0; i < D9_DW_NREGS; i++) {
        const d9_cfi_rule *r = &row->rules[i];
        uint64_t v = 0, addr;
        bool ok = false;
        switch (r->kind) {
        case D9_RULE_SAME: ok = reg_value(regs, i, &v); break;
        case D9_RULE_UNDEF: break;
        case D9_RULE_OFFSET: ok = d9_stack_copy_read(stk, cfa + (uint64_t)r->off, &v); break;
        case D9_RULE_VAL_OFFSET: v = cfa + (uint64_t)r->off; ok = true; break;
        case D9_RULE_REGISTER: ok = reg_value(regs, r->reg, &v); break;
        case D9_RULE_EXPR:
            ok = eval_expr(r->expr, r->expr_len, regs, stk, true, cfa, &addr) && d9_stack_copy_read(stk, addr, &v);
            break;
        default: ok = eval_expr(r->expr, r->expr_len, regs, stk, true, cfa, &v); break;
        }
        if (i == D9_DW_RA && !ok) return D9_CFI_FAIL;
        if (ok) {
            n.r[i] = v;
            n.known |= 1u << i;
        }
    }
    if (row->rules[D9_DW_RSP].kind == D9_RULE_SAME) { /* by definition the caller's sp is the CFA */
        n.r[D9_DW_RSP] = cfa;
        n.known |= 1u << D9_DW_RSP;
    }
    *out = n;
    return D9_CFI_OK;
}
