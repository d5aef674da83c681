/* The Host header check of `dial9 serve` (see host_check.h). */
#include "serve/host_check.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <string.h>

#define MAX_HOST_BYTES 255

static bool v4_loopback(const unsigned char *a) { return a[0] == 127; }

static bool v6_loopback(const unsigned char *a) {
    static const unsigned char one[16] = {[15] = 1};
    static const unsigned char mapped[12] = {[10] = 0xff, [11] = 0xff};
    return !memcmp(a, one, 16) || (!memcmp(a, mapped, 12) && a[12] == 127);
}

bool d9_address_is_loopback(const char *numeric) {
    unsigned char a[16];
    if (inet_pton(AF_INET, numeric, a) == 1) return v4_loopback(a);
    if (inet_pton(AF_INET6, numeric, a) == 1) return v6_loopback(a);
    return false;
}

bool d9_host_check_init(d9_host_check *h, const char *bind, char *const *allowed, size_t allowed_count) {
    static const unsigned char zero[16];
    memset(h, 0, sizeof *h);
    if (inet_pton(AF_INET, bind, h->bound) == 1) {
        h->family = AF_INET;
        h->wildcard = !memcmp(h->bound, zero, 4);
        h->loopback = v4_loopback(h->bound);
    } else if (inet_pton(AF_INET6, bind, h->bound) == 1) {
        h->family = AF_INET6;
        h->wildcard = !memcmp(h->bound, zero, 16);
        h->loopback = v6_loopback(h->bound);
    } else {
        return false;
    }
    h->allowed = allowed;
    h->allowed_count = allowed_count;
    for (size_t i = 0; i < allowed_count; i++) h->allow_any |= !strcmp(allowed[i], "*");
    return true;
}

/* "name[:port]" or "[v6][:port]" into name (lowercase, no trailing dot; brackets kept off
 * for v6) and whether it was bracketed. False when malformed. */
static bool split_host(const char *host, char *name, size_t len, bool *bracketed) {
    size_t n = strlen(host);
    if (n == 0 || n > MAX_HOST_BYTES || n >= len) return false;
    const char *end = host + n, *port = NULL;
    *bracketed = host[0] == '[';
    if (*bracketed) {
        const char *close = strchr(host, ']');
        if (!close) return false;
        if (close[1] == ':') port = close + 2;
        else if (close[1]) return false;
        host++;
        end = close;
    } else {
        const char *colon = strchr(host, ':');
        if (colon) {
            if (strchr(colon + 1, ':')) return false; /* an IPv6 literal needs brackets */
            port = colon + 1;
            end = colon;
        }
    }
    if (port) {
        if (!*port) return false;
        for (const char *p = port; *p; p++)
            if (!isdigit((unsigned char)*p)) return false;
    }
    size_t m = (size_t)(end - host);
    if (m > 1 && host[m - 1] == '.' && !*bracketed) m--; /* "localhost." is "localhost" */
    if (m == 0) return false;
    for (size_t i = 0; i < m; i++) {
        unsigned char c = (unsigned char)host[i];
        if (c <= 0x20 || c >= 0x7f) return false;
        name[i] = (char)tolower(c);
    }
    name[m] = '\0';
    return true;
}

static bool is_localhost_name(const char *name) {
    size_t n = strlen(name);
    static const char suffix[] = ".localhost";
    return !strcmp(name, "localhost") ||
           (n > sizeof suffix - 1 && !strcmp(name + n - (sizeof suffix - 1), suffix));
}

bool d9_host_allowed(const d9_host_check *h, const char *host) {
    if (!host || h->allow_any) return true;
    char name[MAX_HOST_BYTES + 1];
    bool bracketed;
    if (!split_host(host, name, sizeof name, &bracketed)) return false;
    unsigned char a[16];
    int family = 0;
    if (bracketed && inet_pton(AF_INET6, name, a) == 1) family = AF_INET6;
    else if (!bracketed && inet_pton(AF_INET, name, a) == 1) family = AF_INET;
    else if (bracketed) return false;
    if (family) {
        if (h->wildcard) return true;
        if (family == h->family && !memcmp(a, h->bound, family == AF_INET ? 4 : 16)) return true;
        return h->loopback && (family == AF_INET ? v4_loopback(a) : v6_loopback(a));
    }
    if (is_localhost_name(name)) return true;
    for (size_t i = 0; i < h->allowed_count; i++) {
        char allowed[MAX_HOST_BYTES + 1];
        bool b;
        if (split_host(h->allowed[i], allowed, sizeof allowed, &b) && !strcmp(allowed, name)) return true;
    }
    return false;
}
