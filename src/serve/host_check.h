/* Which Host headers `dial9 serve` answers (issue 11, item 3): against DNS rebinding, where a
 * page of another site makes the browser resolve its own name to this machine and then reads
 * the traces as "same origin". Such a request carries the attacker's name in Host, so only
 * names that cannot be rebound are answered:
 *
 *   - localhost and *.localhost (browsers resolve them to loopback themselves);
 *   - IP literals (no DNS involved): the bound address, any loopback address when bound to
 *     loopback, any address when bound to a wildcard (0.0.0.0, ::);
 *   - names given with --allow-host (e.g. the name of a reverse proxy); "*" allows any Host.
 *
 * The port is not compared. No Host at all (HTTP/1.0) is allowed: a browser always sends it. */
#ifndef D9_SERVE_HOST_CHECK_H
#define D9_SERVE_HOST_CHECK_H

#include <stdbool.h>
#include <stddef.h>

typedef struct d9_host_check {
    unsigned char bound[16];
    int family;               /* AF_INET or AF_INET6 of the bound address */
    bool wildcard, loopback;  /* of the bound address */
    char *const *allowed;     /* --allow-host names (not copied) */
    size_t allowed_count;
    bool allow_any;           /* --allow-host '*' */
} d9_host_check;

/* bind: the numeric address listened on. False when it is not one. */
bool d9_host_check_init(d9_host_check *h, const char *bind, char *const *allowed, size_t allowed_count);

/* Whether a request with this Host header value (NULL: none) is answered. */
bool d9_host_allowed(const d9_host_check *h, const char *host);

/* Whether a numeric address is a loopback one (127.0.0.0/8, ::1, ::ffff:127.x.x.x). */
bool d9_address_is_loopback(const char *numeric);

#endif
