/* Pacing uploads through an outage (see upload_pace.h). */
#include "sinks/upload_pace.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/plain_number.h"

static uint64_t monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void d9_upload_pace_init(d9_upload_pace *p, const char *who) {
    memset(p, 0, sizeof *p);
    p->who = who ? who : "dial9";
    d9_breaker_init(&p->breaker, (uint64_t)time(NULL) * 0x9E3779B97F4A7C15ull ^ (uint64_t)getpid() ^
                                     (uint64_t)(uintptr_t)p);
    /* the configuration refused a bad value already (config.c): a program that reads it
     * otherwise (d9_config_init) is told here, and gets the default */
    const char *v = getenv("DIAL9_S3_BREAKER_SECS");
    if (v && *v) {
        uint64_t secs;
        if (!d9_plain_u64(v, 1, 3600, &secs))
            fprintf(stderr, "%s: DIAL9_S3_BREAKER_SECS=\"%s\": expected seconds from 1 to 3600 (decimal digits "
                            "only, no sign), using 30\n", p->who, v);
        else
            p->breaker.cooldown_first_ns = secs * 1000000000u;
        if (p->breaker.cooldown_max_ns < p->breaker.cooldown_first_ns)
            p->breaker.cooldown_max_ns = p->breaker.cooldown_first_ns;
    }
}

bool d9_upload_pace_given_up(const d9_upload_pace *p) { return p->give_up && p->give_up(p->ctx); }

/* An outage the caller does not wait for: the circuit open, i.e. the short backoffs spent (a
 * blip of a few failures is still retried). */
static bool not_waited_for(const d9_upload_pace *p) {
    return p->breaker.state != D9_BREAKER_CLOSED && p->not_waiting && p->not_waiting(p->ctx);
}

/* Uploading ends: S3 is failing and not waited for. Said once. */
static void quit_failing(d9_upload_pace *p) {
    if (!p->quit)
        fprintf(stderr, "%s: S3 upload not waited for at exit: it is failing (%u consecutive failures, last error: "
                        "%s); what is not stored stays on disk\n", p->who, p->breaker.failures,
                p->last_failure[0] ? p->last_failure : "none");
    p->quit = true;
}

static bool stop_waiting(const d9_upload_pace *p) { return d9_upload_pace_given_up(p) || not_waited_for(p); }

/* Sleep up to ns, waking early when given up or not waited for (polled every 50 ms). */
static void backoff_sleep(const d9_upload_pace *p, uint64_t ns) {
    uint64_t until = monotonic_ns() + ns;
    for (;;) {
        if (stop_waiting(p)) return;
        uint64_t now = monotonic_ns();
        if (now >= until) return;
        uint64_t left = until - now;
        struct timespec step = {0, (long)(left < 50000000u ? left : 50000000u)};
        nanosleep(&step, NULL);
    }
}

bool d9_upload_pace_wait(d9_upload_pace *p) {
    for (;;) {
        if (p->quit) return false;
        if (not_waited_for(p)) {
            quit_failing(p);
            return false;
        }
        if (d9_upload_pace_given_up(p)) return false;
        uint64_t w = d9_breaker_wait_ns(&p->breaker, monotonic_ns());
        if (w == 0) return true;
        backoff_sleep(p, w);
    }
}

bool d9_upload_pace_success(d9_upload_pace *p) {
    bool ended = p->failing;
    d9_breaker_success(&p->breaker);
    p->failing = false;
    return ended;
}

bool d9_upload_pace_failure(d9_upload_pace *p, const char *err) {
    snprintf(p->last_failure, sizeof p->last_failure, "%s", err);
    if (!p->failing)
        fprintf(stderr, "%s: S3 upload failing, retrying with backoff (said once per outage): %s\n", p->who, err);
    p->failing = true;
    bool opened = d9_breaker_failure(&p->breaker, monotonic_ns());
    if (not_waited_for(p)) quit_failing(p);
    return opened;
}
