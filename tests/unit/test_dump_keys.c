/* The names readers find dumps by (docs/flight-recorder.md): the S3 keys of a dump
 * (sinks/step_dump_upload.h: {prefix}/dumps/date=D/service=S/instance=H/{name}/), which the
 * fleet's segment readers must skip, and what a manifest says (common/dump_summary.h), read
 * past members that are not the ones asked for, nested or not. */
#include <string.h>

#include "check.h"
#include "common/dump_summary.h"
#include "fleet/s3_key_layout.h"
#include "sinks/step_dump_upload.h"

static const char k_manifest[] =
    "{\n  \"format\": \"dial9-dump\",\n  \"version\": 1,\n  \"run_id\": \"r\",\n"
    "  \"decoy\": {\"kind\": \"not this\", \"trigger\": {\"kind\": \"nor this\"}},\n"
    "  \"trigger\": {\n    \"files\": [{\"kind\": \"nested\"}],\n    \"kind\": \"rule\",\n"
    "    \"rule\": \"poll_ms>20\",\n    \"event\": \"PollEndEvent: a \\\"quoted\\\" word\",\n"
    "    \"at_unix_ns\": 1796547600000000000,\n    \"at_mono_ns\": 7000000000000,\n    \"merged_triggers\": 2\n  },\n"
    "  \"window\": {\"lookback_ms\": 30000, \"lookforward_ms\": 5000, \"from_unix_ns\": 1796547570000000000,\n"
    "    \"to_unix_ns\": 1796547605000000000, \"from_mono_ns\": 6970000000000, \"to_mono_ns\": 7005000000000},\n"
    "  \"holds\": {\"segments\": 3, \"bytes\": 1234, \"files\": []}\n}\n";

int main(void) {
    char key[1024];
    /* 2026-12-06T09:00:00Z */
    CHECK_EQ_U64(d9_dump_key_dir(key, sizeof key, "dial9-traces/", "api:blue", "host-1", 1796547600, "r.dump1"), 0);
    CHECK_STR(key, "dial9-traces/dumps/date=2026-12-06/service=api%3Ablue/instance=host-1/r.dump1/");
    CHECK_EQ_U64(d9_dump_key_dir(key, sizeof key, "", "s", "h", 0, "d"), 0);
    CHECK_STR(key, "dumps/date=1970-01-01/service=s/instance=h/d/");
    CHECK(d9_dump_key_dir(key, 20, "dial9-traces", "s", "h", 0, "d") != 0); /* does not fit */

    const char *dump = "dial9-traces/dumps/date=2026-12-06/service=s/instance=h/r.dump1/trace.0.bin";
    CHECK(d9_dump_key_rest(dump, "dial9-traces") != NULL);
    CHECK_STR(d9_dump_key_rest(dump, "dial9-traces/"), "date=2026-12-06/service=s/instance=h/r.dump1/trace.0.bin");
    CHECK(d9_dump_key_rest(dump, "other") == NULL);
    CHECK(d9_dump_key_rest("dial9-traces/dumpsx/a", "dial9-traces") == NULL);
    CHECK(d9_dump_key_is_dump(dump));
    CHECK(d9_dump_key_is_dump("dumps/date=2026-12-06/service=s/instance=h/d/manifest.json"));
    /* a segment's key, even of a service named "dumps", is none */
    CHECK(!d9_dump_key_is_dump("dial9-traces/version=1/date=2026-12-06/service=dumps/time=0900/instance=h/boot=b/1-0.bin.gz"));
    CHECK(!d9_dump_key_is_dump("traces/dumps/trace.0.bin"));
    /* without the skip, the fleet's readers would take a dump's segment for a run of its own */
    d9_key_parts kp;
    CHECK(d9_key_parse(dump, &kp) && kp.layout == D9_KEY_OTHER);

    d9_dump_summary s;
    CHECK(d9_dump_summary_parse(k_manifest, sizeof k_manifest - 1, &s));
    CHECK_STR(s.kind, "rule");
    CHECK_STR(s.rule, "poll_ms>20");
    CHECK_STR(s.event, "PollEndEvent: a \"quoted\" word");
    CHECK_STR(s.reason, "");
    CHECK_EQ_U64(s.at_mono_ns, 7000000000000ull);
    CHECK_EQ_U64((uint64_t)s.at_unix_ns, 1796547600000000000ull);
    CHECK_EQ_U64(s.merged_triggers, 2);
    CHECK_EQ_U64(s.lookback_ms, 30000);
    CHECK_EQ_U64(s.lookforward_ms, 5000);
    CHECK_EQ_U64(s.from_mono_ns, 6970000000000ull);
    CHECK_EQ_U64(s.to_mono_ns, 7005000000000ull);
    CHECK_EQ_U64(s.segments, 3);
    CHECK_EQ_U64(s.bytes, 1234);
    char line[512];
    d9_dump_summary_line(&s, line, sizeof line);
    CHECK_STR(line, "rule poll_ms>20 (PollEndEvent: a \"quoted\" word) at 2026-12-06T09:00:00.000Z, window 30000 ms "
                    "before to 5000 ms after, 3 segments");
    /* not a manifest: another format, a cut one, no window */
    CHECK(!d9_dump_summary_parse("{\"format\": \"other\"}", 19, &s));
    CHECK(!d9_dump_summary_parse(k_manifest, 200, &s));
    CHECK(!d9_dump_summary_parse("{\"format\": \"dial9-dump\", \"trigger\": {\"kind\": \"api\"}}", 52, &s));
    CHECK(!d9_dump_summary_parse("", 0, &s));
    return d9t_summary("test_dump_keys");
}
