/* src/common/segment_name: the one parser of trace file names, used by the writer's retention,
 * the readers' directory search and the server's index. Every kind, the largest N, and hostile
 * names (signs, spaces, overflow, a path, a suffix glued on, NUL-free junk) that must not be
 * taken for a segment, because retention deletes what it parses. */
#include <stdbool.h>
#include <stdint.h>

#include "check.h"

#include "common/segment_name.h"

static bool parses(const char *name, uint64_t want_seq, d9_segment_kind want_kind) {
    uint64_t seq = 12345;
    d9_segment_kind kind = D9_SEGMENT_ACTIVE;
    return d9_segment_name_parse(name, &seq, &kind) && seq == want_seq && kind == want_kind;
}

static bool refused(const char *name) {
    uint64_t seq = 777;
    d9_segment_kind kind = D9_SEGMENT_GZIP;
    bool ok = d9_segment_name_parse(name, &seq, &kind);
    return !ok && seq == 777 && kind == D9_SEGMENT_GZIP; /* outputs untouched */
}

static void test_good_names(void) {
    CHECK(parses("trace.0.bin", 0, D9_SEGMENT_SEALED));
    CHECK(parses("trace.7.bin.gz", 7, D9_SEGMENT_GZIP));
    CHECK(parses("trace.8.bin.zst", 8, D9_SEGMENT_ZSTD));
    CHECK(parses("trace.42.bin.active", 42, D9_SEGMENT_ACTIVE));
    CHECK(parses("trace.007.bin", 7, D9_SEGMENT_SEALED)); /* leading zeros: still N = 7 */
    CHECK(parses("trace.18446744073709551615.bin.active", UINT64_MAX, D9_SEGMENT_ACTIVE));
    CHECK(parses("trace.4611686018427387905.bin", 4611686018427387905ull, D9_SEGMENT_SEALED));
}

static void test_hostile_names(void) {
    static const char *const bad[] = {
        "",                     /* empty */
        "trace.",               /* no number */
        "trace..bin",           /* no digits */
        "trace.bin",            /* no number at all */
        "trace.-1.bin",         /* a sign */
        "trace.+1.bin",
        "trace. 1.bin",         /* a space strtoull would skip */
        "trace.1 .bin",
        "trace.0x10.bin",       /* hex */
        "trace.1e3.bin",
        "trace.18446744073709551616.bin", /* one past UINT64_MAX */
        "trace.99999999999999999999999.bin",
        "trace.1.bin.gz.bin",   /* suffix glued on */
        "trace.1.binx.bin",
        "trace.1.bin.old",
        "trace.1.bin.",
        "trace.1.bin.activex",
        "trace.1.bin.zstd",
        "trace.1.bin.zst.gz",
        "trace.1.zst",
        "trace.1.BIN",          /* case matters */
        "Trace.1.bin",
        "xtrace.1.bin",
        "trace.1",
        "trace.1.gz",
        "trace.1.active",
        "../trace.1.bin",       /* a path is not a name */
        "run/trace.1.bin",
        "trace.1.bin/",
        ".trace.1.bin",
        "trace.1.bin\n",
        "trace\xff.1.bin",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        bool r = refused(bad[i]);
        if (!r) fprintf(stderr, "taken for a segment: \"%s\"\n", bad[i]);
        CHECK(r);
    }
    CHECK(refused(NULL));
    /* a very long name (a run of digits far past 64 bits) */
    char big[5000] = "trace.";
    memset(big + 6, '9', sizeof big - 6 - 5);
    memcpy(big + sizeof big - 5, ".bin", 5);
    CHECK(refused(big));
    /* the same length of zeros is N = 0 */
    memset(big + 6, '0', sizeof big - 6 - 5);
    CHECK(parses(big, 0, D9_SEGMENT_SEALED));
}

static void test_format_round_trip(void) {
    static const uint64_t seqs[] = {0, 1, 9, 10, 12345, UINT64_MAX - 1, UINT64_MAX};
    bool ok = true;
    for (size_t i = 0; i < sizeof seqs / sizeof seqs[0]; i++)
        for (int k = D9_SEGMENT_SEALED; k < D9_SEGMENT_KINDS; k++) {
            char buf[D9_SEGMENT_NAME_MAX];
            d9_segment_name_format(buf, sizeof buf, seqs[i], (d9_segment_kind)k);
            if (!parses(buf, seqs[i], (d9_segment_kind)k)) ok = false;
            if (!d9_is_trace_file_name(buf)) ok = false;
        }
    CHECK(ok);
    char buf[D9_SEGMENT_NAME_MAX];
    d9_segment_name_format(buf, sizeof buf, UINT64_MAX, D9_SEGMENT_ACTIVE);
    CHECK_EQ_U64(strlen(buf) + 1, D9_SEGMENT_NAME_MAX); /* the bound is exact */
    CHECK_STR(d9_segment_kind_suffix(D9_SEGMENT_GZIP), ".bin.gz");
    CHECK_STR(d9_segment_kind_suffix(D9_SEGMENT_ZSTD), ".bin.zst");
    char small[8];
    d9_segment_name_format(small, sizeof small, 123, D9_SEGMENT_SEALED); /* truncated, terminated */
    CHECK_STR(small, "trace.1");
}

static void test_trace_file_names(void) {
    /* what a directory search takes: segments and any other *.bin, *.bin.gz, *.bin.active */
    CHECK(d9_is_trace_file_name("trace.3.bin"));
    CHECK(d9_is_trace_file_name("dial9-rust-export.bin"));
    CHECK(d9_is_trace_file_name("x.bin.gz"));
    CHECK(d9_is_trace_file_name("x.bin.zst"));
    CHECK(!d9_is_trace_file_name(".bin.zst"));
    CHECK(d9_is_trace_file_name("x.bin.active"));
    CHECK(!d9_is_trace_file_name(".bin")); /* nothing before the suffix */
    CHECK(!d9_is_trace_file_name(".bin.gz"));
    CHECK(!d9_is_trace_file_name("trace.3.bin.tmp"));
    CHECK(!d9_is_trace_file_name("trace.3.json"));
    CHECK(!d9_is_trace_file_name(""));
    CHECK(!d9_is_trace_file_name(NULL));
}

int main(void) {
    test_good_names();
    test_hostile_names();
    test_format_round_trip();
    test_trace_file_names();
    return d9t_summary("test_common_segment_name");
}
