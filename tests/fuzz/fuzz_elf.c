/* Binaries on disk as the symbolizer and the unwinder read them (src/symbols/elf_image.c,
 * elf_symtab.c, debug_file.c; src/sources/cfi_unwind.c), on arbitrary bytes: `dial9 symbolize`
 * and `analyze` read files from other machines, and the recorder reads the .debug_frame of
 * every loaded library's file in the application itself. The image's sections, names and
 * notes, its symbol tables and lookups, its .gnu_debuglink, and its .debug_frame (or, when it
 * has none, the input taken whole as one) indexed and every FDE's row found and applied: never
 * a read outside the input or the section copies (ASan), no overflow (UBSan), no loop. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sources/cfi_unwind.h"
#include "sources/unwind_tables.h"
#include "symbols/debug_file.h"
#include "symbols/elf_image.h"
#include "symbols/elf_symtab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile size_t g_sink; /* keeps the reads of names from being optimized away */

static void sections(const d9_elf_image *img) {
    d9_elf_section names;
    bool have_names = d9_elf_section_at(img, img->shstrndx, &names);
    for (uint32_t i = 0; i < img->shnum; i++) {
        d9_elf_section s;
        if (!d9_elf_section_at(img, i, &s)) abort(); /* every index below shnum is readable */
        const uint8_t *bytes = d9_elf_section_data(img, &s);
        if (bytes && s.size) g_sink += bytes[0] + bytes[s.size - 1];
        const char *name = have_names ? d9_elf_string(img, &names, s.name) : NULL;
        if (name) g_sink += strlen(name);
    }
    if (d9_elf_section_at(img, img->shnum, &names)) abort();
}

static void symbols(const d9_elf_image *img) {
    d9_elf_symtab t = {0};
    if (d9_elf_symtab_add(&t, img, ".symtab") < 0 || d9_elf_symtab_add(&t, img, ".dynsym") < 0) {
        d9_elf_symtab_free(&t);
        return;
    }
    d9_elf_symtab_finish(&t);
    for (size_t i = 0; i < t.count && i < 256; i++) {
        const d9_elf_sym *s = d9_elf_symtab_lookup(&t, t.syms[i].addr);
        if (s) g_sink += strlen(s->name);
        s = d9_elf_symtab_lookup(&t, t.syms[i].addr + t.syms[i].size / 2);
        if (s) g_sink += strlen(s->name);
    }
    d9_elf_symtab_free(&t);
}

/* .gnu_debuglink read through the search, next to a file that does not exist: no file opens. */
static void debuglink(const d9_elf_image *img) {
    static const char *const roots[] = {"/nonexistent-dial9-fuzz/debug"};
    d9_elf_image out;
    d9_debug_found found;
    char note[256];
    if (d9_debug_file_find("/nonexistent-dial9-fuzz/bin/x", "", img, roots, 1, ".symtab", &out, &found, note,
                           sizeof note))
        abort();
}

/* bytes as an object's .debug_frame: every FDE's row at its start and middle, applied to
 * registers and a stack of the input's own bytes. */
static void debug_frame(const uint8_t *bytes, size_t len, const uint8_t *stack, size_t stack_len) {
    if (len < 4) return;
    d9_unwind_tables t = {0};
    d9_unwind_object *o = calloc(1, sizeof *o);
    if (!o) return;
    o->text_lo = 0;
    o->text_hi = UINT64_MAX;
    o->dbg = malloc(len); /* its exact size, as unwind_tables.c copies it */
    if (!o->dbg) {
        free(o);
        return;
    }
    memcpy(o->dbg, bytes, len);
    o->dbg_len = len;
    t.objs = o;
    t.nobjs = 1;
    if (d9_cfi_index_debug_frame(o)) {
        d9_stack_copy stk = {.base = 0x7ff000000000u, .bytes = stack, .len = stack_len};
        d9_regs regs = {.known = (1u << D9_DW_RSP) | (1u << D9_DW_RBP) | (1u << D9_DW_RA)};
        regs.r[D9_DW_RSP] = stk.base;
        regs.r[D9_DW_RBP] = stk.base + 16;
        for (uint32_t i = 0; i < o->dbg_count && i < 64; i++) {
            const d9_dbg_fde *f = &o->dbg_fdes[i];
            uint64_t pcs[2] = {f->lo, f->lo + (f->hi - f->lo) / 2};
            for (int k = 0; k < 2; k++) {
                d9_cfi_row row;
                if (d9_cfi_find_row(&t, pcs[k], &row) != D9_CFI_OK) continue;
                regs.r[D9_DW_RA] = pcs[k];
                uint64_t cfa;
                d9_regs caller;
                if (d9_cfi_cfa(&row, &regs, &stk, &cfa)) d9_cfi_apply(&row, cfa, &regs, &stk, &caller);
            }
        }
    }
    d9_unwind_tables_free(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *copy = malloc(size ? size : 1); /* exact size: a read past it is an ASan error */
    if (!copy) return 0;
    memcpy(copy, data, size);

    char hex[D9_BUILD_ID_HEX_MAX];
    if (d9_elf_notes_build_id(copy, size, hex, sizeof hex) && !memchr(hex, 0, sizeof hex)) abort();

    d9_elf_image img;
    char err[256] = "";
    if (d9_elf_open_mem(&img, copy, size, err, sizeof err) == 0) {
        if (!memchr(img.build_id, 0, sizeof img.build_id)) abort();
        sections(&img);
        symbols(&img);
        debuglink(&img);
        d9_elf_section s;
        const uint8_t *frame;
        if (d9_elf_find_section(&img, ".debug_frame", &s) && (frame = d9_elf_section_data(&img, &s)))
            debug_frame(frame, (size_t)s.size, copy, size);
        d9_elf_close(&img);
    } else {
        if (!err[0]) abort(); /* a refusal says why */
        debug_frame(copy, size, copy, size);
    }
    free(copy);
    return 0;
}
