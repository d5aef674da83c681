#include "symbols/sym_input.h"

#include <stdlib.h>
#include <string.h>

void d9_sym_input_init(d9_sym_input *in) { memset(in, 0, sizeof *in); }

void d9_sym_input_free(d9_sym_input *in) {
    for (size_t i = 0; i < in->map_count; i++) {
        free(in->maps[i].path);
        free(in->maps[i].build_id);
    }
    free(in->maps);
    d9_u64_map_free(&in->addrs);
    memset(in, 0, sizeof *in);
}

d9_sym_input *d9_sym_input_new(void) {
    d9_sym_input *in = malloc(sizeof *in);
    if (in) d9_sym_input_init(in);
    return in;
}

void d9_sym_input_destroy(d9_sym_input *in) {
    if (!in) return;
    d9_sym_input_free(in);
    free(in);
}

static bool same_str(const char *a, const char *b, size_t blen) {
    return strlen(a) == blen && memcmp(a, b, blen) == 0;
}

void d9_sym_input_add_map(d9_sym_input *in, uint64_t start, uint64_t end, uint64_t file_offset,
                          const char *path, size_t path_len, const char *build_id,
                          size_t build_id_len) {
    if (end <= start) return;
    /* Every segment repeats the whole map: keep one copy. A different mapping at the same
     * range (dlclose, then dlopen of another library) is kept as well; the later one wins. */
    for (size_t i = in->map_count; i-- > 0;) {
        d9_sym_map *m = &in->maps[i];
        if (m->start != start || m->end != end) continue;
        if (m->file_offset == file_offset && same_str(m->path, path, path_len) &&
            same_str(m->build_id, build_id, build_id_len))
            return;
        break;
    }
    if (in->map_count == in->map_cap) {
        size_t cap = in->map_cap ? in->map_cap * 2 : 32;
        d9_sym_map *m = realloc(in->maps, cap * sizeof *m);
        if (!m) {
            in->oom = true;
            return;
        }
        in->maps = m;
        in->map_cap = cap;
    }
    char *p = strndup(path, path_len), *b = strndup(build_id, build_id_len);
    if (!p || !b) {
        free(p);
        free(b);
        in->oom = true;
        return;
    }
    in->maps[in->map_count++] = (d9_sym_map){.start = start, .end = end, .file_offset = file_offset,
                                             .path = p, .build_id = b};
}

static void add_addr(d9_sym_input *in, uint64_t addr, uint64_t flag) {
    uint64_t *v = d9_u64_map_upsert(&in->addrs, addr, 0);
    if (!v) {
        in->oom = true;
        return;
    }
    *v |= flag;
}

void d9_sym_input_add_address(d9_sym_input *in, uint64_t addr, uint64_t flags) { add_addr(in, addr, flags); }

void d9_sym_input_add_stack(d9_sym_input *in, const uint64_t *addrs, size_t n, bool leaf_exact) {
    for (size_t i = 0; i < n; i++)
        add_addr(in, addrs[i], i == 0 && leaf_exact ? D9_ADDR_EXACT : D9_ADDR_RETURN);
}

void d9_sym_input_add_stack_bytes(d9_sym_input *in, const uint8_t *bytes, size_t n, bool leaf_exact) {
    for (size_t i = 0; i < n; i++) {
        uint64_t a = 0;
        for (int b = 7; b >= 0; b--) a = a << 8 | bytes[i * 8 + (size_t)b];
        add_addr(in, a, i == 0 && leaf_exact ? D9_ADDR_EXACT : D9_ADDR_RETURN);
    }
}

bool d9_sym_is_fallback_name(const char *name, size_t len) {
    /* "...+0x" then one or more hex digits up to the end */
    size_t i = len;
    while (i > 0 && ((name[i - 1] >= '0' && name[i - 1] <= '9') || (name[i - 1] >= 'a' && name[i - 1] <= 'f')))
        i--;
    return i < len && i >= 3 && name[i - 1] == 'x' && name[i - 2] == '0' && name[i - 3] == '+';
}

void d9_sym_input_note_symbol(d9_sym_input *in, uint64_t addr, const char *name, size_t len) {
    if (len == 0) return;
    add_addr(in, addr, d9_sym_is_fallback_name(name, len) ? D9_ADDR_FALLBACK : D9_ADDR_NAMED);
}

static bool same_map(const d9_sym_map *a, const d9_sym_map *b) {
    return a->start == b->start && a->end == b->end && a->file_offset == b->file_offset &&
           strcmp(a->path, b->path) == 0 && strcmp(a->build_id, b->build_id) == 0;
}

bool d9_sym_input_covers(const d9_sym_input *given, const d9_sym_input *scanned) {
    if (given->oom || strcmp(given->boot_id, scanned->boot_id) != 0) return false;
    uint64_t addr, flags;
    for (size_t pos = 0; d9_u64_map_next(&scanned->addrs, &pos, &addr, &flags);) {
        const uint64_t *have = d9_u64_map_get(&given->addrs, addr);
        uint64_t need = flags & (D9_ADDR_RETURN | D9_ADDR_EXACT);
        if (need && (!have || (*have & need) != need)) return false;
    }
    /* the maps: a subsequence, so that the later of two maps of a range still wins */
    size_t g = 0;
    for (size_t i = 0; i < scanned->map_count; i++) {
        while (g < given->map_count && !same_map(&given->maps[g], &scanned->maps[i])) g++;
        if (g == given->map_count) return false;
        g++;
    }
    return true;
}
