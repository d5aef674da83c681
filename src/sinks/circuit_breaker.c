/* The upload circuit breaker (see circuit_breaker.h). */
#include "sinks/circuit_breaker.h"

void d9_breaker_init(d9_breaker *b, uint64_t seed) {
    *b = (d9_breaker){.threshold = D9_BREAKER_THRESHOLD,
                      .backoff_first_ns = D9_BREAKER_BACKOFF_FIRST_NS,
                      .cooldown_first_ns = D9_BREAKER_COOLDOWN_FIRST_NS,
                      .cooldown_max_ns = D9_BREAKER_COOLDOWN_MAX_NS,
                      .rng = seed | 1};
}

static uint64_t next_random(d9_breaker *b) { /* xorshift64: jitter only */
    b->rng ^= b->rng << 13;
    b->rng ^= b->rng >> 7;
    b->rng ^= b->rng << 17;
    return b->rng;
}

/* A random wait in the upper half of d: never all clients at once, never much shorter. */
static uint64_t jittered(d9_breaker *b, uint64_t d) { return d - (d / 2 ? next_random(b) % (d / 2 + 1) : 0); }

uint64_t d9_breaker_wait_ns(d9_breaker *b, uint64_t now_ns) {
    if (now_ns >= b->next_ns) {
        if (b->state == D9_BREAKER_OPEN) b->state = D9_BREAKER_HALF_OPEN;
        return 0;
    }
    return b->next_ns - now_ns;
}

void d9_breaker_success(d9_breaker *b) {
    b->state = D9_BREAKER_CLOSED;
    b->failures = 0;
    b->next_ns = 0;
    b->cooldown_ns = 0;
}

static void open_for(d9_breaker *b, uint64_t now_ns, uint64_t cooldown) {
    b->state = D9_BREAKER_OPEN;
    b->cooldown_ns = cooldown;
    b->next_ns = now_ns + jittered(b, cooldown);
    b->opened++;
}

bool d9_breaker_failure(d9_breaker *b, uint64_t now_ns) {
    if (b->failures < UINT32_MAX) b->failures++;
    if (b->state == D9_BREAKER_HALF_OPEN || b->state == D9_BREAKER_OPEN) {
        /* the probe failed: longer this time */
        uint64_t c = b->cooldown_ns >= b->cooldown_max_ns / 2 ? b->cooldown_max_ns : b->cooldown_ns * 2;
        open_for(b, now_ns, c ? c : b->cooldown_first_ns);
        return true;
    }
    if (b->failures >= b->threshold) {
        open_for(b, now_ns, b->cooldown_first_ns);
        return true;
    }
    uint64_t d = b->backoff_first_ns;
    for (unsigned i = 1; i < b->failures && d < b->cooldown_first_ns; i++) d *= 2;
    if (d > b->cooldown_first_ns) d = b->cooldown_first_ns;
    b->next_ns = now_ns + jittered(b, d);
    return false;
}
