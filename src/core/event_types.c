#include "core/event_types.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/last_error.h"
#include "format/wire.h"

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static d9_event_type *g_types[D9_MAX_EVENT_TYPES];
static uint32_t g_count;

static uint8_t wire_type(d9_field_kind k) {
    switch (k) {
    case D9_U64: return D9_FT_VARINT;
    case D9_I64: return D9_FT_I64;
    case D9_F64: return D9_FT_F64;
    case D9_BOOL: return D9_FT_BOOL;
    case D9_STRING: return D9_FT_STRING;
    case D9_STATIC_STRING: return D9_FT_POOLED_STRING;
    }
    return 0;
}

static bool same_fields(const d9_event_type *t, const d9_field *f, size_t n) {
    if (t->field_count != n) return false;
    for (size_t i = 0; i < n; i++)
        if (t->kinds[i] != f[i].kind || strcmp(t->wire_fields[i].name, f[i].name) != 0) return false;
    return true;
}

static bool valid_name(const char *s) { return s && *s && strlen(s) < 256; }

const d9_event_type *d9_event_type_define(const char *name, const d9_field *fields,
                                          size_t field_count) {
    if (!valid_name(name)) {
        d9_set_error("event type name must be 1..255 characters");
        return NULL;
    }
    if (field_count > D9_MAX_EVENT_FIELDS || (field_count && !fields)) {
        d9_set_error("event type %s: at most %d fields", name, D9_MAX_EVENT_FIELDS);
        return NULL;
    }
    for (size_t i = 0; i < field_count; i++) {
        if (!valid_name(fields[i].name) || wire_type(fields[i].kind) == 0) {
            d9_set_error("event type %s: field %zu has a bad name or kind", name, i);
            return NULL;
        }
    }
    pthread_mutex_lock(&g_lock);
    d9_event_type *t = NULL;
    for (uint32_t i = 0; i < g_count; i++) {
        if (strcmp(g_types[i]->def.name, name) != 0) continue;
        if (same_fields(g_types[i], fields, field_count)) t = g_types[i];
        else d9_set_error("event type %s is already defined with other fields", name);
        goto out;
    }
    if (g_count == D9_MAX_EVENT_TYPES) {
        d9_set_error("too many event types (max %d)", D9_MAX_EVENT_TYPES);
        goto out;
    }
    t = calloc(1, sizeof *t);
    char *nm = t ? strdup(name) : NULL;
    if (!nm) {
        free(t);
        t = NULL;
        d9_set_error("out of memory");
        goto out;
    }
    t->field_count = (uint16_t)field_count;
    for (size_t i = 0; i < field_count; i++) {
        t->kinds[i] = fields[i].kind;
        char *fname = strdup(fields[i].name);
        if (!fname) {
            for (size_t j = 0; j < i; j++) free((char *)t->wire_fields[j].name);
            free(nm);
            free(t);
            t = NULL;
            d9_set_error("out of memory");
            goto out;
        }
        t->wire_fields[i].name = fname;
        t->wire_fields[i].type = wire_type(fields[i].kind);
        if (fields[i].kind == D9_STRING) t->has_strings = true;
    }
    t->def.name = nm;
    t->def.has_timestamp = true;
    t->def.field_count = t->field_count;
    t->def.fields = t->wire_fields;
    t->index = g_count;
    __atomic_store_n(&g_types[g_count], t, __ATOMIC_RELEASE);
    g_count++;
out:
    pthread_mutex_unlock(&g_lock);
    return t;
}

const d9_event_type *d9_event_type_at(uint32_t index) {
    if (index >= D9_MAX_EVENT_TYPES) return NULL;
    return __atomic_load_n(&g_types[index], __ATOMIC_ACQUIRE);
}

void d9_event_types_fork_hold(bool hold) {
    if (hold) pthread_mutex_lock(&g_lock);
    else pthread_mutex_unlock(&g_lock);
}
