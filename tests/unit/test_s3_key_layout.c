/* The key layout parser (src/fleet/s3_key_layout.c) on keys of each of dial9's layouts, on
 * keys that fit none, and on keys deeper than the parser splits: what the listing shows of a
 * bucket rests on it. Keys we write ourselves (d9_s3_key) must read back as written. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "sinks/s3_key.h"
#include "fleet/s3_key_layout.h"

static void expect(const char *key, d9_key_layout layout, const char *service, const char *instance,
                   const char *boot, long long start, long long index) {
    d9_key_parts k;
    CHECK(d9_key_parse(key, &k));
    if (k.layout != layout) fprintf(stderr, "  key %.120s: layout %d, want %d\n", key, (int)k.layout, (int)layout);
    CHECK(k.layout == layout);
    CHECK_STR(k.service, service);
    CHECK_STR(k.instance, instance);
    CHECK_STR(k.boot, boot);
    CHECK(k.start == start);
    CHECK(k.index == index);
}

static void layouts(void) {
    expect("dial9-traces/version=1/date=2024-02-29/service=api%3Ablue/time=2359/instance=host-1/boot=b00t/"
           "1709251170-7.bin.gz",
           D9_KEY_HIVE, "api%3Ablue", "host-1", "b00t", 1709251170, 7);
    expect("p/2024-02-29/2359/api/host1/b00t/1709251170-3.bin.gz", D9_KEY_DATED_BOOT, "api", "host1", "b00t",
           1709251170, 3);
    expect("dial9-traces/2024-02-29/2359/checkout-api/host1/1709251170-0.bin", D9_KEY_DATED, "checkout-api",
           "host1", "", 1709251170, 0);
    /* the dated layouts store values raw: they come out escaped, as the current layout's */
    expect("p/2024-02-29/2359/api:blue/h/1-0.bin", D9_KEY_DATED, "api%3Ablue", "h", "", 1, 0);
    /* a '/' in a dated instance is ambiguous: six components below the date fit no layout */
    expect("p/2024-02-29/2359/api/rack/h/b/1-0.bin", D9_KEY_OTHER, "", "", "", 1, 0);
    expect("p/traces/whatever.bin", D9_KEY_OTHER, "", "", "", -1, -1); /* no segment number */
    /* zstd objects (DIAL9_COMPRESS=zstd) in every layout */
    expect("p/version=1/date=2024-02-29/service=api/time=2359/instance=h/boot=b/1709251170-8.bin.zst", D9_KEY_HIVE,
           "api", "h", "b", 1709251170, 8);
    expect("p/2024-02-29/2359/api/h/b/1709251170-4.bin.zst", D9_KEY_DATED_BOOT, "api", "h", "b", 1709251170, 4);
    expect("p/traces/whatever.bin.zst", D9_KEY_OTHER, "", "", "", -1, -1);
    expect("p/2024-02-29/23x9/api/h/1-0.bin", D9_KEY_OTHER, "", "", "", 1, 0); /* no HHMM */
    d9_key_parts k;
    CHECK(!d9_key_parse("p/version=1/date=2024-02-29/service=s/notes.json", &k)); /* not a trace */
    CHECK(!d9_key_parse("", &k));
    CHECK(!d9_key_parse("p/version=1/date=2024-02-29/service=s/time=2359/instance=h/boot=b/1-0.bin.zstd", &k));
    CHECK(!d9_key_parse("p/x/1-0.zst", &k));
    CHECK(!d9_key_parse("p/", &k));
}

/* A prefix of many components: the layout is read from the components nearest the file. */
static void deep_keys(void) {
    char prefix[512] = "", key[1024];
    for (int i = 0; i < 70; i++) strcat(prefix, "d/");
    snprintf(key, sizeof key, "%sversion=1/date=2024-02-29/service=api/time=2359/instance=h/boot=b/5-1.bin.gz",
             prefix);
    expect(key, D9_KEY_HIVE, "api", "h", "b", 5, 1);
    snprintf(key, sizeof key, "%s2024-02-29/2359/api/h/b/5-2.bin.gz", prefix);
    expect(key, D9_KEY_DATED_BOOT, "api", "h", "b", 5, 2);
    snprintf(key, sizeof key, "%sx/y/5-3.bin", prefix);
    expect(key, D9_KEY_OTHER, "", "", "", 5, 3);
}

static void round_trip(void) {
    const char *services[] = {"api", "a:b/c=d", "svc with space", "é"};
    char key[1024], esc_service[768], esc_host[768];
    for (size_t i = 0; i < sizeof services / sizeof services[0]; i++) {
        CHECK(d9_s3_key(key, sizeof key, "fleet/one", services[i], "host/1", "boot-9", 1709251170, (int)i, ".bin.gz") ==
              0);
        CHECK(d9_hive_escape(services[i], esc_service, sizeof esc_service) == 0);
        CHECK(d9_hive_escape("host/1", esc_host, sizeof esc_host) == 0);
        expect(key, D9_KEY_HIVE, esc_service, esc_host, "boot-9", 1709251170, (long long)i);
    }
}

int main(void) {
    layouts();
    deep_keys();
    round_trip();
    return d9t_summary("test_s3_key_layout");
}
