#include "sources/stack_unwind.h"

#include <string.h>

#include "sources/cfi_unwind.h"

#define MAX_LINKS 64 /* frame-pointer links followed through the copy */

/* The links of the frame-pointer chain from bp, as far as the copy shows them: links[0] = bp,
 * links[k + 1] = the saved frame pointer at links[k]. The last one may lie beyond the copy
 * (its value is known, its contents are not). */
static uint32_t chain_links(const d9_stack_copy *stk, uint64_t bp, uint64_t *links) {
    uint32_t n = 0;
    links[n++] = bp;
    while (n < MAX_LINKS) {
        uint64_t fp = links[n - 1], next;
        if ((fp & 7) || !d9_stack_copy_read(stk, fp, &next) || next <= fp) break;
        links[n++] = next;
    }
    return n;
}

/* Where frame link k of the chain is the frame being unwound (its CFA is the link + 16: the
 * saved frame pointer and the return address sit just below the CFA), the chain's return
 * addresses from chain[1 + k] on are its callers. -1 when no link matches. */
static int matching_link(const uint64_t *links, uint32_t nlinks, uint64_t cfa) {
    for (uint32_t k = 0; k < nlinks; k++)
        if (links[k] + 16 == cfa) return (int)k;
    return -1;
}

/* Append the chain's return addresses from chain[from]: the kernel's walk and ours stop only
 * at an unreadable frame, so end at the first address that is no code, or that repeats one of
 * the last few (a frame-pointer chain through frameless code can circle). False when the
 * chain was cut that way. */
static bool append_chain(const d9_unwind_tables *t, const d9_unwind_input *in, uint32_t from, uint64_t *out,
                         uint32_t *n, uint32_t max) {
    for (uint32_t i = from; i < in->nchain && *n < max; i++) {
        uint64_t a = in->chain[i];
        if (!d9_unwind_tables_is_code(t, a)) return false;
        for (uint32_t k = *n > 4 ? *n - 4 : 0; k < *n; k++)
            if (out[k] == a) return false;
        out[(*n)++] = a;
    }
    return true;
}

uint32_t d9_unwind_user_stack(d9_unwind_tables *t, const d9_unwind_input *in, uint64_t *out, uint32_t max,
                              d9_stack_method *method) {
    *method = D9_STACK_TRUNCATED;
    if (max == 0) return 0;
    uint32_t n = 0;
    out[n++] = in->ip;
    bool chain_ok = in->nchain > 0 && in->chain[0] == in->ip;
    if (!in->stack || in->stack_len < 8) { /* no copy (no registers, unknown stack bounds): the chain alone */
        if (!chain_ok) return n;
        *method = append_chain(t, in, 1, out, &n, max) ? D9_STACK_FP : D9_STACK_TRUNCATED;
        return n;
    }
    d9_stack_copy stk = {in->sp, in->stack, in->stack_len};
    uint64_t links[MAX_LINKS];
    uint32_t nlinks = chain_links(&stk, in->bp, links);
    d9_regs regs;
    memset(&regs, 0, sizeof regs);
    regs.r[D9_DW_RA] = in->ip;
    regs.r[D9_DW_RSP] = in->sp;
    regs.r[D9_DW_RBP] = in->bp;
    regs.known = 1u << D9_DW_RA | 1u << D9_DW_RSP | 1u << D9_DW_RBP;
    bool exact_pc = !in->ip_is_return; /* the leaf's pc is where it stopped, callers' are returns */
    uint32_t recovered = 0;            /* frames found with CFI */
    while (n < max) {
        uint64_t pc = regs.r[D9_DW_RA];
        d9_cfi_row row;
        d9_cfi_status st = d9_cfi_find_row(t, exact_pc ? pc : pc - 1, &row);
        uint64_t cfa = 0;
        bool have_cfa = st == D9_CFI_OK && d9_cfi_cfa(&row, &regs, &stk, &cfa);
        d9_regs caller;
        if (have_cfa) st = d9_cfi_apply(&row, cfa, &regs, &stk, &caller);
        if (have_cfa && st == D9_CFI_END) {
            *method = recovered ? D9_STACK_CFI : D9_STACK_FP;
            return n;
        }
        if (have_cfa && st == D9_CFI_OK && caller.r[D9_DW_RSP] > regs.r[D9_DW_RSP]) {
            uint64_t ra = caller.r[D9_DW_RA];
            if (!d9_unwind_tables_is_code(t, ra)) return n; /* truncated: no code there */
            out[n++] = ra;
            recovered++;
            exact_pc = row.signal_frame;
            regs = caller;
            continue;
        }
        /* CFI cannot go on here (the copy ends, or no tables): continue on the chain, from the
         * link that is this frame's. Without tables, assume a frame-pointer frame (the
         * kernel's own assumption): its link is its rbp. */
        int k = -1;
        if (have_cfa) k = matching_link(links, nlinks, cfa);
        else if (regs.known & (1u << D9_DW_RBP)) k = matching_link(links, nlinks, regs.r[D9_DW_RBP] + 16);
        if (k < 0 || !chain_ok) return n;
        bool whole = append_chain(t, in, 1 + (uint32_t)k, out, &n, max);
        *method = !whole ? D9_STACK_TRUNCATED : recovered ? D9_STACK_CFI : D9_STACK_FP;
        return n;
    }
    *method = D9_STACK_TRUNCATED; /* max frames */
    return n;
}
