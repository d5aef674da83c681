#include "symbols/trace_scan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A field of the event's schema by name, bound once by the decoder (format/dec_bindings.h). */
#define F(name) (ev->schema->bind.field[D9_KF_##name])

typedef struct reader {
    d9_sym_input *in;
    struct pend { uint32_t id; bool exact; } *pend; /* stack refs read before their pool entry */
    size_t npend, pend_cap;
    uint64_t seen_stack_entries;
    uint64_t lost_refs;
} reader;

static bool is_stack_type(uint8_t t) { return t == D9_FT_POOLED_STACK || t == D9_FT_STACK; }

static bool has_stacks(const d9_dec_schema *s) {
    for (uint16_t i = 0; i < s->field_count; i++)
        if (is_stack_type(s->fields[i].type)) return true;
    return false;
}

/* The schemas symbolization reads; every other event is stepped over. */
static bool keep(const d9_dec_schema *s, void *ctx) {
    (void)ctx;
    switch (s->bind.role) {
    case D9_SCH_MEMORY_MAP: case D9_SCH_SYMBOL_TABLE_ENTRY: case D9_SCH_SEGMENT_METADATA: return true;
    default: return has_stacks(s);
    }
}

static void retry_pending(reader *r, d9_decoder *d) {
    size_t k = 0;
    for (size_t i = 0; i < r->npend; i++) {
        const uint64_t *addrs;
        uint32_t n;
        if (d9_dec_pool_stack(d, r->pend[i].id, &addrs, &n)) d9_sym_input_add_stack(r->in, addrs, n, r->pend[i].exact);
        else r->pend[k++] = r->pend[i];
    }
    r->npend = k;
}

/* The stream's pools are about to go: what is still pending now was never defined. */
static void stream_end(d9_decoder *d, void *ctx) {
    reader *r = ctx;
    if (r->npend) retry_pending(r, d);
    r->lost_refs += r->npend;
    r->npend = 0;
    r->seen_stack_entries = 0;
}

static void add_stack_value(reader *r, const d9_value *v, bool exact) {
    if (!v->present) return;
    if (v->resolved) {
        d9_sym_input_add_stack(r->in, v->stack.addrs, v->stack.count, exact);
        return;
    }
    if (r->npend == r->pend_cap) {
        size_t cap = r->pend_cap ? r->pend_cap * 2 : 64;
        struct pend *p = realloc(r->pend, cap * sizeof *p);
        if (!p) {
            r->in->oom = true;
            return;
        }
        r->pend = p;
        r->pend_cap = cap;
    }
    r->pend[r->npend++] = (struct pend){.id = v->pool_id, .exact = exact};
}

static void on_event(reader *r, d9_decoder *d, const d9_event *ev) {
    if (r->npend) {
        uint64_t seen = d9_dec_get_stats(d)->stack_pool_entries;
        if (seen != r->seen_stack_entries) {
            r->seen_stack_entries = seen;
            retry_pending(r, d);
        }
    }
    const d9_dec_schema *s = ev->schema;
    bool exact = s->bind.role == D9_SCH_CPU_SAMPLE; /* its leaf is the interrupted instruction */
    /* A StackOriginEvent says how a stack was obtained, it is no use of it: taken as one, it made
     * a CPU sample's leaf a return address too, named by the instruction before it (the
     * previous function's, for a sample on a function's first instruction). */
    bool uses_stacks = s->bind.role != D9_SCH_STACK_ORIGIN;
    for (uint16_t i = 0; i < s->field_count && uses_stacks; i++)
        if (is_stack_type(s->fields[i].type)) add_stack_value(r, &ev->values[i], exact);
    const d9_value *v = ev->values;
    uint64_t a, b, c = 0;
    d9_dec_str s1, s2 = {"", 0};
    switch (s->bind.role) {
    case D9_SCH_MEMORY_MAP:
        if (F(START) < 0 || F(END) < 0 || F(PATH) < 0 || !d9_value_uint(&v[F(START)], &a) ||
            !d9_value_uint(&v[F(END)], &b) || !d9_value_str(&v[F(PATH)], &s1))
            return;
        if (F(FILE_OFFSET) >= 0) d9_value_uint(&v[F(FILE_OFFSET)], &c);
        if (F(BUILD_ID) >= 0) d9_value_str(&v[F(BUILD_ID)], &s2);
        d9_sym_input_add_map(r->in, a, b, c, s1.ptr, s1.len, s2.ptr, s2.len);
        break;
    case D9_SCH_SYMBOL_TABLE_ENTRY:
        if (F(ADDR) >= 0 && F(SYMBOL_NAME) >= 0 && d9_value_uint(&v[F(ADDR)], &a) &&
            d9_value_str(&v[F(SYMBOL_NAME)], &s1))
            d9_sym_input_note_symbol(r->in, a, s1.ptr, s1.len);
        break;
    case D9_SCH_SEGMENT_METADATA:
        if (F(ENTRIES) < 0 || !v[F(ENTRIES)].present || v[F(ENTRIES)].type != D9_FT_STRING_MAP) return;
        for (uint32_t i = 0; i < v[F(ENTRIES)].map.count; i++) {
            const d9_dec_kv *kv = &v[F(ENTRIES)].map.items[i];
            if (kv->key.len == 7 && !memcmp(kv->key.ptr, "boot_id", 7) &&
                kv->value.len < sizeof r->in->boot_id) {
                memcpy(r->in->boot_id, kv->value.ptr, kv->value.len);
                r->in->boot_id[kv->value.len] = 0;
            }
        }
        break;
    default:
        break;
    }
}

uint64_t d9_sym_input_read(d9_decoder *d, d9_sym_input *in, bool field_by_field) {
    reader r = {.in = in};
    d9_dec_set_scan(d, &(d9_dec_scan){.keep = keep, .stream_end = stream_end, .ctx = &r,
                                      .skip_plans = !field_by_field});
    d9_event ev;
    while (d9_dec_next(d, &ev) > 0) on_event(&r, d, &ev);
    r.lost_refs += r.npend; /* an error stopped the stream */
    free(r.pend);
    return r.lost_refs;
}

static void scan(const uint8_t *data, size_t len, d9_sym_input *in, d9_scan_result *res,
                 bool field_by_field) {
    memset(res, 0, sizeof *res);
    /* the recorder's own segment: damage is an error that leaves it as it is, not skipped */
    d9_dec_options opt;
    d9_dec_options_init(&opt);
    opt.stop_at_damage = true;
    d9_decoder *d = d9_dec_open_plain_mem(data, len, &opt, res->message, sizeof res->message);
    if (!d) {
        res->status = D9_SCAN_ERROR;
        return;
    }
    d9_sym_input_read(d, in, field_by_field);
    d9_dec_status st = d9_dec_state(d);
    res->status = st == D9_DEC_END ? D9_SCAN_END : st == D9_DEC_TRUNCATED ? D9_SCAN_TRUNCATED : D9_SCAN_ERROR;
    res->good_bytes = d9_dec_stop_offset(d);
    res->events = d9_dec_get_stats(d)->events;
    snprintf(res->message, sizeof res->message, "%s", d9_dec_message(d));
    if (in->oom && res->status == D9_SCAN_END) {
        res->status = D9_SCAN_ERROR;
        snprintf(res->message, sizeof res->message, "out of memory");
    }
    d9_dec_close(d);
}

void d9_trace_scan(const uint8_t *data, size_t len, d9_sym_input *in, d9_scan_result *res) {
    scan(data, len, in, res, false);
}

void d9_trace_scan_field_by_field(const uint8_t *data, size_t len, d9_sym_input *in, d9_scan_result *res) {
    scan(data, len, in, res, true);
}
