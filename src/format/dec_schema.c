/* Schema registry (see dec_schema.h). */
#include "format/dec_schema.h"

#include <stdlib.h>
#include <string.h>

struct d9_schema_node {
    d9_dec_schema pub;       /* first: a d9_dec_schema* is a d9_schema_node* */
    const uint8_t *body;
    size_t body_len;
    uint64_t hash;
};

static inline uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

void d9_schema_reg_init(d9_schema_reg *r, size_t max_bytes) {
    memset(r, 0, sizeof *r);
    d9_arena_init(&r->arena, 256 * 1024, max_bytes);
}

void d9_schema_reg_free(d9_schema_reg *r) {
    d9_arena_free(&r->arena);
    free(r->all);
    free(r->table);
    memset(r, 0, sizeof *r);
}

static uint64_t hash_bytes(const uint8_t *p, size_t n) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

static bool grow_table(d9_schema_reg *r) {
    uint32_t nslots = r->table ? (r->table_mask + 1) * 2 : 64;
    d9_schema_node **t = calloc(nslots, sizeof *t);
    if (!t) return false;
    for (uint32_t i = 0; r->table && i <= r->table_mask; i++) {
        d9_schema_node *n = r->table[i];
        if (!n) continue;
        uint32_t j = (uint32_t)n->hash & (nslots - 1);
        while (t[j]) j = (j + 1) & (nslots - 1);
        t[j] = n;
    }
    free(r->table);
    r->table = t;
    r->table_mask = nslots - 1;
    return true;
}

/* The most bytes a value of wire type wt takes when that is bounded, else 0. */
static uint32_t bounded_size(uint8_t wt) {
    switch (wt) {
    case D9_FT_U8: case D9_FT_BOOL: return 1;
    case D9_FT_U16: return 2;
    case D9_FT_U32: case D9_FT_POOLED_STRING: case D9_FT_POOLED_STACK: return 4;
    case D9_FT_I64: case D9_FT_F64: return 8;
    case D9_FT_VARINT: return 10;
    case D9_FT_VARINT | D9_FT_OPTIONAL: return 11; /* the presence byte, then the varint */
    default: return 0; /* lengths read from the data, other optional values */
    }
}

/* The decoder's field plan of s (d9_dec_schema.wire_types, bounded_bytes). */
static bool plan_fields(d9_schema_reg *r, d9_dec_schema *s) {
    uint8_t *wire = d9_arena_alloc(&r->arena, (size_t)s->field_count + 1, 1);
    if (!wire) return false;
    uint32_t bytes = 0;
    bool bounded = s->field_count > 0;
    for (uint16_t i = 0; i < s->field_count; i++) {
        wire[i] = (uint8_t)(s->fields[i].type | (s->fields[i].optional ? D9_FT_OPTIONAL : 0));
        uint32_t b = bounded_size(wire[i]);
        if (!b) bounded = false;
        bytes += b;
    }
    wire[s->field_count] = 0; /* no type: the end, for the decoder's threaded reader */
    s->wire_types = wire;
    s->bounded_bytes = bounded ? bytes : 0;
    s->run_bytes = bounded ? 7 + (size_t)bytes : SIZE_MAX;
    return true;
}

/* Build the public view of a body that the decoder already validated. */
static d9_schema_node *build(d9_schema_reg *r, const uint8_t *body, size_t len, uint64_t h,
                             uint16_t type_id) {
    d9_schema_node *n = d9_arena_alloc(&r->arena, sizeof *n, 16);
    uint8_t *copy = d9_arena_alloc(&r->arena, len, 1);
    if (!n || !copy) return NULL;
    memcpy(copy, body, len);
    memset(n, 0, sizeof *n);
    n->body = copy;
    n->body_len = len;
    n->hash = h;

    const uint8_t *p = copy;
    uint16_t name_len = rd16(p);
    p += 2;
    n->pub.name = d9_arena_strdup(&r->arena, p, name_len);
    n->pub.name_len = name_len;
    p += name_len;
    n->pub.has_timestamp = *p++ != 0;
    uint16_t nf = rd16(p);
    p += 2;
    n->pub.field_count = nf;
    d9_dec_field *fields = d9_arena_alloc(&r->arena, (size_t)nf * sizeof *fields, 16);
    if (!n->pub.name || !fields) return NULL;
    for (uint16_t i = 0; i < nf; i++) {
        uint16_t fl = rd16(p);
        p += 2;
        fields[i].name = d9_arena_strdup(&r->arena, p, fl);
        if (!fields[i].name) return NULL;
        fields[i].name_len = fl;
        p += fl;
        fields[i].type = *p & 0x7f;
        fields[i].optional = (*p & 0x80) != 0;
        fields[i].annotation_count = 0;
        fields[i].annotations = NULL;
        p++;
    }
    n->pub.fields = fields;
    if (!plan_fields(r, &n->pub)) return NULL;
    n->pub.first_type_id = type_id;
    d9_dec_bind(&n->pub.bind, n->pub.name, fields, n->pub.field_count);
    /* a clock sync moves the plausible time range (decoder.c, check_time): never in a run */
    if (n->pub.has_timestamp && n->pub.bind.role == D9_SCH_CLOCK_SYNC) n->pub.run_bytes = SIZE_MAX;
    return n;
}

d9_dec_schema *d9_schema_intern(d9_schema_reg *r, const uint8_t *body, size_t len,
                                uint16_t type_id) {
    uint64_t h = hash_bytes(body, len);
    if (r->table) {
        uint32_t i = (uint32_t)h & r->table_mask;
        for (d9_schema_node *n; (n = r->table[i]); i = (i + 1) & r->table_mask) {
            if (n->hash == h && n->body_len == len && memcmp(n->body, body, len) == 0)
                return &n->pub;
        }
    }
    if (r->count == UINT32_MAX) return NULL;
    if (!r->table || (r->count + 1) * 2 > r->table_mask + 1) {
        if (!grow_table(r)) return NULL;
    }
    if (r->count == r->cap) {
        uint32_t cap = r->cap ? r->cap * 2 : 32;
        d9_schema_node **all = realloc(r->all, (size_t)cap * sizeof *all);
        if (!all) return NULL;
        r->all = all;
        r->cap = cap;
    }
    d9_schema_node *n = build(r, body, len, h, type_id);
    if (!n) return NULL;
    n->pub.index = r->count;
    r->all[r->count++] = n;
    uint32_t i = (uint32_t)h & r->table_mask;
    while (r->table[i]) i = (i + 1) & r->table_mask;
    r->table[i] = n;
    if (n->pub.field_count > r->max_fields) r->max_fields = n->pub.field_count;
    return &n->pub;
}

bool d9_schema_annotate(d9_schema_reg *r, d9_dec_schema *s, uint16_t field_index,
                        const uint8_t *key, uint16_t key_len, const uint8_t *value,
                        uint32_t value_len) {
    /* Fields are allocated by this file, so dropping const here is safe. */
    d9_dec_field *f = (d9_dec_field *)&s->fields[field_index];
    for (uint16_t i = 0; i < f->annotation_count; i++) {
        const d9_dec_annotation *a = &f->annotations[i];
        if (a->key_len != key_len || memcmp(a->key, key, key_len) != 0) continue;
        if (a->value_len == value_len && memcmp(a->value, value, value_len) == 0) return true;
        char *v = d9_arena_strdup(&r->arena, value, value_len);
        if (!v) return false;
        d9_dec_annotation *m = (d9_dec_annotation *)a;
        m->value = v;
        m->value_len = value_len;
        return true;
    }
    if (f->annotation_count == UINT16_MAX) return true; /* ignore beyond what we can count */
    /* Copy-on-append: the old array stays valid for anyone still holding it. */
    d9_dec_annotation *arr =
        d9_arena_alloc(&r->arena, ((size_t)f->annotation_count + 1) * sizeof *arr, 16);
    char *k = d9_arena_strdup(&r->arena, key, key_len);
    char *v = d9_arena_strdup(&r->arena, value, value_len);
    if (!arr || !k || !v) return false;
    if (f->annotation_count) memcpy(arr, f->annotations, f->annotation_count * sizeof *arr);
    arr[f->annotation_count] = (d9_dec_annotation){.key = k, .value = v, .key_len = key_len,
                                                   .value_len = value_len};
    f->annotations = arr;
    f->annotation_count++;
    return true;
}
