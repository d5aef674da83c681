/* d9_bench_strip_spans IN.bin OUT.bin: the same trace without its span marks, for measuring what
 * spans add to `dial9 analyze` on a recorded trace (bench/analyze_spans/run_trace.sh). Each
 * SpanEnterEvent / SpanExitEvent frame is dropped. The next event's delta was written against
 * the mark's time: when that event follows the mark directly, has a time, and the base before
 * the mark was the previous event's time (no reset or header between), its delta is rewritten
 * against that time (when it fits in 24 bits), as a trace without marks has it; otherwise a
 * timestamp reset frame (0x05) to the mark's time takes the mark's place. A reset would end the
 * decoder's runs of events (d9_dec_next_run) where the trace without marks has none. Every
 * event keeps its timestamp, and every other byte is unchanged. Uncompressed files only (a
 * frame's offset is a file offset); fails on a field type it cannot step over, on a mark
 * shorter than the reset frame. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/decoder.h"
#include "format/schemas.h"

#define RESET_BYTES 9 /* tag 0x05, u64 timestamp */

static size_t varint_len(const unsigned char *p, size_t left) {
    for (size_t i = 0; i < left && i < 10; i++)
        if (!(p[i] & 0x80)) return i + 1;
    return 0;
}

/* Bytes of the event frame at p (tag, type id, u24 delta, its fields); 0 when unknown. */
static size_t frame_len(const d9_dec_schema *s, const unsigned char *p, size_t left) {
    size_t n = 1 + 2 + (s->has_timestamp ? 3 : 0);
    for (uint16_t i = 0; i < s->field_count; i++) {
        if (n >= left) return 0;
        if (s->fields[i].optional && p[n++] == 0) continue; /* the presence byte: absent */
        size_t w;
        switch (s->fields[i].type) {
        case D9_FT_VARINT: w = varint_len(p + n, left - n); break;
        case D9_FT_BOOL: case D9_FT_U8: w = 1; break;
        case D9_FT_U16: w = 2; break;
        case D9_FT_U32: case D9_FT_POOLED_STRING: case D9_FT_POOLED_STACK: w = 4; break;
        case D9_FT_I64: case D9_FT_F64: w = 8; break;
        default: return 0;
        }
        if (w == 0) return 0;
        n += w;
    }
    return n <= left ? n : 0;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: d9_bench_strip_spans IN.bin OUT.bin\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f || fseek(f, 0, SEEK_END) != 0) {
        perror(argv[1]);
        return 1;
    }
    long size = ftell(f);
    unsigned char *data = size > 0 ? malloc((size_t)size) : NULL;
    if (!data || fseek(f, 0, SEEK_SET) != 0 || fread(data, 1, (size_t)size, f) != (size_t)size) {
        fprintf(stderr, "d9_bench_strip_spans: cannot read %s\n", argv[1]);
        return 1;
    }
    fclose(f);
    if (data[0] == 0x1f || data[0] == 0x28) {
        fprintf(stderr, "d9_bench_strip_spans: %s is compressed: give the .bin\n", argv[1]);
        return 1;
    }
    FILE *out = fopen(argv[2], "wb");
    if (!out) {
        perror(argv[2]);
        return 1;
    }
    char err[256];
    d9_decoder *d = d9_dec_open_plain_mem(data, (size_t)size, NULL, err, sizeof err);
    if (!d) {
        fprintf(stderr, "d9_bench_strip_spans: %s: %s\n", argv[1], err);
        return 1;
    }
    d9_event ev;
    size_t copied = 0, marks = 0, resets = 0;
    int rc = 0;
    /* a mark dropped whose time the next event's delta still counts from; the base before it */
    bool pending = false;
    uint64_t pending_ts = 0, pending_resets = 0, base_ts = 0, base_resets = 0;
    uint32_t pending_stream = 0, base_stream = UINT32_MAX;
    while (d9_dec_next(d, &ev) > 0) {
        int role = ev.schema->bind.role;
        bool mark = role == D9_SCH_SPAN_ENTER || role == D9_SCH_SPAN_EXIT;
        uint64_t now_resets = d9_dec_get_stats(d)->timestamp_resets;
        if (pending) {
            uint64_t delta = ev.ts_ns - base_ts;
            bool fold = !mark && ev.offset == copied && ev.schema->has_timestamp && ev.stream == base_stream &&
                        now_resets == base_resets && ev.ts_ns >= base_ts && delta < (1u << 24);
            unsigned char head[RESET_BYTES] = {0x05};
            size_t head_len = RESET_BYTES;
            if (fold) { /* tag, type id as they are, the delta from the time before the mark */
                memcpy(head, data + ev.offset, 3);
                for (int i = 0; i < 3; i++) head[3 + i] = (unsigned char)(delta >> (8 * i));
                head_len = 6;
            } else {
                for (int i = 0; i < 8; i++) head[1 + i] = (unsigned char)(pending_ts >> (8 * i));
                resets++;
                base_ts = pending_ts; /* the reset's time is the base now */
                base_stream = pending_stream;
                base_resets = pending_resets;
            }
            /* a reset goes where the mark was: before any frame between it and this event */
            if (fwrite(head, 1, head_len, out) != head_len) {
                rc = 1;
                break;
            }
            if (fold) copied += 6;
            pending = false;
        }
        if (!mark) {
            if (ev.schema->has_timestamp) {
                base_ts = ev.ts_ns;
                base_stream = ev.stream;
                base_resets = now_resets;
            }
            continue;
        }
        size_t len = frame_len(ev.schema, data + ev.offset, (size_t)size - ev.offset);
        if (len < RESET_BYTES) {
            fprintf(stderr, "d9_bench_strip_spans: the mark at offset %llu: %s\n",
                    (unsigned long long)ev.offset, len ? "shorter than a reset frame" : "a field type not handled");
            rc = 1;
            break;
        }
        if (fwrite(data + copied, 1, ev.offset - copied, out) != ev.offset - copied) {
            rc = 1;
            break;
        }
        copied = ev.offset + len;
        pending = true;
        pending_ts = ev.ts_ns;
        pending_stream = ev.stream;
        pending_resets = now_resets;
        marks++;
    }
    if (rc == 0 && d9_dec_state(d) != D9_DEC_END) {
        fprintf(stderr, "d9_bench_strip_spans: %s: %s\n", argv[1], d9_dec_message(d));
        rc = 1;
    }
    if (rc == 0 && pending) { /* the last mark: nothing after it counts from its time */
        unsigned char reset[RESET_BYTES] = {0x05};
        for (int i = 0; i < 8; i++) reset[1 + i] = (unsigned char)(pending_ts >> (8 * i));
        if (fwrite(reset, 1, sizeof reset, out) != sizeof reset) rc = 1;
        resets++;
    }
    if (rc == 0 && fwrite(data + copied, 1, (size_t)size - copied, out) != (size_t)size - copied) rc = 1;
    if (fclose(out) != 0) rc = 1;
    d9_dec_close(d);
    free(data);
    if (rc == 0) fprintf(stderr, "%s: %zu span marks dropped, %zu of them replaced by a timestamp reset\n", argv[2], marks, resets);
    return rc;
}
