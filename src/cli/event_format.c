/* Text and JSON rendering of decoded events (see event_format.h). */
#include "cli/event_format.h"

#include <inttypes.h>

#include "cli/text_escape.h"

static void text_string(FILE *out, const char *s, size_t len) {
    putc('"', out);
    /* keep UTF-8 readable; escape quotes, and control bytes so that an event stays on one
     * line and none acts on the terminal */
    for (size_t i = 0, run = 0; i <= len; i++) {
        if (i < len && s[i] != '"' && s[i] != '\\') continue;
        d9_put_escaped(out, s + run, i - run, false);
        if (i < len) fputs(s[i] == '"' ? "\\\"" : "\\\\", out);
        run = i + 1;
    }
    putc('"', out);
}

static void text_stack(FILE *out, const uint64_t *a, uint32_t n) {
    putc('[', out);
    for (uint32_t i = 0; i < n; i++) fprintf(out, i ? ",0x%" PRIx64 : "0x%" PRIx64, a[i]);
    putc(']', out);
}

void d9_format_value_text(FILE *out, const d9_value *v) {
    if (!v->present) {
        fputs("null", out);
        return;
    }
    if (!v->resolved) {
        fprintf(out, "<unresolved %s #%" PRIu32 ">",
                v->type == D9_FT_POOLED_STACK ? "stack" : "string", v->pool_id);
        return;
    }
    switch (v->type) {
    case D9_FT_VARINT: case D9_FT_U8: case D9_FT_U16: case D9_FT_U32:
        fprintf(out, "%" PRIu64, v->u);
        break;
    case D9_FT_I64: fprintf(out, "%" PRId64, v->i); break;
    case D9_FT_F64: fprintf(out, "%.17g", v->f); break;
    case D9_FT_BOOL: fputs(v->u ? "true" : "false", out); break;
    case D9_FT_STRING: case D9_FT_POOLED_STRING: text_string(out, v->str.ptr, v->str.len); break;
    case D9_FT_BYTES:
        fputs("0x", out);
        for (uint32_t i = 0; i < v->str.len; i++) fprintf(out, "%02x", (unsigned char)v->str.ptr[i]);
        break;
    case D9_FT_STACK: case D9_FT_POOLED_STACK: text_stack(out, v->stack.addrs, v->stack.count); break;
    case D9_FT_STRING_MAP:
        putc('{', out);
        for (uint32_t i = 0; i < v->map.count; i++) {
            if (i) putc(',', out);
            text_string(out, v->map.items[i].key.ptr, v->map.items[i].key.len);
            putc(':', out);
            text_string(out, v->map.items[i].value.ptr, v->map.items[i].value.len);
        }
        putc('}', out);
        break;
    case D9_FT_DYN_LIST:
        putc('[', out);
        for (uint32_t i = 0; i < v->list.count; i++) {
            if (i) putc(',', out);
            d9_format_value_text(out, &v->list.items[i]);
        }
        putc(']', out);
        break;
    case D9_FT_DYN_MAP:
        putc('{', out);
        for (uint32_t i = 0; i < v->list.count; i++) {
            if (i) putc(',', out);
            d9_format_value_text(out, &v->list.items[2 * i]);
            putc(':', out);
            d9_format_value_text(out, &v->list.items[2 * i + 1]);
        }
        putc('}', out);
        break;
    default: fputs("?", out);
    }
}

void d9_format_event_text(FILE *out, const d9_event *ev) {
    const d9_dec_schema *s = ev->schema;
    if (s->has_timestamp) fprintf(out, "%" PRIu64 " ", ev->ts_ns);
    else fputs("- ", out);
    d9_put_escaped(out, s->name, s->name_len, false); /* names are the trace's too */
    for (uint32_t i = 0; i < s->field_count; i++) {
        putc(' ', out);
        d9_put_escaped(out, s->fields[i].name, s->fields[i].name_len, false);
        putc('=', out);
        d9_format_value_text(out, &ev->values[i]);
    }
}

void d9_format_value_json(d9_json *j, const d9_value *v) {
    if (!v->present || !v->resolved) {
        d9_json_null(j);
        return;
    }
    char hex[24];
    switch (v->type) {
    case D9_FT_VARINT: case D9_FT_U8: case D9_FT_U16: case D9_FT_U32: d9_json_u64(j, v->u); break;
    case D9_FT_I64: d9_json_i64(j, v->i); break;
    case D9_FT_F64: d9_json_f64(j, v->f); break;
    case D9_FT_BOOL: d9_json_bool(j, v->u != 0); break;
    case D9_FT_STRING: case D9_FT_POOLED_STRING: d9_json_string_n(j, v->str.ptr, v->str.len); break;
    case D9_FT_BYTES: d9_json_hex(j, (const uint8_t *)v->str.ptr, v->str.len); break;
    case D9_FT_STACK: case D9_FT_POOLED_STACK:
        d9_json_array_begin(j);
        for (uint32_t i = 0; i < v->stack.count; i++) {
            snprintf(hex, sizeof hex, "0x%" PRIx64, v->stack.addrs[i]);
            d9_json_string(j, hex);
        }
        d9_json_array_end(j);
        break;
    case D9_FT_STRING_MAP:
        d9_json_object_begin(j);
        for (uint32_t i = 0; i < v->map.count; i++) {
            d9_json_key_n(j, v->map.items[i].key.ptr, v->map.items[i].key.len);
            d9_json_string_n(j, v->map.items[i].value.ptr, v->map.items[i].value.len);
        }
        d9_json_object_end(j);
        break;
    case D9_FT_DYN_LIST:
        d9_json_array_begin(j);
        for (uint32_t i = 0; i < v->list.count; i++) d9_format_value_json(j, &v->list.items[i]);
        d9_json_array_end(j);
        break;
    case D9_FT_DYN_MAP:
        d9_json_array_begin(j);
        for (uint32_t i = 0; i < v->list.count; i++) {
            d9_json_array_begin(j);
            d9_format_value_json(j, &v->list.items[2 * i]);
            d9_format_value_json(j, &v->list.items[2 * i + 1]);
            d9_json_array_end(j);
        }
        d9_json_array_end(j);
        break;
    default: d9_json_null(j);
    }
}

void d9_format_event_json(d9_json *j, const d9_event *ev) {
    const d9_dec_schema *s = ev->schema;
    d9_json_object_begin(j);
    d9_json_key(j, "ts");
    if (s->has_timestamp) d9_json_u64(j, ev->ts_ns);
    else d9_json_null(j);
    d9_json_key(j, "event");
    d9_json_string_n(j, s->name, s->name_len);
    d9_json_key(j, "fields");
    d9_json_object_begin(j);
    for (uint32_t i = 0; i < s->field_count; i++) {
        d9_json_key_n(j, s->fields[i].name, s->fields[i].name_len);
        d9_format_value_json(j, &ev->values[i]);
    }
    d9_json_object_end(j);
    d9_json_object_end(j);
}
