/* The Host check of `dial9 serve` (src/serve/host_check.h) for each kind of bound address, and
 * the log escaping (src/serve/url.h): names that could be rebound are refused, localhost names
 * and IP literals are answered as documented, malformed values are refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "serve/host_check.h"
#include "serve/url.h"

static bool allowed(const char *bind, const char *host) {
    static char *names[] = {"traces.example", "proxy.example:8080"};
    d9_host_check h;
    if (!d9_host_check_init(&h, bind, names, 2)) return false;
    return d9_host_allowed(&h, host);
}

static const char *escaped(const char *s, size_t max) {
    static char buf[256];
    FILE *f = fmemopen(buf, sizeof buf, "w");
    d9_log_escape(f, s, max);
    fclose(f);
    return buf;
}

int main(void) {
    /* bound to 127.0.0.1 */
    CHECK(allowed("127.0.0.1", NULL)); /* HTTP/1.0 without Host */
    CHECK(allowed("127.0.0.1", "127.0.0.1"));
    CHECK(allowed("127.0.0.1", "127.0.0.1:9009"));
    CHECK(allowed("127.0.0.1", "127.0.0.2")); /* another loopback literal */
    CHECK(allowed("127.0.0.1", "[::1]:9009"));
    CHECK(allowed("127.0.0.1", "localhost"));
    CHECK(allowed("127.0.0.1", "LOCALHOST.:9009"));
    CHECK(allowed("127.0.0.1", "a.b.localhost"));
    CHECK(allowed("127.0.0.1", "traces.example"));
    CHECK(allowed("127.0.0.1", "Traces.Example:1"));
    CHECK(allowed("127.0.0.1", "proxy.example")); /* the port of an --allow-host is not compared */
    CHECK(!allowed("127.0.0.1", "attacker.example"));
    CHECK(!allowed("127.0.0.1", "localhost.attacker.example"));
    CHECK(!allowed("127.0.0.1", "127.0.0.1.attacker.example"));
    CHECK(!allowed("127.0.0.1", "xlocalhost"));
    CHECK(!allowed("127.0.0.1", ".localhost"));
    CHECK(!allowed("127.0.0.1", "10.0.0.1"));
    CHECK(!allowed("127.0.0.1", "127.1")); /* not a dotted quad: a name */
    CHECK(!allowed("127.0.0.1", "[::ffff:10.0.0.1]"));
    CHECK(!allowed("127.0.0.1", "sub.traces.example"));
    /* malformed */
    CHECK(!allowed("127.0.0.1", ""));
    CHECK(!allowed("127.0.0.1", "localhost:"));
    CHECK(!allowed("127.0.0.1", "localhost:80x"));
    CHECK(!allowed("127.0.0.1", "::1"));          /* IPv6 without brackets */
    CHECK(!allowed("127.0.0.1", "[::1"));
    CHECK(!allowed("127.0.0.1", "[::1]x"));
    CHECK(!allowed("127.0.0.1", "[localhost]"));
    CHECK(!allowed("127.0.0.1", "local host"));
    CHECK(!allowed("127.0.0.1", "localhost\x01"));
    /* bound to one non-loopback address: only it among literals */
    CHECK(allowed("192.0.2.7", "192.0.2.7:9009"));
    CHECK(!allowed("192.0.2.7", "192.0.2.8"));
    CHECK(!allowed("192.0.2.7", "127.0.0.1"));
    CHECK(allowed("192.0.2.7", "localhost"));
    /* bound to a wildcard: any literal (each of the machine's addresses is bound), no name */
    CHECK(allowed("0.0.0.0", "10.1.2.3:9009"));
    CHECK(allowed("::", "[2001:db8::1]"));
    CHECK(!allowed("0.0.0.0", "attacker.example"));
    /* bound to ::1 */
    CHECK(allowed("::1", "[::1]:9009"));
    CHECK(allowed("::1", "127.0.0.1"));
    CHECK(!allowed("::1", "[2001:db8::1]"));
    /* '*' allows any */
    {
        char *any[] = {"*"};
        d9_host_check h;
        CHECK(d9_host_check_init(&h, "127.0.0.1", any, 1) && d9_host_allowed(&h, "attacker.example"));
        CHECK(!d9_host_check_init(&h, "localhost", any, 1)); /* bind must be numeric */
    }
    CHECK(d9_address_is_loopback("127.9.9.9") && d9_address_is_loopback("::1") &&
          d9_address_is_loopback("::ffff:127.0.0.1"));
    CHECK(!d9_address_is_loopback("0.0.0.0") && !d9_address_is_loopback("::") &&
          !d9_address_is_loopback("192.0.2.1") && !d9_address_is_loopback("nope"));
    /* the log */
    CHECK_STR(escaped("/a\nGET /forged 200", 100), "/a\\x0aGET /forged 200");
    CHECK_STR(escaped("\x1b[2J\\x", 100), "\\x1b[2J\\\\x");
    CHECK_STR(escaped("caf\xc3\xa9", 100), "caf\\xc3\\xa9");
    CHECK_STR(escaped("abcdef", 3), "abc...");
    CHECK_STR(escaped("abc", 3), "abc");
    return d9t_summary("test_serve_host_check");
}
