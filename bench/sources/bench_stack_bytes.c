/* d9_bench_stack_bytes: bytes on disk per stack sample of a recorded trace (docs/kernel-sources.md,
 * "Costs"), split by kind (CPU profile samples, context-switch stacks, task dumps) and into the
 * event itself and what it brought along: the stack pool entries and StackOriginEvents written the
 * first time a stack appears in a stream.
 *
 *   d9_bench_stack_bytes RUN_DIR|FILE...
 *
 * Attribution is exact: the decoder gives each event's offset; the event's own size follows from
 * its schema and values, so the bytes between one event's end and the next event's start (pools,
 * timestamp resets, origin events, schemas) belong to the next event. The per-file sums are
 * checked against the file sizes. Also what gzip (DIAL9_COMPRESS=gzip) keeps on disk per sample: the
 * files are compressed whole and again without each kind's byte ranges (not a valid trace then,
 * only a measure of the kind's share of the compressed size). Prints numbers; never a pass/fail
 * test. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format/decoder.h"
#include "format/wire.h"
#include "trace_files_util.h"

enum { K_CPU, K_SWITCH, K_DUMP, K_OTHER, K_COUNT };
static const char *const kind_names[K_COUNT] = {"CPU profile samples", "context-switch stacks", "task dumps",
                                                "other events"};

typedef struct kind_bytes {
    uint64_t events, own, brought; /* count, bytes of the events, bytes written just before them */
    uint64_t frames;               /* frames of their stacks */
} kind_bytes;

typedef struct range {
    uint64_t from, to;
} range;

typedef struct tally {
    kind_bytes k[K_COUNT];
    range *ranges[K_COUNT]; /* this file's byte ranges of each kind (event and what it brought) */
    size_t nranges[K_COUNT], cap[K_COUNT];
    uint64_t gz_without[K_COUNT];
    uint64_t pending;       /* bytes since the last event's end not yet given to an event */
    uint64_t last_end;      /* offset where the previous event ended */
    uint64_t pending_start; /* where the pending bytes start in this file */
    uint64_t file_bytes, attributed;
} tally;

static unsigned varint_len(uint64_t v) {
    unsigned n = 1;
    while (v >= 0x80) v >>= 7, n++;
    return n;
}

/* The wire size of one decoded value of base type `type`. */
static uint64_t value_size(uint8_t type, const d9_value *v) {
    switch (type) {
    case D9_FT_I64: case D9_FT_F64: return 8;
    case D9_FT_BOOL: case D9_FT_U8: return 1;
    case D9_FT_U16: return 2;
    case D9_FT_U32: case D9_FT_POOLED_STACK: case D9_FT_POOLED_STRING: return 4;
    case D9_FT_STRING: case D9_FT_BYTES: return 4 + (uint64_t)v->str.len;
    case D9_FT_STACK: return 4 + 8 * (uint64_t)v->stack.count;
    case D9_FT_VARINT: return varint_len(v->u);
    case D9_FT_STRING_MAP: {
        uint64_t n = 4;
        for (uint32_t i = 0; i < v->map.count; i++) n += 8 + v->map.items[i].key.len + v->map.items[i].value.len;
        return n;
    }
    default: return 0; /* dynamic lists: not written by this recorder; counted as "brought" */
    }
}

static uint64_t event_size(const d9_event *ev) {
    const d9_dec_schema *s = ev->schema;
    uint64_t n = 1 + 2 + (s->has_timestamp ? 3 : 0);
    for (uint16_t i = 0; i < s->field_count; i++) {
        const d9_value *v = &ev->values[i];
        if (s->fields[i].optional) n += 1;
        if (v->present) n += value_size(s->fields[i].type, v);
    }
    return n;
}

static void on_event(const d9_event *ev, void *ctx) {
    tally *t = ctx;
    uint64_t size = event_size(ev);
    t->pending += ev->offset - t->last_end;
    t->last_end = ev->offset + size;
    const char *name = ev->schema->name;
    if (!strcmp(name, "StackOriginEvent")) { /* written for the sample that follows it */
        t->pending += size;
        return;
    }
    int k = K_OTHER;
    const d9_value *chain = NULL;
    if (!strcmp(name, "CpuSampleEvent")) {
        k = d9t_field_u(ev, "source") == 1 ? K_SWITCH : K_CPU;
        chain = d9_event_field(ev, "callchain");
    } else if (!strcmp(name, "TaskDumpEvent")) {
        k = K_DUMP;
        chain = d9_event_field(ev, "callchain");
    }
    if (t->nranges[k] == t->cap[k]) {
        t->cap[k] = t->cap[k] ? t->cap[k] * 2 : 1024;
        t->ranges[k] = realloc(t->ranges[k], t->cap[k] * sizeof *t->ranges[k]);
        if (!t->ranges[k]) exit(1);
    }
    t->ranges[k][t->nranges[k]++] = (range){ev->offset - t->pending, ev->offset + size};
    kind_bytes *b = &t->k[k];
    b->events++;
    b->own += size;
    b->brought += t->pending;
    if (chain && chain->present) b->frames += chain->stack.count;
    t->attributed += size + t->pending;
    t->pending = 0;
}

static uint64_t file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

static uint64_t gzip_size(const char *path) {
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "gzip -c -6 < '%s' | wc -c", path);
    FILE *p = popen(cmd, "r");
    unsigned long long n = 0;
    if (p && fscanf(p, "%llu", &n) != 1) n = 0;
    if (p) pclose(p);
    return n;
}

/* The gzip size of `path` without the ranges `r` (sorted, disjoint). */
static uint64_t gzip_without(const char *path, const range *r, size_t n) {
    FILE *in = fopen(path, "rb");
    char tmp[] = "/tmp/d9-stack-bytes-XXXXXX";
    int fd = mkstemp(tmp);
    FILE *out = fd >= 0 ? fdopen(fd, "wb") : NULL;
    uint64_t pos = 0, size = 0;
    if (in && out) {
        static char buf[1 << 16];
        size_t got;
        while ((got = fread(buf, 1, sizeof buf, in)) > 0) {
            for (size_t i = 0; i < got; i++, pos++) {
                while (n && r->to <= pos) r++, n--;
                if (!n || pos < r->from) fputc(buf[i], out);
            }
        }
    }
    if (in) fclose(in);
    if (out) fclose(out);
    if (fd >= 0) {
        size = gzip_size(tmp);
        unlink(tmp);
    }
    return size;
}

static void tally_file(tally *t, const char *path, uint64_t *gz) {
    t->last_end = 0;
    t->pending = 0;
    for (int k = 0; k < K_COUNT; k++) t->nranges[k] = 0;
    d9t_decode_file(path, on_event, t);
    for (int k = K_CPU; k <= K_DUMP; k++)
        if (t->nranges[k]) t->gz_without[k] += gzip_without(path, t->ranges[k], t->nranges[k]);
    uint64_t size = file_size(path);
    t->attributed += size > t->last_end ? size - t->last_end : 0; /* the file's tail: stack-less */
    t->file_bytes += size;
    *gz += gzip_size(path);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: d9_bench_stack_bytes RUN_DIR|FILE...\n");
        return 2;
    }
    tally t;
    memset(&t, 0, sizeof t);
    uint64_t gz = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            char **files;
            int n = d9t_list_segments(argv[i], &files);
            for (int j = 0; j < n; j++) tally_file(&t, files[j], &gz);
            d9t_free_list(files, n);
        } else {
            tally_file(&t, argv[i], &gz);
        }
    }
    printf("trace: %" PRIu64 " bytes (%" PRIu64 " gzip-compressed, %.1f %%)%s\n", t.file_bytes, gz,
           t.file_bytes ? 100.0 * (double)gz / (double)t.file_bytes : 0.0,
           t.attributed == t.file_bytes ? "" : " -- attribution does not add up to the file sizes");
    for (int k = 0; k < K_COUNT; k++) {
        kind_bytes *b = &t.k[k];
        if (!b->events) continue;
        double n = (double)b->events;
        printf("  %-22s %9" PRIu64 ": %6.1f bytes each = %5.1f event + %5.1f stack pools, origins and other"
               " frames before it",
               kind_names[k], b->events, (double)(b->own + b->brought) / n, (double)b->own / n,
               (double)b->brought / n);
        if (k != K_OTHER) {
            printf(" (%.1f frames a stack)", (double)b->frames / n);
            if (gz > t.gz_without[k]) printf("; gzip-compressed: %.1f bytes each", (double)(gz - t.gz_without[k]) / n);
        }
        printf("\n");
    }
    uint64_t ev = t.k[K_CPU].events + t.k[K_SWITCH].events, by = 0;
    for (int k = K_CPU; k <= K_SWITCH; k++) by += t.k[k].own + t.k[k].brought;
    if (ev) printf("  all samples: %.1f bytes each on average\n", (double)by / (double)ev);
    return 0;
}
