/* `dial9 stats [--json] PATH...`: what a trace holds. Events by schema name, frame counts,
 * time range, workers, threads, drops, the first segment's metadata and the keys whose value
 * changed later, and how each file ended. */
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/coverage.h"
#include "analysis/upload_loss.h"
#include "cli/cli.h"
#include "cli/crash_dump_names.h"
#include "cli/dump_manifest.h"
#include "common/json_writer.h"
#include "format/trace_paths.h"
#include "cli/trace_reader.h"
#include "cli/text_escape.h"
#include "cli/truncated_ends.h"
#include "common/u64_map.h"
#include "common/u64_set.h"
#include "format/schemas.h"

static void stats_usage(FILE *out) {
    fprintf(out,
            "usage: dial9 stats [--json] PATH...\n"
            "\n"
            "Summarize trace files: events by schema name, frame counts (streams, schemas,\n"
            "timestamp resets, string and stack pools), time range of timestamped events,\n"
            "workers (worker_id of poll/park events), their runtimes (the runtime.<name>\n"
            "metadata entries), threads (tid), dropped events by reason,\n"
            "how stacks were obtained (StackOriginEvent: frame pointers, CFI unwinding,\n"
            "truncated, and where truncated stacks end), the SegmentMetadataEvent of the first\n"
            "segment and every key whose value a later one changed (its last value, and the file\n"
            "that said it), and how each file ended. A flight recorder's dump directory: its manifest\n"
            "(trigger, window, what it holds and lacks) first, or that it is incomplete.\n"
            "\n"
            "  --json    one JSON object (keys: events, by_name, frames, time, workers, runtimes,\n"
            "            threads, drops, stack_origin, metadata, metadata_last,\n"
            "            metadata_changed, files, ...)\n"
            "  -h, --help\n"
            "\n"
            D9_CLI_S3_INPUT_HELP
            "Exit status: 0 all read (a torn tail, the last frame cut short, is fine and reported),\n"
            "1 a file could not be read, is no trace or is damaged (what was read is still printed,\n"
            "every intact stream after the damage too), 2 usage error.\n");
}

/* A counter under a name (events by schema name, drops by reason). */
typedef struct named_count {
    char *name;
    uint64_t count;
} named_count;

typedef struct named_counts {
    named_count *items;
    size_t n, cap;
} named_counts;

static named_count *named_get(named_counts *c, const char *name, size_t len) {
    for (size_t i = 0; i < c->n; i++)
        if (strlen(c->items[i].name) == len && memcmp(c->items[i].name, name, len) == 0)
            return &c->items[i];
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 32;
        named_count *p = realloc(c->items, cap * sizeof *p);
        if (!p) return NULL;
        c->items = p;
        c->cap = cap;
    }
    char *copy = strndup(name, len);
    if (!copy) return NULL;
    c->items[c->n] = (named_count){copy, 0};
    return &c->items[c->n++];
}

static void named_free(named_counts *c) {
    for (size_t i = 0; i < c->n; i++) free(c->items[i].name);
    free(c->items);
}

static int cmp_count_desc(const void *a, const void *b) {
    const named_count *x = a, *y = b;
    if (x->count != y->count) return x->count > y->count ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* A field of the event's schema by name, bound once by the decoder (format/dec_bindings.h). */
#define F(name) (ev->schema->bind.field[D9_KF_##name])

typedef struct stats_ctx {
    named_counts by_name;
    named_counts drops;
    uint64_t drops_total;
    uint64_t events;
    uint64_t first_ts, last_ts;
    bool have_ts;
    d9_u64_set workers, tids;
    char **meta; /* key, value, key, value ... of the first SegmentMetadataEvent */
    size_t meta_n;
    bool have_meta;
    const char *meta_path;
    /* every key of every SegmentMetadataEvent, its last value and the file that said it: what
     * changed during the run (the recorder writes changed metadata within a segment too) */
    struct meta_last {
        char *key, *value;
        const char *path;
        const char *first; /* its value in the first metadata (keep_metadata's copy), NULL: not there */
        size_t same_hash;  /* 1 + the index of the next key of the same hash, 0: none */
    } *last;
    size_t last_n, last_cap;
    d9_u64_map last_by_hash; /* key's hash -> 1 + the index of the newest key of that hash */
    /* runtime.<name> entries of every SegmentMetadataEvent: a worker that registers after
     * the first metadata is named only in a later one */
    struct runtime_workers {
        char *name;
        d9_u64_set ids;
    } *runtimes;
    size_t runtimes_n, runtimes_cap;
    size_t *counter_of; /* per schema index of the current file: 1 + its index in by_name */
    size_t counter_cap;
    size_t file;
    /* How stacks were obtained: StackOriginEvent gives a method per stack pool id of the
     * file (the recorder's ids are stable across the streams of a file); each event with a
     * callchain counts under its stack's method (0: not said). */
    uint8_t *method_of;
    size_t method_cap;
    uint64_t by_method[D9_ORIGIN_METHODS];
    d9_truncated_ends truncated; /* where the truncated stacks end */
    const d9_path_list *paths;
    d9a_coverage coverage; /* CoverageEvent: where a governed source recorded partially */
    d9a_upload_loss upload_loss; /* UploadLossEvent: segments deleted before upload */
    bool oom;
} stats_ctx;

/* The by_name counter of the event's schema, found once per schema of a file. */
static named_count *counter_for(stats_ctx *c, const d9_dec_schema *s) {
    if (s->index >= c->counter_cap) {
        size_t cap = c->counter_cap ? c->counter_cap : 64;
        while (cap <= s->index) cap *= 2;
        size_t *p = realloc(c->counter_of, cap * sizeof *p);
        if (!p) return NULL;
        memset(p + c->counter_cap, 0, (cap - c->counter_cap) * sizeof *p);
        c->counter_of = p;
        c->counter_cap = cap;
    }
    if (c->counter_of[s->index]) return &c->by_name.items[c->counter_of[s->index] - 1];
    named_count *nc = named_get(&c->by_name, s->name, s->name_len);
    if (nc) c->counter_of[s->index] = (size_t)(nc - c->by_name.items) + 1;
    return nc;
}

static void keep_metadata(stats_ctx *c, const d9_value *v, const char *path) {
    if (!v || v->type != D9_FT_STRING_MAP || !v->present) return;
    c->meta = calloc((size_t)v->map.count * 2 + 1, sizeof *c->meta);
    if (!c->meta) {
        c->oom = true;
        return;
    }
    for (uint32_t i = 0; i < v->map.count; i++) {
        c->meta[2 * i] = strndup(v->map.items[i].key.ptr, v->map.items[i].key.len);
        c->meta[2 * i + 1] = strndup(v->map.items[i].value.ptr, v->map.items[i].value.len);
        if (!c->meta[2 * i] || !c->meta[2 * i + 1]) c->oom = true;
    }
    c->meta_n = v->map.count;
    c->have_meta = true;
    c->meta_path = path;
}

static bool dec_str_is(const d9_dec_str *s, const char *z) { return z && strlen(z) == s->len && !memcmp(z, s->ptr, s->len); }

/* FNV-1a: the map mixes it further. */
static uint64_t key_hash(const char *p, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 0x100000001b3ull;
    return h;
}

/* The key's entry, made (without a value) when new; NULL when out of memory. By hash: a run's
 * metadata events times its keys would make a linear search quadratic. */
static struct meta_last *last_entry(stats_ctx *c, const d9_dec_str *key, const char *path) {
    uint64_t h = key_hash(key->ptr, key->len);
    const uint64_t *head = d9_u64_map_get(&c->last_by_hash, h);
    for (size_t i = head ? (size_t)*head : 0; i; i = c->last[i - 1].same_hash)
        if (dec_str_is(key, c->last[i - 1].key)) return &c->last[i - 1];
    if (c->last_n == c->last_cap) {
        size_t cap = c->last_cap ? 2 * c->last_cap : 64;
        struct meta_last *p = realloc(c->last, cap * sizeof *p);
        if (!p) return NULL;
        c->last = p;
        c->last_cap = cap;
    }
    char *k = strndup(key->ptr, key->len);
    if (!k) return NULL;
    size_t next = head ? (size_t)*head : 0;
    if (d9_u64_map_put(&c->last_by_hash, h, c->last_n + 1) != 0) {
        free(k);
        return NULL;
    }
    c->last[c->last_n] = (struct meta_last){k, NULL, path, NULL, next};
    return &c->last[c->last_n++];
}

/* The last value of each key, in the order the keys first appeared; of the first metadata
 * (first: the event keep_metadata copied), each key's value there too. */
static void note_last_metadata(stats_ctx *c, const d9_value *v, const char *path, bool first) {
    if (!v || v->type != D9_FT_STRING_MAP || !v->present) return;
    for (uint32_t i = 0; i < v->map.count; i++) {
        const d9_dec_kv *kv = &v->map.items[i];
        struct meta_last *m = last_entry(c, &kv->key, path);
        if (!m) {
            c->oom = true;
            return;
        }
        if (first && !m->first && i < c->meta_n) m->first = c->meta[2 * i + 1];
        if (m->value && dec_str_is(&kv->value, m->value)) continue; /* said again, unchanged */
        char *val = strndup(kv->value.ptr, kv->value.len);
        if (!val) {
            c->oom = true;
            return;
        }
        free(m->value);
        m->value = val;
        m->path = path;
    }
}

/* A key whose last value is not the first metadata's. */
static bool changed_later(const struct meta_last *m) {
    return !m->first || !m->value || strcmp(m->first, m->value) != 0;
}

static struct runtime_workers *runtime_named(stats_ctx *c, const char *name, size_t len) {
    for (size_t i = 0; i < c->runtimes_n; i++)
        if (strlen(c->runtimes[i].name) == len && !memcmp(c->runtimes[i].name, name, len))
            return &c->runtimes[i];
    if (c->runtimes_n == c->runtimes_cap) {
        size_t cap = c->runtimes_cap ? 2 * c->runtimes_cap : 4;
        struct runtime_workers *r = realloc(c->runtimes, cap * sizeof *r);
        if (!r) return NULL;
        c->runtimes = r;
        c->runtimes_cap = cap;
    }
    struct runtime_workers *r = &c->runtimes[c->runtimes_n];
    *r = (struct runtime_workers){.name = strndup(name, len)};
    if (!r->name) return NULL;
    c->runtimes_n++;
    return r;
}

/* "runtime.<name>" = "0,1,2": each worker id under its runtime's name */
static void note_runtimes(stats_ctx *c, const d9_value *v) {
    if (!v || v->type != D9_FT_STRING_MAP || !v->present) return;
    for (uint32_t i = 0; i < v->map.count; i++) {
        const d9_dec_kv *kv = &v->map.items[i];
        if (kv->key.len <= 8 || memcmp(kv->key.ptr, "runtime.", 8) != 0) continue;
        struct runtime_workers *r = runtime_named(c, kv->key.ptr + 8, kv->key.len - 8);
        if (!r) {
            c->oom = true;
            return;
        }
        const char *p = kv->value.ptr, *end = p + kv->value.len;
        while (p < end) {
            uint64_t id = 0;
            bool digits = false;
            for (; p < end && *p >= '0' && *p <= '9'; p++, digits = true)
                id = id * 10 + (uint64_t)(*p - '0');
            if (digits && d9_u64_set_add(&r->ids, id) < 0) c->oom = true;
            while (p < end && (*p < '0' || *p > '9')) p++;
        }
    }
}

#define MAX_POOL_IDS (1u << 24)

static void note_origin(stats_ctx *c, const d9_event *ev) {
    uint64_t m = 0;
    if (F(CALLCHAIN) < 0 || F(METHOD) < 0 || !d9_value_uint(&ev->values[F(METHOD)], &m) ||
        m >= D9_ORIGIN_METHODS)
        return;
    uint32_t id = ev->values[F(CALLCHAIN)].pool_id;
    if (id >= MAX_POOL_IDS) return;
    if (id >= c->method_cap) {
        size_t cap = c->method_cap ? c->method_cap : 256;
        while (cap <= id) cap *= 2;
        uint8_t *a = realloc(c->method_of, cap);
        if (!a) {
            c->oom = true;
            return;
        }
        memset(a + c->method_cap, 0, cap - c->method_cap);
        c->method_of = a;
        c->method_cap = cap;
    }
    c->method_of[id] = (uint8_t)m;
}

static void count_stack(stats_ctx *c, const d9_event *ev, const d9_decoder *dec) {
    if (F(CALLCHAIN) < 0 || ev->values[F(CALLCHAIN)].type != D9_FT_POOLED_STACK) return;
    const d9_value *v = &ev->values[F(CALLCHAIN)];
    uint32_t id = v->pool_id;
    uint8_t method = id < c->method_cap ? c->method_of[id] : 0;
    c->by_method[method]++;
    if (method != D9_ORIGIN_TRUNCATED) return;
    const uint64_t *addrs = v->stack.addrs;
    uint32_t count = v->stack.count;
    if (!v->resolved && !d9_dec_pool_stack(dec, id, &addrs, &count)) return;
    d9_truncated_ends_note(&c->truncated, addrs, count);
}

static int on_event(void *p, const d9_event *ev, d9_decoder *dec, size_t file_index) {
    stats_ctx *c = p;
    if (file_index != c->file) {
        /* schema indexes belong to the previous file's (closed) decoder; pool ids to its writer */
        if (c->counter_of) memset(c->counter_of, 0, c->counter_cap * sizeof *c->counter_of);
        c->file = file_index;
        if (c->method_of) memset(c->method_of, 0, c->method_cap);
    }
    named_count *counter = counter_for(c, ev->schema);
    if (!counter) {
        c->oom = true;
        return 1;
    }
    counter->count++;
    c->events++;
    /* Timestamp 0 marks "no time" (SymbolTableEntry is written with it): not in the range. */
    /* Implausible times (a decode warning) are counted, not put in the range. */
    if (ev->schema->has_timestamp && ev->ts_ns != 0 && !ev->implausible_ts) {
        if (!c->have_ts || ev->ts_ns < c->first_ts) c->first_ts = ev->ts_ns;
        if (!c->have_ts || ev->ts_ns > c->last_ts) c->last_ts = ev->ts_ns;
        c->have_ts = true;
    }
    uint64_t v;
    if (F(TID) >= 0 && d9_value_uint(&ev->values[F(TID)], &v) &&
        d9_u64_set_add(&c->tids, v) < 0)
        c->oom = true;
    switch (ev->schema->bind.role) {
    case D9_SCH_POLL_START: case D9_SCH_POLL_END: case D9_SCH_WORKER_PARK: case D9_SCH_WORKER_UNPARK:
        if (F(WORKER_ID) >= 0 && d9_value_uint(&ev->values[F(WORKER_ID)], &v) &&
            d9_u64_set_add(&c->workers, v) < 0)
            c->oom = true;
        break;
    case D9_SCH_DROPPED_EVENTS: {
        uint64_t n = 0;
        if (F(COUNT_FIELD) >= 0) d9_value_uint(&ev->values[F(COUNT_FIELD)], &n);
        d9_dec_str reason = {"unknown", 7};
        if (F(REASON) >= 0) d9_value_str(&ev->values[F(REASON)], &reason);
        named_count *nc = named_get(&c->drops, reason.ptr, reason.len);
        if (!nc) c->oom = true;
        else nc->count += n;
        c->drops_total += n;
        break;
    }
    case D9_SCH_SEGMENT_METADATA:
    {
        bool first = !c->have_meta && F(ENTRIES) >= 0;
        if (first) keep_metadata(c, &ev->values[F(ENTRIES)], c->paths->paths[file_index]);
        if (F(ENTRIES) >= 0) note_runtimes(c, &ev->values[F(ENTRIES)]);
        if (F(ENTRIES) >= 0)
            note_last_metadata(c, &ev->values[F(ENTRIES)], c->paths->paths[file_index], first && c->have_meta);
        break;
    }
    case D9_SCH_STACK_ORIGIN: note_origin(c, ev); break;
    case D9_SCH_UPLOAD_LOSS:
        if (d9a_upload_loss_note(&c->upload_loss, ev) != 0) c->oom = true;
        break;
    case D9_SCH_COVERAGE: {
        d9_dec_str src, mode;
        uint64_t one_in = 0;
        if (F(ONE_IN) >= 0) d9_value_uint(&ev->values[F(ONE_IN)], &one_in);
        if (ev->schema->has_timestamp && F(SOURCE) >= 0 && F(MODE) >= 0 &&
            d9_value_str(&ev->values[F(SOURCE)], &src) && d9_value_str(&ev->values[F(MODE)], &mode))
            d9a_coverage_add(&c->coverage, ev->ts_ns, src.ptr, src.len, mode.ptr, mode.len, one_in);
        break;
    }
    case D9_SCH_SYMBOL_TABLE_ENTRY: case D9_SCH_MEMORY_MAP:
        d9_truncated_ends_note_symbols(&c->truncated, ev);
        break;
    default: count_stack(c, ev, dec); break;
    }
    if (c->truncated.oom) c->oom = true;
    return c->oom ? 1 : 0;
}

static void sum_stats(const d9_file_result *r, size_t n, d9_dec_stats *t) {
    memset(t, 0, sizeof *t);
    for (size_t i = 0; i < n; i++) {
        const d9_dec_stats *s = &r[i].stats;
        t->streams += s->streams;
        t->schema_frames += s->schema_frames;
        t->timestamp_resets += s->timestamp_resets;
        t->string_pool_frames += s->string_pool_frames;
        t->stack_pool_frames += s->stack_pool_frames;
        t->annotation_frames += s->annotation_frames;
        t->events += s->events;
        t->bytes += s->bytes;
        t->input_bytes += s->input_bytes;
        t->unresolved_refs += s->unresolved_refs;
        t->undefined_pool_ids += s->undefined_pool_ids;
        t->implausible_times += s->implausible_times;
    }
}

/* The governed sources' coverage over the whole time range (docs/cli.md). */
/* Where print_text writes: stdout, escaping the control characters of the trace's names and
 * strings (cli/text_escape.h). */
static FILE *text_out;

static void print_coverage_text(stats_ctx *c) {
    d9a_coverage_source *s;
    d9a_coverage_period *p;
    size_t ns, np;
    if (d9a_coverage_report(&c->coverage, c->first_ts, c->last_ts, &s, &ns, &p, &np) != 0) {
        c->oom = true;
        return;
    }
    for (size_t i = 0; i < ns; i++) {
        if (!s[i].partial) {
            fprintf(text_out, "coverage   %s full (cost governor, %" PRIu64 " changes)\n", s[i].name, s[i].changes);
            continue;
        }
        fprintf(text_out, "coverage   %s PARTIAL: %.3f s of %.3f s not fully recorded (no stacks %.3f s, sampled %.3f s, "
               "paused %.3f s), %" PRIu64 " changes, %zu partial periods\n",
               s[i].name, (double)(s[i].no_stacks_ns + s[i].sampled_ns + s[i].paused_ns) / 1e9,
               (double)s[i].covered_ns / 1e9, (double)s[i].no_stacks_ns / 1e9, (double)s[i].sampled_ns / 1e9,
               (double)s[i].paused_ns / 1e9, s[i].changes, np);
    }
    free(s);
    free(p);
}

static void print_coverage_json(stats_ctx *c, d9_json *j) {
    d9a_coverage_source *s;
    d9a_coverage_period *p;
    size_t ns, np;
    if (d9a_coverage_report(&c->coverage, c->first_ts, c->last_ts, &s, &ns, &p, &np) != 0) c->oom = true;
    d9_json_key(j, "coverage");
    d9_json_array_begin(j);
    for (size_t i = 0; i < ns; i++) {
        d9_json_object_begin(j);
        d9_json_key(j, "source"); d9_json_string(j, s[i].name);
        d9_json_key(j, "partial"); d9_json_bool(j, s[i].partial);
        d9_json_key(j, "covered_ns"); d9_json_u64(j, s[i].covered_ns);
        d9_json_key(j, "full_ns"); d9_json_u64(j, s[i].full_ns);
        d9_json_key(j, "no_stacks_ns"); d9_json_u64(j, s[i].no_stacks_ns);
        d9_json_key(j, "sampled_ns"); d9_json_u64(j, s[i].sampled_ns);
        d9_json_key(j, "paused_ns"); d9_json_u64(j, s[i].paused_ns);
        d9_json_key(j, "changes"); d9_json_u64(j, s[i].changes);
        d9_json_key(j, "partial_periods");
        d9_json_array_begin(j);
        for (size_t k = 0; k < np; k++) {
            if (strcmp(p[k].source, s[i].name) != 0) continue;
            d9_json_object_begin(j);
            d9_json_key(j, "mode"); d9_json_string(j, p[k].mode);
            d9_json_key(j, "one_in"); d9_json_u64(j, p[k].one_in);
            d9_json_key(j, "from_ns"); d9_json_u64(j, p[k].from_ns);
            d9_json_key(j, "to_ns"); d9_json_u64(j, p[k].to_ns);
            d9_json_object_end(j);
        }
        d9_json_array_end(j);
        d9_json_object_end(j);
    }
    d9_json_array_end(j);
    free(s);
    free(p);
}

#define TRUNCATED_ENDS_SHOWN 3

/* Under the stacks line: where the truncated ones end. Their frames are exact up to there. */
static void print_truncated_ends_text(stats_ctx *c) {
    d9_truncated_end top[TRUNCATED_ENDS_SHOWN];
    size_t n;
    uint64_t rest;
    if (c->truncated.stacks == 0) return;
    if (d9_truncated_ends_top(&c->truncated, top, TRUNCATED_ENDS_SHOWN, &n, &rest) != 0) {
        c->oom = true;
        return;
    }
    fprintf(text_out, "           truncated ones end in");
    for (size_t i = 0; i < n; i++)
        fprintf(text_out, "%s %s (%.1f %%)", i ? "," : "", top[i].where,
               100.0 * (double)top[i].stacks / (double)c->truncated.stacks);
    if (rest) fprintf(text_out, ", elsewhere %.1f %%", 100.0 * (double)rest / (double)c->truncated.stacks);
    fprintf(text_out, ": the frames up to there are whole, their callers are missing (docs/kernel-sources.md,"
           " \"Truncated stacks\")\n");
}

static void print_text(stats_ctx *c, const d9_file_result *r, size_t nfiles) {
    d9_dec_stats t;
    sum_stats(r, nfiles, &t);
    fprintf(text_out, "files      %zu (%" PRIu64 " bytes decoded, %" PRIu64 " bytes read)\n", nfiles, t.bytes,
           t.input_bytes);
    for (size_t i = 0; i < nfiles; i++) {
        fprintf(text_out, "  %s: %s%s", r[i].path, d9_file_status_name(&r[i]), r[i].stats.gzip ? " (gzip)" : "");
        if (r[i].message[0]) fprintf(text_out, ": %s", r[i].message);
        putc('\n', text_out);
    }
    fprintf(text_out, "events     %" PRIu64 "\n", c->events);
    for (size_t i = 0; i < c->by_name.n; i++)
        fprintf(text_out, "  %10" PRIu64 "  %s\n", c->by_name.items[i].count, c->by_name.items[i].name);
    fprintf(text_out, "frames     streams %" PRIu64 ", schemas %" PRIu64 ", timestamp resets %" PRIu64
           ", string pools %" PRIu64 ", stack pools %" PRIu64 ", annotations %" PRIu64 "\n",
           t.streams, t.schema_frames, t.timestamp_resets, t.string_pool_frames,
           t.stack_pool_frames, t.annotation_frames);
    if (c->have_ts)
        fprintf(text_out, "time       first %" PRIu64 " ns, last %" PRIu64 " ns, span %" PRIu64 " ns (%.3f s)\n",
               c->first_ts, c->last_ts, c->last_ts - c->first_ts,
               (double)(c->last_ts - c->first_ts) / 1e9);
    else
        fprintf(text_out, "time       no timestamped events\n");
    if (t.implausible_times)
        fprintf(text_out, "warning    %" PRIu64 " implausible timestamp(s), more than %llu h outside their file's"
               " clock sync range: left out of the time range (see files above)\n",
               t.implausible_times, (unsigned long long)(D9_DEC_TIME_SLACK_NS / 3600000000000ull));
    uint64_t *w = d9_u64_set_sorted(&c->workers);
    fprintf(text_out, "workers    %zu", d9_u64_set_count(&c->workers));
    for (size_t i = 0; w && i < d9_u64_set_count(&c->workers); i++) fprintf(text_out, "%s%" PRIu64, i ? " " : ": ", w[i]);
    putc('\n', text_out);
    free(w);
    for (size_t i = 0; i < c->runtimes_n; i++) {
        uint64_t *ids = d9_u64_set_sorted(&c->runtimes[i].ids);
        fprintf(text_out, "%s%s:", i ? "; " : "runtimes   ", c->runtimes[i].name);
        for (size_t k = 0; ids && k < d9_u64_set_count(&c->runtimes[i].ids); k++)
            fprintf(text_out, "%s%" PRIu64, k ? "," : " ", ids[k]);
        free(ids);
        if (i + 1 == c->runtimes_n) putc('\n', text_out);
    }
    uint64_t *tids = d9_u64_set_sorted(&c->tids);
    fprintf(text_out, "threads    %zu", d9_u64_set_count(&c->tids));
    if (d9_u64_set_count(&c->tids) <= 32)
        for (size_t i = 0; tids && i < d9_u64_set_count(&c->tids); i++) fprintf(text_out, "%s%" PRIu64, i ? " " : ": ", tids[i]);
    putc('\n', text_out);
    free(tids);
    if (c->drops_total == 0 && c->drops.n == 0) {
        fprintf(text_out, "drops      none\n");
    } else {
        fprintf(text_out, "drops      %" PRIu64 "\n", c->drops_total);
        for (size_t i = 0; i < c->drops.n; i++)
            fprintf(text_out, "  %10" PRIu64 "  %s\n", c->drops.items[i].count, c->drops.items[i].name);
    }
    uint64_t stacks = c->by_method[0] + c->by_method[1] + c->by_method[2] + c->by_method[3];
    if (stacks) {
        fprintf(text_out, "stacks     %" PRIu64 " (samples and task dumps):", stacks);
        static const char *const names[D9_ORIGIN_METHODS] = {"origin not recorded", "frame pointers only", "with CFI unwinding",
                                             "truncated"};
        for (int i = 1; i < 4; i++)
            fprintf(text_out, "%s %.1f %% %s", i > 1 ? "," : "", 100.0 * (double)c->by_method[i] / (double)stacks, names[i]);
        if (c->by_method[0]) fprintf(text_out, ", %.1f %% %s", 100.0 * (double)c->by_method[0] / (double)stacks, names[0]);
        putc('\n', text_out);
        print_truncated_ends_text(c);
    }
    print_coverage_text(c);
    d9a_upload_loss_run lost;
    if (d9a_upload_loss_total(&c->upload_loss, &lost)) {
        char what[256];
        d9a_upload_loss_describe(&lost, what, sizeof what);
        fprintf(text_out, "lost       %s (disk budget, UploadLossEvent)\n", what);
    }
    if (t.unresolved_refs || t.undefined_pool_ids)
        fprintf(text_out, "pool refs  %" PRIu64 " unresolved when read, %" PRIu64 " ids never defined\n",
               t.unresolved_refs, t.undefined_pool_ids);
    if (c->have_meta) {
        fprintf(text_out, "metadata   (%s)\n", c->meta_path);
        for (size_t i = 0; i < c->meta_n; i++)
            fprintf(text_out, "  %s = %s\n", c->meta[2 * i] ? c->meta[2 * i] : "",
                   c->meta[2 * i + 1] ? c->meta[2 * i + 1] : "");
    } else {
        fprintf(text_out, "metadata   none\n");
    }
    size_t changed = 0;
    for (size_t i = 0; i < c->last_n; i++) changed += changed_later(&c->last[i]);
    if (!changed) return;
    fprintf(text_out, "metadata   changed later: %zu (each key's last value, and the file that said it)\n", changed);
    for (size_t i = 0; i < c->last_n; i++)
        if (changed_later(&c->last[i]))
            fprintf(text_out, "  %s = %s  (%s)\n", c->last[i].key, c->last[i].value ? c->last[i].value : "",
                    c->last[i].path);
}

static void print_json(stats_ctx *c, const d9_file_result *r, size_t nfiles) {
    d9_dec_stats t;
    sum_stats(r, nfiles, &t);
    d9_json j;
    d9_json_init(&j, stdout, true);
    d9_json_object_begin(&j);
    d9_json_key(&j, "events");
    d9_json_u64(&j, c->events);
    d9_json_key(&j, "by_name");
    d9_json_object_begin(&j);
    for (size_t i = 0; i < c->by_name.n; i++) {
        d9_json_key(&j, c->by_name.items[i].name);
        d9_json_u64(&j, c->by_name.items[i].count);
    }
    d9_json_object_end(&j);
    d9_json_key(&j, "frames");
    d9_json_object_begin(&j);
    d9_json_key(&j, "streams"); d9_json_u64(&j, t.streams);
    d9_json_key(&j, "schemas"); d9_json_u64(&j, t.schema_frames);
    d9_json_key(&j, "timestamp_resets"); d9_json_u64(&j, t.timestamp_resets);
    d9_json_key(&j, "string_pools"); d9_json_u64(&j, t.string_pool_frames);
    d9_json_key(&j, "stack_pools"); d9_json_u64(&j, t.stack_pool_frames);
    d9_json_key(&j, "annotations"); d9_json_u64(&j, t.annotation_frames);
    d9_json_object_end(&j);
    d9_json_key(&j, "time");
    if (c->have_ts) {
        d9_json_object_begin(&j);
        d9_json_key(&j, "first_ns"); d9_json_u64(&j, c->first_ts);
        d9_json_key(&j, "last_ns"); d9_json_u64(&j, c->last_ts);
        d9_json_key(&j, "span_ns"); d9_json_u64(&j, c->last_ts - c->first_ts);
        d9_json_object_end(&j);
    } else {
        d9_json_null(&j);
    }
    d9_json_key(&j, "implausible_timestamps"); d9_json_u64(&j, t.implausible_times);
    uint64_t *w = d9_u64_set_sorted(&c->workers);
    d9_json_key(&j, "workers");
    d9_json_array_begin(&j);
    for (size_t i = 0; w && i < d9_u64_set_count(&c->workers); i++) d9_json_u64(&j, w[i]);
    d9_json_array_end(&j);
    free(w);
    d9_json_key(&j, "runtimes");
    d9_json_object_begin(&j);
    for (size_t i = 0; i < c->runtimes_n; i++) {
        uint64_t *ids = d9_u64_set_sorted(&c->runtimes[i].ids);
        d9_json_key(&j, c->runtimes[i].name);
        d9_json_array_begin(&j);
        for (size_t k = 0; ids && k < d9_u64_set_count(&c->runtimes[i].ids); k++)
            d9_json_u64(&j, ids[k]);
        d9_json_array_end(&j);
        free(ids);
    }
    d9_json_object_end(&j);
    uint64_t *tids = d9_u64_set_sorted(&c->tids);
    d9_json_key(&j, "threads");
    d9_json_object_begin(&j);
    d9_json_key(&j, "count"); d9_json_u64(&j, d9_u64_set_count(&c->tids));
    d9_json_key(&j, "tids");
    d9_json_array_begin(&j);
    for (size_t i = 0; tids && i < d9_u64_set_count(&c->tids); i++) d9_json_u64(&j, tids[i]);
    d9_json_array_end(&j);
    d9_json_object_end(&j);
    free(tids);
    d9_json_key(&j, "drops");
    d9_json_object_begin(&j);
    d9_json_key(&j, "total"); d9_json_u64(&j, c->drops_total);
    d9_json_key(&j, "by_reason");
    d9_json_object_begin(&j);
    for (size_t i = 0; i < c->drops.n; i++) {
        d9_json_key(&j, c->drops.items[i].name);
        d9_json_u64(&j, c->drops.items[i].count);
    }
    d9_json_object_end(&j);
    d9_json_object_end(&j);
    d9_json_key(&j, "stack_origin"); /* events with a callchain, by how their stack was obtained */
    d9_json_object_begin(&j);
    d9_json_key(&j, "unrecorded"); d9_json_u64(&j, c->by_method[D9_ORIGIN_UNRECORDED]);
    d9_json_key(&j, "frame_pointers"); d9_json_u64(&j, c->by_method[D9_ORIGIN_FRAME_POINTERS]);
    d9_json_key(&j, "cfi"); d9_json_u64(&j, c->by_method[D9_ORIGIN_CFI]);
    d9_json_key(&j, "truncated"); d9_json_u64(&j, c->by_method[D9_ORIGIN_TRUNCATED]);
    d9_json_key(&j, "truncated_ends"); /* where they end, most stacks first */
    d9_json_array_begin(&j);
    d9_truncated_end top[TRUNCATED_ENDS_SHOWN];
    size_t n_top = 0;
    uint64_t rest = 0;
    if (c->truncated.stacks && d9_truncated_ends_top(&c->truncated, top, TRUNCATED_ENDS_SHOWN, &n_top, &rest) != 0)
        c->oom = true;
    for (size_t i = 0; i < n_top; i++) {
        d9_json_object_begin(&j);
        d9_json_key(&j, "where"); d9_json_string(&j, top[i].where);
        d9_json_key(&j, "stacks"); d9_json_u64(&j, top[i].stacks);
        d9_json_object_end(&j);
    }
    d9_json_array_end(&j);
    d9_json_key(&j, "truncated_elsewhere"); d9_json_u64(&j, rest);
    d9_json_object_end(&j);
    print_coverage_json(c, &j);
    d9a_upload_loss_run lost;
    if (d9a_upload_loss_total(&c->upload_loss, &lost)) { /* only when there is one */
        d9_json_key(&j, "upload_loss");
        d9_json_object_begin(&j);
        d9_json_key(&j, "segments"); d9_json_u64(&j, lost.segments);
        d9_json_key(&j, "bytes"); d9_json_u64(&j, lost.bytes);
        d9_json_key(&j, "first_start_unix_ns"); d9_json_u64(&j, lost.first_start_unix_ns);
        d9_json_key(&j, "last_end_unix_ns"); d9_json_u64(&j, lost.last_end_unix_ns);
        d9_json_key(&j, "runs"); d9_json_u64(&j, c->upload_loss.n);
        d9_json_object_end(&j);
    }
    d9_json_key(&j, "pool_refs");
    d9_json_object_begin(&j);
    d9_json_key(&j, "unresolved_when_read"); d9_json_u64(&j, t.unresolved_refs);
    d9_json_key(&j, "never_defined"); d9_json_u64(&j, t.undefined_pool_ids);
    d9_json_object_end(&j);
    d9_json_key(&j, "metadata");
    if (c->have_meta) {
        d9_json_object_begin(&j);
        for (size_t i = 0; i < c->meta_n; i++) {
            d9_json_key(&j, c->meta[2 * i] ? c->meta[2 * i] : "");
            d9_json_string(&j, c->meta[2 * i + 1] ? c->meta[2 * i + 1] : "");
        }
        d9_json_object_end(&j);
    } else {
        d9_json_null(&j);
    }
    d9_json_key(&j, "metadata_last"); /* every key's last value, over every SegmentMetadataEvent */
    if (c->last_n) {
        d9_json_object_begin(&j);
        for (size_t i = 0; i < c->last_n; i++) {
            d9_json_key(&j, c->last[i].key);
            d9_json_string(&j, c->last[i].value ? c->last[i].value : "");
        }
        d9_json_object_end(&j);
    } else {
        d9_json_null(&j);
    }
    d9_json_key(&j, "metadata_changed"); /* the keys whose last value is not the first metadata's */
    d9_json_array_begin(&j);
    for (size_t i = 0; i < c->last_n; i++) {
        if (!changed_later(&c->last[i])) continue;
        const char *first = c->last[i].first;
        d9_json_object_begin(&j);
        d9_json_key(&j, "key"); d9_json_string(&j, c->last[i].key);
        d9_json_key(&j, "first");
        if (first) d9_json_string(&j, first);
        else d9_json_null(&j);
        d9_json_key(&j, "last"); d9_json_string(&j, c->last[i].value ? c->last[i].value : "");
        d9_json_key(&j, "path"); d9_json_string(&j, c->last[i].path);
        d9_json_object_end(&j);
    }
    d9_json_array_end(&j);
    d9_json_key(&j, "bytes"); d9_json_u64(&j, t.bytes);
    d9_json_key(&j, "input_bytes"); d9_json_u64(&j, t.input_bytes);
    d9_json_key(&j, "files");
    d9_json_array_begin(&j);
    for (size_t i = 0; i < nfiles; i++) {
        d9_json_object_begin(&j);
        d9_json_key(&j, "path"); d9_json_string(&j, r[i].path);
        d9_json_key(&j, "status"); d9_json_string(&j, d9_file_status_name(&r[i]));
        d9_json_key(&j, "message"); d9_json_string(&j, r[i].message);
        d9_json_key(&j, "gzip"); d9_json_bool(&j, r[i].stats.gzip);
        d9_json_key(&j, "events"); d9_json_u64(&j, r[i].stats.events);
        d9_json_key(&j, "streams"); d9_json_u64(&j, r[i].stats.streams);
        d9_json_key(&j, "implausible_timestamps"); d9_json_u64(&j, r[i].stats.implausible_times);
        d9_json_key(&j, "bytes"); d9_json_u64(&j, r[i].stats.bytes);
        d9_json_key(&j, "input_bytes"); d9_json_u64(&j, r[i].stats.input_bytes);
        d9_json_object_end(&j);
    }
    d9_json_array_end(&j);
    d9_json_object_end(&j);
}

int d9_cmd_stats(int argc, char **argv) {
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {0, 0, 0, 0},
    };
    bool json = false;
    optind = 1;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (ch) {
        case 'j': json = true; break;
        case 'h': stats_usage(stdout); return D9_EXIT_OK;
        default:
            fprintf(stderr, "dial9 stats: unknown option '%s'\n", argv[optind - 1]);
            stats_usage(stderr);
            return D9_EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "dial9 stats: no PATH given\n");
        stats_usage(stderr);
        return D9_EXIT_USAGE;
    }
    d9_path_list paths = {0};
    char err[512];
    d9_name_crash_dumps("stats", argc - optind, argv + optind, stderr); /* a crash dump: named first */
    if (d9_expand_paths(argc - optind, argv + optind, &paths, err, sizeof err) != 0) {
        fprintf(stderr, "dial9 stats: %s\n", err);
        d9_path_list_free(&paths);
        return D9_EXIT_DATA;
    }
    d9_file_result *results = calloc(paths.count, sizeof *results);
    stats_ctx c = {0};
    if (!results) {
        fprintf(stderr, "dial9 stats: out of memory\n");
        d9_path_list_free(&paths);
        return D9_EXIT_DATA;
    }
    c.paths = &paths;
    d9_truncated_ends_init(&c.truncated);
    int rc = d9_read_trace_files(&paths, on_event, &c, results);
    free(c.counter_of);
    if (c.oom) {
        fprintf(stderr, "dial9 stats: out of memory\n");
        rc = D9_EXIT_DATA;
    }
    if (c.by_name.n > 1) qsort(c.by_name.items, c.by_name.n, sizeof *c.by_name.items, cmp_count_desc);
    if (c.drops.n > 1) qsort(c.drops.items, c.drops.n, sizeof *c.drops.items, cmp_count_desc);
    /* a flight recorder's dump: its manifest first, or that it is incomplete */
    (void)d9_print_dump_manifests(json ? NULL : stdout, stderr, argc - optind, argv + optind);
    if (json) print_json(&c, results, paths.count);
    else {
        FILE *safe = d9_escaping_stream(stdout);
        text_out = safe ? safe : stdout;
        print_text(&c, results, paths.count);
        if (safe) fclose(safe);
    }
    fflush(stdout);
    d9_report_skipped_dirs(stderr, "stats", &paths);
    d9_report_file_problems(stderr, "stats", results, paths.count, true);

    named_free(&c.by_name);
    named_free(&c.drops);
    d9_u64_set_free(&c.workers);
    d9_u64_set_free(&c.tids);
    for (size_t i = 0; i < c.runtimes_n; i++) {
        free(c.runtimes[i].name);
        d9_u64_set_free(&c.runtimes[i].ids);
    }
    free(c.runtimes);
    d9a_coverage_free(&c.coverage);
    d9_truncated_ends_free(&c.truncated);
    d9a_upload_loss_free(&c.upload_loss);
    for (size_t i = 0; c.meta && i < 2 * c.meta_n; i++) free(c.meta[i]);
    free(c.meta);
    d9_u64_map_free(&c.last_by_hash);
    for (size_t i = 0; i < c.last_n; i++) {
        free(c.last[i].key);
        free(c.last[i].value);
    }
    free(c.last);
    free(c.method_of);
    free(results);
    d9_path_list_free(&paths);
    return rc;
}
