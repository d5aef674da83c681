/* The /window form's times (src/serve/instance_window.c d9_parse_utc): an HTML datetime-local
 * value or UTC seconds, and nothing else. sscanf's %2d alone took a sign or a space where the
 * form has digits ("13:-9" was 12:51), found by tests/fuzz/fuzz_serve_request.c. */
#include "check.h"
#include "serve/instance_window.h"

static bool parses(const char *s, long long want) {
    long long t = -1;
    return d9_parse_utc(s, &t) == 0 && t == want;
}

static bool refused(const char *s) {
    long long t;
    return d9_parse_utc(s, &t) != 0;
}

int main(void) {
    CHECK(parses("2026-12-07T13:05", 1796648700));
    CHECK(parses("2026-12-07 13:05:30", 1796648730));
    CHECK(parses("2026-12-07T13:05:30Z", 1796648730));
    CHECK(parses("1796648700", 1796648700));
    CHECK(refused("2026-12-07T13:-9Z"));
    CHECK(refused("2026-12-07T-1:05"));
    CHECK(refused("2026-12-07T13: 9"));
    CHECK(refused("2026-12-07T13:05:-1"));
    CHECK(refused("2026-+1-07T13:05"));
    CHECK(refused(" 2026-12-07T13:05"));
    CHECK(refused("2026-12-07T13:05:3"));
    CHECK(refused("2026-12-07T13"));
    CHECK(refused(""));
    return d9t_summary("serve_parse_utc");
}
