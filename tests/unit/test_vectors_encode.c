/* The shared test vectors (tests/vectors/NAME.bin) are written by this program with the project's
 * encoder. As a test it encodes them again and compares byte for byte with the checked-in files,
 * so the vectors the C, JS and shell tests read stay what our encoder writes; with `--write DIR`
 * it (re)writes them (tests/vectors/update.sh). What each vector holds: tests/vectors/README.md. */
#include <errno.h>
#include <stdio.h>

#include "check.h"
#include "attribution_trace.h"
#include "poll_cpu_trace.h"
#include "worker_change_trace.h"

typedef struct vector {
    const char *name;
    void (*build)(tb *t);
} vector;

/* The worked example of the format reference: two PollEndEvents of worker 3, 1500 ns apart. */
static void build_worked_example(tb *t) {
    d9_enc_header(&t->b, &t->st);
    d9_enc_schema(&t->b, 0, &d9_builtin_schemas[D9_SCH_POLL_END]);
    for (uint64_t ts = 1000000000; ts <= 1000001500; ts += 1500) {
        d9_enc_event(&t->b, &t->st, 0, ts);
        d9_put_varint(&t->b, 3);
    }
}

/* A small runtime: two workers, metadata, spawns, polls (one long, with CPU and off-CPU samples
 * inside it), parks with and without a schedstat reading, cross-thread wakes, a queue sample,
 * symbols, a drop report and terminations. Enough for every section of analyze and check. */
static void build_runtime(tb *t) {
    const uint64_t T0 = 5000000000ull;
    tb_stream(t);
    static const char *const meta[] = {"service", "vectors", "runtime.workers", "io:0,1",
                                       "sources", "cpu_profile,context_switches,schedstat,symbols",
                                       NULL, NULL};
    tb_metadata(t, T0, meta);
    uint32_t loc_a = tb_string(t, "src/server.c:42"), loc_b = tb_string(t, "src/db.c:7");
    uint64_t hot[] = {0x401000, 0x402000}, blocked[] = {0x403000, 0x402000};
    uint32_t st_hot = tb_stack(t, hot, 2), st_blocked = tb_stack(t, blocked, 2);
    tb_spawn(t, T0 + 1 * US, 101, loc_a);
    tb_spawn(t, T0 + 2 * US, 102, loc_b);
    tb_spawn(t, T0 + 3 * US, 103, loc_a);
    tb_unpark(t, T0 + 10 * US, 0, 1000, 20 * US, 1000);
    tb_unpark(t, T0 + 11 * US, 1, 2000, 3 * MS, 1001); /* a long run-queue wait */
    tb_poll(t, T0 + 20 * US, 50 * US, 0, 1, 101, loc_a);
    tb_wake(t, T0 + 60 * US, 101, 102, 1);
    tb_park(t, T0 + 200 * US, 0, 1500, 1000);
    tb_poll_start(t, T0 + 100 * US, 1, 0, 102, loc_b); /* the long poll: 12 ms */
    tb_sample(t, T0 + 2 * MS, 1, 1001, 0, st_hot);
    tb_sample(t, T0 + 5 * MS, 1, 1001, 1, st_blocked);
    tb_sample(t, T0 + 8 * MS, 1, 1001, 0, st_hot);
    tb_queue(t, T0 + 6 * MS, 3);
    tb_poll_end(t, T0 + 100 * US + 12 * MS, 1);
    tb_wake(t, T0 + 13 * MS, 102, 103, 0);
    tb_unpark(t, T0 + 13 * MS + 40 * US, 0, D9_ABSENT, D9_ABSENT, 1000); /* no reading */
    tb_poll(t, T0 + 13 * MS + 50 * US, 200 * US, 0, 0, 103, loc_a);
    tb_poll(t, T0 + 14 * MS, 30 * US, 1, 0, 102, loc_b);
    tb_drops(t, T0 + 14 * MS + 100 * US, 4, tb_string(t, "buffer_full"), 1001, 1);
    tb_terminate(t, T0 + 14 * MS + 200 * US, 102);
    tb_terminate(t, T0 + 14 * MS + 300 * US, 103);
    tb_park(t, T0 + 14 * MS + 400 * US, 0, D9_ABSENT, 1000);
    tb_park(t, T0 + 14 * MS + 500 * US, 1, 14 * MS, 1001);
    tb_symbol(t, 0x401000, 0x100, "parse_request", 0, "src/server.c", 88);
    tb_symbol(t, 0x402000, 0x200, "handle_conn", 0, "src/server.c", 120);
    tb_symbol(t, 0x403000, 0x80, "read", 0, "", 0);
}

/* Parks in dial9's layout (cpu_time_ns 0 = not measured) and a second stream concatenated in
 * the same file: schemas, pools and the timestamp base start again. */
static void build_dial9_parks_two_streams(tb *t) {
    const uint64_t T0 = 7000000000ull;
    tb_stream_dial9_parks(t);
    uint32_t loc = tb_string(t, "app.rs:10:5");
    tb_spawn(t, T0, 1, loc);
    tb_unpark(t, T0 + 10 * US, 0, 500, 2 * US, 77);
    tb_poll(t, T0 + 20 * US, 80 * US, 0, 0, 1, loc);
    tb_park(t, T0 + 200 * US, 0, 0, 77); /* 0: no reading in dial9's layout */
    tb_unpark(t, T0 + 1 * MS, 0, 0, 0, 77);
    tb_stream(t);
    loc = tb_string(t, "app.rs:20:9"); /* a new stream: pool ids start again */
    tb_spawn(t, T0 + 2 * MS, 2, loc);
    tb_poll(t, T0 + 2 * MS + 10 * US, 3 * MS, 0, 2, 2, loc);
    tb_park(t, T0 + 6 * MS, 0, 4 * MS, 77);
    tb_terminate(t, T0 + 6 * MS + 1 * US, 2);
}

/* A custom event with most field types, optional values present and absent, and an untimed
 * event: what dump prints for values the built-in events never use. */
static void build_custom_fields(tb *t) {
    static const d9_schema_field fields[] = {
        {"i", D9_FT_I64},          {"f", D9_FT_F64},
        {"flag", D9_FT_BOOL},      {"text", D9_FT_STRING},
        {"blob", D9_FT_BYTES},     {"small", D9_FT_U16},
        {"word", D9_FT_U32},       {"name", D9_FT_POOLED_STRING},
        {"maybe", D9_FT_OPTIONAL | D9_FT_VARINT},
    };
    static const d9_schema_def custom = {"CacheMissEvent", true, 9, fields};
    static const d9_schema_field note_fields[] = {{"text", D9_FT_STRING}};
    static const d9_schema_def note = {"Note", false, 1, note_fields};
    d9_enc_header(&t->b, &t->st);
    t->next_pool = 1;
    d9_enc_schema(&t->b, D9_SCH_FIRST_CUSTOM, &custom);
    d9_enc_schema(&t->b, D9_SCH_FIRST_CUSTOM + 1, &note);
    uint32_t users = tb_string(t, "users");
    for (int k = 0; k < 2; k++) {
        d9_enc_event(&t->b, &t->st, D9_SCH_FIRST_CUSTOM, 9000000000ull + (uint64_t)k * 20000000ull);
        d9_put_u64(&t->b, (uint64_t)(k ? -42 : 7));
        double f = k ? -0.25 : 1.5;
        uint64_t fb;
        memcpy(&fb, &f, sizeof fb);
        d9_put_u64(&t->b, fb);
        d9_put_u8(&t->b, (uint8_t)k);
        const char *text = k ? "q\"b\\\n\x01\xc3\xa9 end" : "plain";
        d9_put_lstring(&t->b, text, strlen(text));
        d9_put_lstring(&t->b, "\x00\xff\x10", 3);
        d9_put_u16(&t->b, (uint16_t)(k ? 65535 : 1));
        d9_put_u32(&t->b, k ? 4000000000u : 2);
        d9_put_u32(&t->b, users);
        d9_put_u8(&t->b, (uint8_t)!k);
        if (!k) d9_put_varint(&t->b, 300);
    }
    d9_enc_event_untimed(&t->b, D9_SCH_FIRST_CUSTOM + 1);
    d9_put_lstring(&t->b, "untimed", 7);
}

/* Known off-CPU intervals with their causes, a sampled period of the governor and a drop:
 * where each poll's time went (tests/unit/attribution_trace.h). */
static void build_attribution(tb *t) { attribution_trace(t, true); }

/* poll_cpu stated on, the governor's gaps, long polls with an exact, a "not exact" and no
 * PollCpuEvent: the rule of a poll's CPU time (tests/unit/poll_cpu_trace.h). */
static void build_poll_cpu(tb *t) { poll_cpu_trace(t); }

/* A thread that changes worker mid-run, context-switch samples without a worker id, switch
 * records naming none or the former worker: whose worker each is (tests/unit/worker_change_trace.h). */
static void build_worker_change(tb *t) { worker_change_trace(t); }

/* Metadata that changes during a segment (the recorder writes it again, whole, in a drain after
 * a change: collector_encode.c) and in the next stream: what `stats` reports as each key's last
 * value, and what every reader must step over or keep. */
static void build_metadata_changes(tb *t) {
    const uint64_t T0 = 9000000000ull;
    tb_stream(t);
    static const char *const first[] = {"service", "vectors", "runtime.io", "0",
                                        "governor", "budget 1% of one CPU",
                                        "source.off_cpu", "active: every switch", NULL, NULL};
    tb_metadata(t, T0, first);
    uint32_t loc = tb_string(t, "src/server.c:42");
    tb_spawn(t, T0 + 1 * US, 1, loc);
    tb_poll(t, T0 + 10 * US, 50 * US, 0, 0, 1, loc);
    static const char *const changed[] = {"service", "vectors", "runtime.io", "0",
                                          "governor", "budget 1% of one CPU",
                                          "source.off_cpu", "active: sampled 1 in 4",
                                          "governor.between_windows", "1 in 4: events closed 0.750 s, open (disabled) 0.000 s",
                                          NULL, NULL};
    tb_metadata(t, T0 + 1 * MS, changed);
    tb_poll(t, T0 + 2 * MS, 40 * US, 0, 0, 1, loc);
    tb_stream(t); /* the next segment's start, in the same file here */
    static const char *const next[] = {"service", "vectors", "runtime.io", "0,1",
                                       "governor", "budget 1% of one CPU",
                                       "source.off_cpu", "active: every switch",
                                       "governor.between_windows", "1 in 4: events closed 1.500 s, open (disabled) 0.000 s",
                                       NULL, NULL};
    tb_metadata(t, T0 + 3 * MS, next);
    loc = tb_string(t, "src/server.c:42");
    tb_poll(t, T0 + 4 * MS, 30 * US, 1, 0, 1, loc);
    tb_terminate(t, T0 + 5 * MS, 1);
}

static const vector vectors[] = {
    {"worked-example", build_worked_example},
    {"runtime", build_runtime},
    {"metadata-changes", build_metadata_changes},
    {"dial9-parks-two-streams", build_dial9_parks_two_streams},
    {"custom-fields", build_custom_fields},
    {"attribution", build_attribution},
    {"poll-cpu", build_poll_cpu},
    {"worker-change", build_worker_change},
};

static int write_file(const char *path, const d9_buf *b) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(b->data, 1, b->len, f) != b->len || fclose(f) != 0) {
        fprintf(stderr, "%s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

/* The file's bytes equal b's; says where they first differ when not. */
static bool same_as_file(const char *path, const d9_buf *b) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "%s: %s (tests/vectors/update.sh writes it)\n", path, strerror(errno));
        return false;
    }
    size_t i = 0;
    int c;
    bool same = true;
    while ((c = getc(f)) != EOF) {
        if (i >= b->len || (uint8_t)c != b->data[i]) {
            same = false;
            break;
        }
        i++;
    }
    fclose(f);
    if (same && i == b->len) return true;
    fprintf(stderr, "%s: differs from what the encoder writes now at byte %zu (%zu bytes encoded)\n",
            path, i, b->len);
    return false;
}

int main(int argc, char **argv) {
    const char *write_dir = argc == 3 && strcmp(argv[1], "--write") == 0 ? argv[2] : NULL;
    const char *src = getenv("D9_SOURCE_DIR");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", write_dir ? write_dir : src && *src ? src : ".");
    if (!write_dir) strncat(dir, "/tests/vectors", sizeof dir - strlen(dir) - 1);
    for (size_t i = 0; i < sizeof vectors / sizeof vectors[0]; i++) {
        tb t = {0};
        d9_buf_init(&t.b);
        vectors[i].build(&t);
        CHECK(!t.b.failed);
        char path[4200];
        snprintf(path, sizeof path, "%s/%s.bin", dir, vectors[i].name);
        if (write_dir) CHECK(write_file(path, &t.b) == 0);
        else CHECK(same_as_file(path, &t.b));
        d9_buf_free(&t.b);
    }
    return d9t_summary("test_vectors_encode");
}
