/* When to try the next upload during an outage. Closed: each transient failure (a connection
 * refused or reset, a timeout, a 5xx, SlowDown) makes the next attempt wait a short
 * exponential backoff with jitter. After `threshold` consecutive ones the circuit opens: no
 * attempt for a cool-down that doubles at each failed probe (with jitter, up to a maximum),
 * shared by every file, instead of each file running its own retry schedule. When the
 * cool-down is over it is half-open: one attempt goes; success closes it, failure opens it
 * again for longer. A pure state machine: the caller passes the time (CLOCK_MONOTONIC ns), so
 * that tests drive it with a fake clock. Fatal answers are not its business (the caller stops
 * uploading on the first one). */
#ifndef D9_SINKS_CIRCUIT_BREAKER_H
#define D9_SINKS_CIRCUIT_BREAKER_H

#include <stdbool.h>
#include <stdint.h>

typedef enum d9_breaker_state { D9_BREAKER_CLOSED, D9_BREAKER_OPEN, D9_BREAKER_HALF_OPEN } d9_breaker_state;

typedef struct d9_breaker {
    /* settings */
    unsigned threshold;      /* consecutive failures that open it (>= 1) */
    uint64_t backoff_first_ns;
    uint64_t cooldown_first_ns, cooldown_max_ns;
    /* state */
    d9_breaker_state state;
    unsigned failures;       /* consecutive transient failures */
    uint64_t next_ns;        /* no attempt before this */
    uint64_t cooldown_ns;    /* the current cool-down, before jitter */
    uint64_t rng;
    uint64_t opened;         /* times it opened (counts each failed probe too) */
} d9_breaker;

#define D9_BREAKER_THRESHOLD 5
#define D9_BREAKER_BACKOFF_FIRST_NS 500000000ull   /* 0.5 s, doubling while closed */
#define D9_BREAKER_COOLDOWN_FIRST_NS 30000000000ull /* 30 s (DIAL9_S3_BREAKER_SECS) */
#define D9_BREAKER_COOLDOWN_MAX_NS 600000000000ull  /* 10 min */

/* Closed, with the defaults above; seed (any value) drives the jitter. */
void d9_breaker_init(d9_breaker *b, uint64_t seed);

/* How long from now_ns before an attempt may start: 0 means now (an open circuit whose
 * cool-down is over becomes half-open: that attempt is the probe). */
uint64_t d9_breaker_wait_ns(d9_breaker *b, uint64_t now_ns);

/* The attempt's outcome. d9_breaker_failure returns true when this failure opened the
 * circuit (from closed or from a failed probe). */
void d9_breaker_success(d9_breaker *b);
bool d9_breaker_failure(d9_breaker *b, uint64_t now_ns);

#endif
