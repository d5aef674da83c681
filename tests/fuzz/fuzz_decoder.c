/* libFuzzer target for the trace decoder: arbitrary bytes through the in-place memory input
 * (zstd frames too: the corpus has a .bin.zst seed, whose mutations reach the zstd input),
 * through a FILE* read in tiny chunks (the refill and buffer-growth paths), and gzip- and
 * zstd-compressed through the decompressing inputs. Every decoded value is read in full so that the sanitizers see
 * any pointer the decoder hands out that does not point to valid memory. The in-memory input is
 * read once more with d9_dec_next_run's runs between the d9_dec_next calls (as dial9 fold
 * reads): the same events, values and end. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "format/decoder.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t touch_value(const d9_value *v, int depth) {
    uint64_t h = v->type + v->present + v->resolved + v->pool_id;
    if (!v->present) return h;
    switch (v->type) {
    case D9_FT_STRING: case D9_FT_BYTES: case D9_FT_POOLED_STRING:
        for (uint32_t i = 0; i < v->str.len; i++) h = h * 31 + (uint8_t)v->str.ptr[i];
        break;
    case D9_FT_STACK: case D9_FT_POOLED_STACK:
        for (uint32_t i = 0; i < v->stack.count; i++) h = h * 31 + v->stack.addrs[i];
        break;
    case D9_FT_STRING_MAP:
        for (uint32_t i = 0; i < v->map.count; i++) {
            const d9_dec_kv *kv = &v->map.items[i];
            for (uint32_t k = 0; k < kv->key.len; k++) h = h * 31 + (uint8_t)kv->key.ptr[k];
            for (uint32_t k = 0; k < kv->value.len; k++) h = h * 31 + (uint8_t)kv->value.ptr[k];
        }
        break;
    case D9_FT_DYN_LIST:
        for (uint32_t i = 0; i < v->list.count; i++) h += touch_value(&v->list.items[i], depth + 1);
        break;
    case D9_FT_DYN_MAP:
        for (uint32_t i = 0; i < 2 * v->list.count; i++) h += touch_value(&v->list.items[i], depth + 1);
        break;
    default:
        h += v->u;
    }
    return h;
}

static volatile uint64_t sink;

/* How a decoding ended: the same bytes read from memory and streamed in chunks end the same
 * way (damage skipped to the same stream headers, the same events). */
typedef struct outcome {
    bool ran, compressed;
    d9_dec_status status;
    uint64_t events, damaged_regions, damaged_bytes, stop, hash;
} outcome;

/* The next event: by d9_dec_next, or from a run of at most max_run events (0: no runs). */
typedef struct reader {
    uint32_t max_run, max_values, n, at;
    d9_event run[16];
    d9_value vals[256];
} reader;

static int next(d9_decoder *d, reader *r, d9_event *ev) {
    if (r->at == r->n && r->max_run) {
        int n = d9_dec_next_run(d, r->run, r->max_run, r->vals, r->max_values);
        r->n = n > 0 ? (uint32_t)n : 0;
        r->at = 0;
    }
    if (r->at < r->n) {
        *ev = r->run[r->at++];
        return 1;
    }
    return d9_dec_next(d, ev);
}

static outcome run_with(d9_decoder *d, uint32_t max_run, uint32_t max_values) {
    outcome o = {0};
    if (!d) return o;
    d9_event ev;
    uint64_t h = 0;
    static reader r;
    r.max_run = max_run;
    r.max_values = max_values;
    r.n = r.at = 0;
    while (next(d, &r, &ev) > 0) {
        h += ev.offset * 3 + ev.stream * 5 + ev.type_id * 7 + ev.implausible_ts;
        const d9_dec_schema *s = ev.schema;
        h += ev.ts_ns + s->index + s->name_len + (uint8_t)s->name[0];
        for (uint32_t i = 0; i < s->field_count; i++) {
            h += s->fields[i].name_len + (uint8_t)s->fields[i].name[0];
            for (uint32_t a = 0; a < s->fields[i].annotation_count; a++)
                h += strlen(s->fields[i].annotations[a].key) + s->fields[i].annotations[a].value_len;
            h += touch_value(&ev.values[i], 0);
            const d9_value *v = &ev.values[i];
            if (v->present && !v->resolved) { /* lazy lookups of ids not defined (yet) */
                d9_dec_str str;
                const uint64_t *addrs;
                uint32_t n;
                h += d9_dec_pool_string(d, v->pool_id, &str);
                h += d9_dec_pool_stack(d, v->pool_id, &addrs, &n);
            }
        }
        if (s->field_count) h += d9_schema_annotation(s, 0, "metrique.unit") != NULL;
        if (s->field_count) h += d9_event_field(&ev, s->fields[0].name) != NULL;
    }
    /* it has to have stopped for a reason */
    d9_dec_status st = d9_dec_state(d);
    if (st == D9_DEC_RUNNING) __builtin_trap();
    if (st != D9_DEC_END && d9_dec_message(d)[0] == '\0') __builtin_trap();
    const d9_dec_stats *ds = d9_dec_get_stats(d);
    if (st == D9_DEC_DAMAGED && ds->damaged_regions == 0) __builtin_trap();
    /* after damage, only an error (an I/O one: a damaged gzip member) may end it otherwise */
    if ((st == D9_DEC_END || st == D9_DEC_TRUNCATED) && ds->damaged_regions != 0) __builtin_trap();
    h += ds->events + d9_dec_stop_offset(d);
    for (uint32_t i = 0; i < d9_dec_schema_count(d); i++) h += d9_dec_schema_at(d, i)->field_count;
    sink = h;
    o = (outcome){true, ds->gzip || ds->zstd, st, ds->events, ds->damaged_regions, ds->damaged_bytes, d9_dec_stop_offset(d), h};
    d9_dec_close(d);
    return o;
}

static outcome run(d9_decoder *d) { return run_with(d, 0, 0); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* small limits so that absurd lengths hit them quickly */
    d9_dec_options opt;
    d9_dec_options_init(&opt);
    opt.max_frame_bytes = 1 << 20;
    opt.max_pool_bytes = 8 << 20;
    opt.max_schema_bytes = 4 << 20;
    outcome in_memory = run(d9_dec_open_mem(data, size, &opt, NULL, 0));
    uint32_t max_run = size ? 1 + data[size - 1] % 16 : 1;
    outcome in_runs = run_with(d9_dec_open_mem(data, size, &opt, NULL, 0), max_run, 4 + 16 * max_run);
    if (in_memory.ran != in_runs.ran || in_memory.status != in_runs.status || in_memory.events != in_runs.events ||
        in_memory.damaged_regions != in_runs.damaged_regions || in_memory.damaged_bytes != in_runs.damaged_bytes ||
        in_memory.stop != in_runs.stop || in_memory.hash != in_runs.hash)
        __builtin_trap();

    FILE *f = fmemopen((void *)data, size, "rb");
    if (f) {
        opt.chunk_bytes = size ? 1 + data[0] % 64 : 1;
        outcome streamed = run(d9_dec_open_file(f, &opt, NULL, 0));
        fclose(f);
        /* frames over max_frame_bytes are damage only when streamed: inputs here are smaller;
         * compressed data cut short yields what its decompressor gives for the reads made */
        if (in_memory.ran && streamed.ran && size < opt.max_frame_bytes && !in_memory.compressed &&
            (in_memory.status != streamed.status || in_memory.events != streamed.events ||
             in_memory.damaged_regions != streamed.damaged_regions ||
             in_memory.damaged_bytes != streamed.damaged_bytes || in_memory.stop != streamed.stop))
            __builtin_trap();
    }

    /* the gzip path, with the input as the compressed content */
    static uint8_t gz[1 << 18];
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (size < sizeof gz / 2 && deflateInit2(&zs, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK) {
        zs.next_in = (Bytef *)data;
        zs.avail_in = (uInt)size;
        zs.next_out = gz;
        zs.avail_out = sizeof gz;
        int r = deflate(&zs, Z_FINISH);
        size_t n = zs.total_out;
        deflateEnd(&zs);
        if (r == Z_STREAM_END) {
            opt.chunk_bytes = 4096;
            run(d9_dec_open_mem(gz, n, &opt, NULL, 0));
        }
    }
    /* the zstd path, the same way (a frame with its checksum, as the recorder writes) */
    static ZSTD_CCtx *cctx;
    if (!cctx && (cctx = ZSTD_createCCtx())) ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
    if (cctx && size < sizeof gz / 2) {
        size_t n = ZSTD_compress2(cctx, gz, sizeof gz, data, size);
        if (!ZSTD_isError(n)) {
            opt.chunk_bytes = 4096;
            run(d9_dec_open_mem(gz, n, &opt, NULL, 0));
        }
    }
    return 0;
}
