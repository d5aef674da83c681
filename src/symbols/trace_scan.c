#include "symbols/trace_scan.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/wire.h"
#include "symbols/skip_plan.h"

/* Fields whose values a role needs are remembered while the event is walked; only the first
 * ROLE_FIELDS fields of a schema can play a role (the built-in ones have at most six). */
#define ROLE_FIELDS 16
#define MAX_NESTING 8

enum role { ROLE_NONE, ROLE_MMAP, ROLE_SYMBOL, ROLE_METADATA, ROLE_CPU_SAMPLE };
enum { MM_START, MM_END, MM_OFFSET, MM_PATH, MM_BUILD_ID };
enum { SY_ADDR, SY_NAME };

typedef struct schema_info {
    const uint8_t *def; /* the schema frame's bytes after the type id, for identity checks */
    size_t def_len;
    bool has_ts;
    bool has_stacks;
    uint16_t nfields;
    uint8_t *types;     /* wire type per field (with the optional flag) */
    uint8_t role;
    int idx[5];         /* field index per role slot, -1 when missing */
    /* Events that yield nothing (no role, no stacks) and whose fields are all fixed-width or
     * varints are stepped over by this plan instead of being read field by field; its ops
     * are NULL for the others. */
    d9_skip_plan plan;
} schema_info;

typedef struct value {
    bool present;
    uint64_t u;         /* integers; pool ids */
    const uint8_t *ptr; /* String/Bytes/StringMap start */
    uint32_t len;
} value;

/* References whose pool entry was not defined yet when the event was read. */
typedef struct pending {
    uint8_t kind; /* 0 stack, 1 mmap path, 2 symbol name */
    bool leaf_exact;
    uint32_t pool_id;
    uint64_t a, b, c;   /* mmap: start, end, offset; symbol: addr */
    const uint8_t *bid; /* mmap build id bytes */
    uint32_t bid_len;
} pending;

typedef struct scanner {
    const uint8_t *p;
    size_t len, pos;
    d9_sym_input *in;
    d9_scan_result *res;
    schema_info **schemas; /* by type id */
    size_t nschemas;
    d9_u64_map strings; /* pool id -> offset of the entry's u32 length */
    d9_u64_map stacks;  /* pool id -> offset of the entry's u32 frame count */
    pending *pend;
    size_t npend, pend_cap;
    size_t skip_room; /* bytes the largest skippable event of the stream may take, with its
                       * tag and type id (see skip_events) */
} scanner;

/* Results of the readers below. */
enum { OK = 1, SHORT = 0, BAD = -1 };

static int fail(scanner *s, const char *why) {
    snprintf(s->res->message, sizeof s->res->message, "offset %zu: %s", s->pos, why);
    return BAD;
}

static int take(scanner *s, size_t n, const uint8_t **out) {
    if (s->len - s->pos < n) return SHORT;
    *out = s->p + s->pos;
    s->pos += n;
    return OK;
}

static uint64_t le(const uint8_t *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

static int read_le(scanner *s, int n, uint64_t *v) {
    const uint8_t *p;
    int r = take(s, (size_t)n, &p);
    if (r == OK) *v = le(p, n);
    return r;
}

static int read_varint(scanner *s, uint64_t *v) {
    uint64_t x = 0;
    for (int i = 0; i < 10; i++) {
        if (s->pos >= s->len) return SHORT;
        uint8_t b = s->p[s->pos++];
        if (i == 9 && b > 1) {
            s->pos--;
            return fail(s, "varint does not fit in 64 bits");
        }
        x |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *v = x;
            return OK;
        }
    }
    return fail(s, "varint longer than 10 bytes");
}

/* Read (or skip) one value of wire type `type` into *v. */
static int read_value(scanner *s, uint8_t type, value *v, int depth) {
    memset(v, 0, sizeof *v);
    int r;
    if (type & D9_FT_OPTIONAL) {
        uint64_t present;
        if ((r = read_le(s, 1, &present)) != OK) return r;
        if (present == 0) return OK;
        if (present != 1) return fail(s, "bad presence byte of an optional field");
        type &= (uint8_t)~D9_FT_OPTIONAL;
    }
    v->present = true;
    uint64_t n;
    const uint8_t *p;
    switch (type) {
    case D9_FT_I64: case D9_FT_F64: return read_le(s, 8, &v->u);
    case D9_FT_BOOL: case D9_FT_U8: return read_le(s, 1, &v->u);
    case D9_FT_U16: return read_le(s, 2, &v->u);
    case D9_FT_U32: case D9_FT_POOLED_STACK: case D9_FT_POOLED_STRING: return read_le(s, 4, &v->u);
    case D9_FT_VARINT: return read_varint(s, &v->u);
    case D9_FT_STRING: case D9_FT_BYTES:
        if ((r = read_le(s, 4, &n)) != OK) return r;
        if ((r = take(s, (size_t)n, &p)) != OK) return r;
        v->ptr = p;
        v->len = (uint32_t)n;
        return OK;
    case D9_FT_STACK:
        if ((r = read_le(s, 4, &n)) != OK) return r;
        if (n > (s->len - s->pos) / 8) return SHORT;
        v->ptr = s->p + s->pos;
        v->len = (uint32_t)n;
        s->pos += (size_t)n * 8;
        return OK;
    case D9_FT_STRING_MAP: {
        size_t start = s->pos;
        if ((r = read_le(s, 4, &n)) != OK) return r;
        for (uint64_t i = 0; i < 2 * n; i++) {
            uint64_t l;
            if ((r = read_le(s, 4, &l)) != OK) return r;
            if ((r = take(s, (size_t)l, &p)) != OK) return r;
        }
        v->ptr = s->p + start;
        v->len = (uint32_t)n;
        return OK;
    }
    case D9_FT_DYN_LIST: case D9_FT_DYN_MAP: {
        if (depth >= MAX_NESTING) return fail(s, "dynamic values nested too deep");
        if ((r = read_le(s, 4, &n)) != OK) return r;
        uint64_t items = type == D9_FT_DYN_MAP ? 2 * n : n;
        for (uint64_t i = 0; i < items; i++) {
            uint64_t tag;
            value inner;
            if ((r = read_le(s, 1, &tag)) != OK) return r;
            if ((r = read_value(s, (uint8_t)tag, &inner, depth + 1)) != OK) return r;
        }
        return OK;
    }
    default: return fail(s, "unknown field type");
    }
}

static bool valid_type(uint8_t t) {
    uint8_t base = t & (uint8_t)~D9_FT_OPTIONAL;
    return base >= D9_FT_I64 && base <= D9_FT_DYN_MAP;
}

/* ------------------------------------------------------------------ pools and pending */

static bool pool_string(scanner *s, uint32_t id, const char **str, uint32_t *len) {
    uint64_t *off = d9_u64_map_get(&s->strings, id);
    if (!off) return false;
    *len = (uint32_t)le(s->p + *off, 4);
    *str = (const char *)s->p + *off + 4;
    return true;
}

static bool pool_stack(scanner *s, uint32_t id, const uint8_t **frames, uint32_t *n) {
    uint64_t *off = d9_u64_map_get(&s->stacks, id);
    if (!off) return false;
    *n = (uint32_t)le(s->p + *off, 4);
    *frames = s->p + *off + 4;
    return true;
}

static void defer(scanner *s, const pending *p) {
    if (s->npend == s->pend_cap) {
        size_t cap = s->pend_cap ? s->pend_cap * 2 : 64;
        pending *n = realloc(s->pend, cap * sizeof *n);
        if (!n) {
            s->in->oom = true;
            return;
        }
        s->pend = n;
        s->pend_cap = cap;
    }
    s->pend[s->npend++] = *p;
}

/* Try to complete a reference; false when its pool entry is still unknown. */
static bool complete(scanner *s, const pending *p) {
    const char *str;
    uint32_t len;
    if (p->kind == 0) {
        const uint8_t *frames;
        if (!pool_stack(s, p->pool_id, &frames, &len)) return false;
        d9_sym_input_add_stack_bytes(s->in, frames, len, p->leaf_exact);
        return true;
    }
    if (!pool_string(s, p->pool_id, &str, &len)) return false;
    if (p->kind == 1)
        d9_sym_input_add_map(s->in, p->a, p->b, p->c, str, len, (const char *)p->bid, p->bid_len);
    else
        d9_sym_input_note_symbol(s->in, p->a, str, len);
    return true;
}

static void reference(scanner *s, const pending *p) {
    if (!complete(s, p)) defer(s, p);
}

/* A stream ended: references still pending can be completed now or never. */
static void end_stream(scanner *s) {
    for (size_t i = 0; i < s->npend; i++) complete(s, &s->pend[i]);
    s->npend = 0;
    d9_u64_map_clear(&s->strings);
    d9_u64_map_clear(&s->stacks);
    for (size_t i = 0; i < s->nschemas; i++) {
        if (!s->schemas[i]) continue;
        free(s->schemas[i]->types);
        d9_skip_plan_free(&s->schemas[i]->plan);
        free(s->schemas[i]);
        s->schemas[i] = NULL;
    }
    s->skip_room = 3;
}

/* ------------------------------------------------------------------ frames */

static int field_index(const uint8_t *def, size_t nfields_pos, uint16_t nfields, const char *name) {
    size_t pos = nfields_pos;
    size_t want = strlen(name);
    for (uint16_t i = 0; i < nfields; i++) {
        size_t l = (size_t)le(def + pos, 2);
        if (l == want && memcmp(def + pos + 2, name, l) == 0) return i < ROLE_FIELDS ? i : -1;
        pos += 2 + l + 1;
    }
    return -1;
}

static int frame_schema(scanner *s) {
    uint64_t type_id, name_len, has_ts, nfields;
    int r;
    if ((r = read_le(s, 2, &type_id)) != OK) return r;
    size_t def_start = s->pos;
    const uint8_t *name;
    if ((r = read_le(s, 2, &name_len)) != OK || (r = take(s, (size_t)name_len, &name)) != OK ||
        (r = read_le(s, 1, &has_ts)) != OK || (r = read_le(s, 2, &nfields)) != OK)
        return r;
    size_t fields_pos = s->pos;
    uint8_t *types = malloc(nfields ? nfields : 1);
    if (!types) return fail(s, "out of memory");
    bool stacks = false;
    for (uint64_t i = 0; i < nfields; i++) {
        uint64_t l, t;
        const uint8_t *fname;
        if ((r = read_le(s, 2, &l)) != OK || (r = take(s, (size_t)l, &fname)) != OK ||
            (r = read_le(s, 1, &t)) != OK) {
            free(types);
            return r;
        }
        if (!valid_type((uint8_t)t)) {
            free(types);
            return fail(s, "unknown field type in a schema");
        }
        types[i] = (uint8_t)t;
        uint8_t base = (uint8_t)t & (uint8_t)~D9_FT_OPTIONAL;
        stacks |= base == D9_FT_STACK || base == D9_FT_POOLED_STACK;
    }
    const uint8_t *def = s->p + def_start;
    size_t def_len = s->pos - def_start;
    if (type_id < s->nschemas && s->schemas[type_id]) {
        schema_info *old = s->schemas[type_id];
        free(types);
        if (old->def_len != def_len || memcmp(old->def, def, def_len) != 0)
            return fail(s, "type id registered again with a different schema");
        return OK;
    }
    if (type_id >= s->nschemas) {
        size_t n = s->nschemas ? s->nschemas : 64;
        while (n <= type_id) n *= 2;
        schema_info **a = realloc(s->schemas, n * sizeof *a);
        if (!a) {
            free(types);
            return fail(s, "out of memory");
        }
        memset(a + s->nschemas, 0, (n - s->nschemas) * sizeof *a);
        s->schemas = a;
        s->nschemas = n;
    }
    schema_info *si = calloc(1, sizeof *si);
    if (!si) {
        free(types);
        return fail(s, "out of memory");
    }
    *si = (schema_info){.def = def, .def_len = def_len, .has_ts = has_ts != 0, .has_stacks = stacks,
                        .nfields = (uint16_t)nfields, .types = types,
                        .idx = {-1, -1, -1, -1, -1}};
    const uint8_t *d = s->p; /* field_index works on absolute positions */
#define IS(n) (name_len == sizeof(n) - 1 && memcmp(name, n, name_len) == 0)
    if (IS("MemoryMapEvent")) {
        si->role = ROLE_MMAP;
        static const char *const f[] = {"start", "end", "file_offset", "path", "build_id"};
        for (int i = 0; i < 5; i++) si->idx[i] = field_index(d, fields_pos, si->nfields, f[i]);
    } else if (IS("SymbolTableEntry")) {
        si->role = ROLE_SYMBOL;
        si->idx[SY_ADDR] = field_index(d, fields_pos, si->nfields, "addr");
        si->idx[SY_NAME] = field_index(d, fields_pos, si->nfields, "symbol_name");
    } else if (IS("SegmentMetadataEvent")) {
        si->role = ROLE_METADATA;
        si->idx[0] = field_index(d, fields_pos, si->nfields, "entries");
    } else if (IS("CpuSampleEvent")) {
        si->role = ROLE_CPU_SAMPLE;
    }
#undef IS
    /* A CpuSampleEvent without stacks gives nothing either: its role only marks stack leaves. */
    bool yields = stacks || (si->role != ROLE_NONE && si->role != ROLE_CPU_SAMPLE);
    if (!yields && d9_skip_plan_build(&si->plan, si->has_ts, types, si->nfields) &&
        3 + si->plan.max_size > s->skip_room)
        s->skip_room = 3 + si->plan.max_size;
    s->schemas[type_id] = si;
    return OK;
}

static uint8_t base_of(const schema_info *si, int i) {
    return si->types[i] & (uint8_t)~D9_FT_OPTIONAL;
}

/* A value of a role field, NULL when absent or of an unexpected type. */
static const value *role_value(const schema_info *si, const value *vals, int slot, uint8_t base) {
    int i = si->idx[slot];
    if (i < 0 || !vals[i].present || base_of(si, i) != base) return NULL;
    return &vals[i];
}

static bool role_uint(const schema_info *si, const value *vals, int slot, uint64_t *out) {
    int i = si->idx[slot];
    if (i < 0 || !vals[i].present) return false;
    uint8_t b = base_of(si, i);
    if (b != D9_FT_VARINT && b != D9_FT_U8 && b != D9_FT_U16 && b != D9_FT_U32 && b != D9_FT_I64)
        return false;
    *out = vals[i].u;
    return true;
}

static void metadata_boot_id(scanner *s, const value *map) {
    size_t pos = (size_t)(map->ptr - s->p) + 4;
    for (uint32_t i = 0; i < map->len; i++) {
        uint32_t kl = (uint32_t)le(s->p + pos, 4);
        const uint8_t *k = s->p + pos + 4;
        pos += 4 + kl;
        uint32_t vl = (uint32_t)le(s->p + pos, 4);
        const uint8_t *v = s->p + pos + 4;
        pos += 4 + vl;
        if (kl == 7 && memcmp(k, "boot_id", 7) == 0 && vl < sizeof s->in->boot_id) {
            memcpy(s->in->boot_id, v, vl);
            s->in->boot_id[vl] = 0;
        }
    }
}

static void use_event(scanner *s, const schema_info *si, const value *vals) {
    if (si->role == ROLE_MMAP) {
        uint64_t start, end, off = 0;
        const value *path = role_value(si, vals, MM_PATH, D9_FT_POOLED_STRING);
        const value *bid = role_value(si, vals, MM_BUILD_ID, D9_FT_STRING);
        if (!role_uint(si, vals, MM_START, &start) || !role_uint(si, vals, MM_END, &end) || !path) return;
        role_uint(si, vals, MM_OFFSET, &off);
        pending p = {.kind = 1, .pool_id = (uint32_t)path->u, .a = start, .b = end, .c = off,
                     .bid = bid ? bid->ptr : (const uint8_t *)"", .bid_len = bid ? bid->len : 0};
        reference(s, &p);
    } else if (si->role == ROLE_SYMBOL) {
        uint64_t addr;
        const value *name = role_value(si, vals, SY_NAME, D9_FT_POOLED_STRING);
        if (!role_uint(si, vals, SY_ADDR, &addr) || !name) return;
        pending p = {.kind = 2, .pool_id = (uint32_t)name->u, .a = addr};
        reference(s, &p);
    } else if (si->role == ROLE_METADATA) {
        const value *map = role_value(si, vals, 0, D9_FT_STRING_MAP);
        if (map) metadata_boot_id(s, map);
    }
}

static int frame_event(scanner *s) {
    uint64_t type_id, delta;
    int r;
    if ((r = read_le(s, 2, &type_id)) != OK) return r;
    if (type_id >= s->nschemas || !s->schemas[type_id]) return fail(s, "event of an unregistered type id");
    const schema_info *si = s->schemas[type_id];
    if (si->has_ts && (r = read_le(s, 3, &delta)) != OK) return r;
    value vals[ROLE_FIELDS];
    /* Stack references are collected first and handed over only once the whole event was
     * read: a truncated event must not count. */
    pending stacks[8];
    size_t nstacks = 0;
    const uint8_t *inline_stacks[8];
    uint32_t inline_len[8];
    size_t ninline = 0;
    bool exact = si->role == ROLE_CPU_SAMPLE;
    for (uint16_t i = 0; i < si->nfields; i++) {
        value v;
        if ((r = read_value(s, si->types[i], &v, 0)) != OK) return r;
        if (i < ROLE_FIELDS) vals[i] = v;
        if (!si->has_stacks || !v.present) continue;
        uint8_t b = base_of(si, i);
        if (b == D9_FT_POOLED_STACK && nstacks < 8)
            stacks[nstacks++] = (pending){.kind = 0, .pool_id = (uint32_t)v.u, .leaf_exact = exact};
        else if (b == D9_FT_STACK && ninline < 8) {
            inline_stacks[ninline] = v.ptr;
            inline_len[ninline++] = v.len;
        }
    }
    s->res->events++;
    for (size_t i = 0; i < nstacks; i++) reference(s, &stacks[i]);
    for (size_t i = 0; i < ninline; i++) d9_sym_input_add_stack_bytes(s->in, inline_stacks[i], inline_len[i], exact);
    if (si->role != ROLE_NONE && si->role != ROLE_CPU_SAMPLE) use_event(s, si, vals);
    return OK;
}

/* Step over the run of events at s->pos that yield nothing (the bulk of a segment), with the
 * scan state in locals. Only while the largest skippable event fits in what is left, so that
 * neither the frame header nor the fields need bounds checks; the last few events of the data
 * are read by frame_event, which knows how to end at a truncated one. The run also stops at
 * any other frame and at a malformed event: frame_event reads that one and reports it, so
 * bad input is judged in one place. */
static void skip_events(scanner *s) {
    if (s->len - s->pos < s->skip_room) return;
    const uint8_t *p = s->p + s->pos, *last = s->p + s->len - s->skip_room;
    schema_info *const *schemas = s->schemas;
    size_t nschemas = s->nschemas;
    uint64_t n = 0;
    while (p <= last && *p == D9_FRAME_EVENT) {
        size_t id = (size_t)p[1] | (size_t)p[2] << 8;
        const schema_info *si = id < nschemas ? schemas[id] : NULL;
        const uint8_t *end = si && si->plan.ops ? d9_skip_event(&si->plan, p + 3) : NULL;
        if (!end) break;
        p = end;
        n++;
    }
    if (n) {
        s->pos = (size_t)(p - s->p);
        s->res->good_bytes = s->pos;
        s->res->events += n;
    }
}

static int frame_pool(scanner *s, bool stacks) {
    uint64_t count;
    int r;
    if ((r = read_le(s, 4, &count)) != OK) return r;
    /* Entries are only indexed once the whole frame is there. */
    size_t first = s->pos;
    for (uint64_t i = 0; i < count; i++) {
        uint64_t id, n;
        const uint8_t *p;
        if ((r = read_le(s, 4, &id)) != OK || (r = read_le(s, 4, &n)) != OK) return r;
        if (stacks && n > (s->len - s->pos) / 8) return SHORT;
        if ((r = take(s, stacks ? (size_t)n * 8 : (size_t)n, &p)) != OK) return r;
    }
    size_t pos = first;
    d9_u64_map *m = stacks ? &s->stacks : &s->strings;
    for (uint64_t i = 0; i < count; i++) {
        uint32_t id = (uint32_t)le(s->p + pos, 4);
        uint64_t n = le(s->p + pos + 4, 4);
        uint64_t *slot = d9_u64_map_upsert(m, id, pos + 4);
        if (!slot) return fail(s, "out of memory");
        *slot = pos + 4; /* a redefinition replaces the entry */
        pos += 8 + (size_t)(stacks ? n * 8 : n);
    }
    return OK;
}

static int frame_annotations(scanner *s) {
    uint64_t type_id, count;
    int r;
    if ((r = read_varint(s, &type_id)) != OK || (r = read_le(s, 2, &count)) != OK) return r;
    for (uint64_t i = 0; i < count; i++) {
        uint64_t field, kl, vl;
        const uint8_t *p;
        if ((r = read_le(s, 2, &field)) != OK || (r = read_le(s, 2, &kl)) != OK ||
            (r = take(s, (size_t)kl, &p)) != OK || (r = read_le(s, 4, &vl)) != OK ||
            (r = take(s, (size_t)vl, &p)) != OK)
            return r;
    }
    return OK;
}

static int header(scanner *s) {
    const uint8_t *h;
    int r = take(s, D9_HEADER_SIZE, &h);
    if (r != OK) return r;
    if (h[0] != D9_MAGIC0 || h[1] != D9_MAGIC1 || h[2] != D9_MAGIC2 || h[3] != D9_MAGIC3)
        return fail(s, "bad magic");
    if (h[4] != D9_FORMAT_VERSION) return fail(s, "unsupported format version");
    return OK;
}

static void scan(const uint8_t *data, size_t len, d9_sym_input *in, d9_scan_result *res, bool skip_plans) {
    memset(res, 0, sizeof *res);
    scanner s = {.p = data, .len = len, .in = in, .res = res, .skip_room = 3};
    int r = OK;
    bool started = false;
    while (s.pos < s.len) {
        if (started && skip_plans) {
            skip_events(&s);
            if (s.pos == s.len) break;
        }
        size_t frame_start = s.pos;
        uint8_t tag = s.p[s.pos];
        if (!started || tag == D9_MAGIC0) {
            if (started) end_stream(&s);
            r = header(&s);
            started = true;
        } else {
            s.pos++;
            uint64_t ts;
            switch (tag) {
            case D9_FRAME_SCHEMA: r = frame_schema(&s); break;
            case D9_FRAME_EVENT: r = frame_event(&s); break;
            case D9_FRAME_STRING_POOL: r = frame_pool(&s, false); break;
            case D9_FRAME_STACK_POOL: r = frame_pool(&s, true); break;
            case D9_FRAME_TIMESTAMP_RESET: r = read_le(&s, 8, &ts); break;
            case D9_FRAME_ANNOTATIONS: r = frame_annotations(&s); break;
            default: s.pos = frame_start; r = fail(&s, "unknown frame tag"); break;
            }
        }
        if (r != OK) {
            s.pos = frame_start;
            break;
        }
        res->good_bytes = s.pos;
    }
    res->status = r == OK ? D9_SCAN_END : r == SHORT ? D9_SCAN_TRUNCATED : D9_SCAN_ERROR;
    if (r == SHORT) snprintf(res->message, sizeof res->message, "truncated at offset %zu", s.pos);
    if (in->oom && res->status == D9_SCAN_END) {
        res->status = D9_SCAN_ERROR;
        snprintf(res->message, sizeof res->message, "out of memory");
    }
    end_stream(&s);
    free(s.schemas);
    free(s.pend);
    d9_u64_map_free(&s.strings);
    d9_u64_map_free(&s.stacks);
}

void d9_trace_scan(const uint8_t *data, size_t len, d9_sym_input *in, d9_scan_result *res) {
    scan(data, len, in, res, true);
}

void d9_trace_scan_field_by_field(const uint8_t *data, size_t len, d9_sym_input *in, d9_scan_result *res) {
    scan(data, len, in, res, false);
}
