#include "symbols/symbol_stream.h"

#include <stdlib.h>
#include <string.h>

#include "format/schemas.h"
#include "common/u64_map.h"

#define TYPE_ID 0
/* Entries per batch: their new strings go in one pool frame, then their events. */
#define BATCH 256

typedef struct entry {
    uint64_t addr;
    uint32_t name, file, line, depth;
} entry;

struct d9_symbol_stream {
    d9_buf out;
    d9_stream_state st;
    bool started, failed;
    /* interned strings: id -> copy; hash -> first id with that hash (chained by next) */
    char **strings;
    uint32_t *next_same_hash;
    size_t nstrings, strings_cap;
    d9_u64_map by_hash;
    uint32_t defined; /* strings [0, defined) are already in pool frames */
    entry batch[BATCH];
    size_t nbatch;
    uint64_t entries;
    /* Under a limit: `bound` is the most the finished stream can take so far (exact for what is
     * encoded, worst case for the batch and strings not encoded yet). */
    uint64_t limit, bound;
};

/* Worst-case encoded sizes. */
#define HEADER_SCHEMA_MAX 256                  /* header + SymbolTableEntry schema (~110) */
#define POOL_FRAME_MAX 5                       /* tag + count */
#define POOL_ENTRY_MAX(len) (4 + 4 + (len))    /* id, length, bytes */
#define ENTRY_MAX (D9_RAW_EVENT_MAX + 10 + 1 + 4 + 10 + 4 + 10)

#define NO_ID UINT32_MAX

static uint64_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

static uint32_t intern(d9_symbol_stream *w, const char *s) {
    uint64_t h = hash_str(s);
    uint64_t *head = d9_u64_map_get(&w->by_hash, h);
    for (uint32_t id = head ? (uint32_t)*head : NO_ID; id != NO_ID; id = w->next_same_hash[id])
        if (strcmp(w->strings[id], s) == 0) return id;
    if (w->nstrings == w->strings_cap) {
        size_t cap = w->strings_cap ? w->strings_cap * 2 : 256;
        char **a = realloc(w->strings, cap * sizeof *a);
        if (a) w->strings = a;
        uint32_t *n = realloc(w->next_same_hash, cap * sizeof *n);
        if (n) w->next_same_hash = n;
        if (!a || !n) return NO_ID;
        w->strings_cap = cap;
    }
    char *copy = strdup(s);
    uint64_t *slot = d9_u64_map_upsert(&w->by_hash, h, NO_ID);
    if (!copy || !slot) {
        free(copy);
        return NO_ID;
    }
    uint32_t id = (uint32_t)w->nstrings++;
    w->strings[id] = copy;
    w->next_same_hash[id] = (uint32_t)*slot;
    *slot = id;
    return id;
}

d9_symbol_stream *d9_symbol_stream_new(void) {
    d9_symbol_stream *w = calloc(1, sizeof *w);
    if (w) d9_buf_init(&w->out);
    if (w) w->limit = UINT64_MAX;
    return w;
}

void d9_symbol_stream_set_limit(d9_symbol_stream *w, uint64_t max_bytes) { w->limit = max_bytes; }

/* An interned string's id, or NO_ID when it is not interned yet. */
static uint32_t find(const d9_symbol_stream *w, const char *s) {
    uint64_t *head = d9_u64_map_get(&w->by_hash, hash_str(s));
    for (uint32_t id = head ? (uint32_t)*head : NO_ID; id != NO_ID; id = w->next_same_hash[id])
        if (strcmp(w->strings[id], s) == 0) return id;
    return NO_ID;
}

/* The most adding the frames of r can grow the stream by (a string new to the stream counted
 * once per use: an over-estimate only). */
static uint64_t cost_of(const d9_symbol_stream *w, const d9_sym_result *r) {
    uint64_t cost = w->entries == 0 && w->nbatch == 0 ? HEADER_SCHEMA_MAX : 0;
    size_t batch = w->nbatch;
    for (uint32_t d = 0; d < r->count; d++) {
        const d9_sym_frame *f = &r->frames[d];
        const char *file = f->file ? f->file : "";
        if (batch % BATCH == 0) cost += POOL_FRAME_MAX; /* a new batch, a new pool frame */
        batch++;
        if (find(w, f->name) == NO_ID) cost += POOL_ENTRY_MAX(strlen(f->name));
        if (find(w, file) == NO_ID) cost += POOL_ENTRY_MAX(strlen(file));
        cost += ENTRY_MAX;
    }
    return cost;
}

static void flush_batch(d9_symbol_stream *w) {
    if (w->nbatch == 0) return;
    if (!w->started) {
        d9_enc_header(&w->out, &w->st);
        d9_enc_schema(&w->out, TYPE_ID, &d9_builtin_schemas[D9_SCH_SYMBOL_TABLE_ENTRY]);
        w->started = true;
    }
    d9_pool_frame pf;
    d9_enc_string_pool_begin(&w->out, &pf);
    for (; w->defined < w->nstrings; w->defined++)
        d9_enc_string_pool_entry(&w->out, &pf, w->defined, w->strings[w->defined],
                                 strlen(w->strings[w->defined]));
    d9_enc_pool_end(&w->out, &pf);
    for (size_t i = 0; i < w->nbatch; i++) {
        const entry *e = &w->batch[i];
        d9_enc_event(&w->out, &w->st, TYPE_ID, 0);
        d9_put_varint(&w->out, e->addr);
        d9_put_varint(&w->out, 0); /* size: dial9 writes 0 */
        d9_put_u32(&w->out, e->name);
        d9_put_varint(&w->out, e->depth);
        d9_put_u32(&w->out, e->file);
        d9_put_varint(&w->out, e->line);
    }
    w->entries += w->nbatch;
    w->nbatch = 0;
}

bool d9_symbol_stream_add(d9_symbol_stream *w, uint64_t addr, const d9_sym_result *r) {
    if (w->limit != UINT64_MAX) {
        uint64_t cost = cost_of(w, r);
        if (w->bound + cost > w->limit) return false;
        w->bound += cost;
    }
    for (uint32_t d = 0; d < r->count; d++) {
        const d9_sym_frame *f = &r->frames[d];
        uint32_t name = intern(w, f->name), file = intern(w, f->file ? f->file : "");
        if (name == NO_ID || file == NO_ID) {
            w->failed = true;
            return true;
        }
        if (w->nbatch == BATCH) flush_batch(w);
        w->batch[w->nbatch++] = (entry){.addr = addr, .name = name, .file = file, .line = f->line, .depth = d};
    }
    return true;
}

const uint8_t *d9_symbol_stream_bytes(d9_symbol_stream *w, size_t *len, uint64_t *entries) {
    flush_batch(w);
    *entries = w->entries;
    *len = w->out.len;
    if (w->failed || w->out.failed) return NULL;
    return w->out.data ? w->out.data : (const uint8_t *)"";
}

void d9_symbol_stream_free(d9_symbol_stream *w) {
    if (!w) return;
    for (size_t i = 0; i < w->nstrings; i++) free(w->strings[i]);
    free(w->strings);
    free(w->next_same_hash);
    d9_u64_map_free(&w->by_hash);
    d9_buf_free(&w->out);
    free(w);
}
