/* How an uploader paces its attempts through an outage, written once for the recorder's two
 * (the segments', upload_retry.c, and the flight recorder's dumps', core/flight_upload.c) and
 * `dial9 upload`: one circuit breaker for all of the uploader's files (circuit_breaker.h:
 * short backoffs, then cool-downs after 5 consecutive failures), waits that end when the
 * caller gives up, and the rule at exit: with the circuit open (an outage, not a blip), a
 * caller that does not wait for a failing S3 (not_waiting: the recorder at d9_stop) quits,
 * said once; what it did not store stays on disk, for its caller to name. */
#ifndef D9_SINKS_UPLOAD_PACE_H
#define D9_SINKS_UPLOAD_PACE_H

#include <stdbool.h>

#include "sinks/circuit_breaker.h"

typedef struct d9_upload_pace {
    bool (*give_up)(void *);     /* polled; true ends the waits (and the caller's transfers) */
    /* polled while the circuit is open: true when a failing S3 is not to be waited for (the
     * recorder at exit). NULL: always wait. */
    bool (*not_waiting)(void *);
    void *ctx;                   /* of both */
    const char *who;             /* messages start "who: " */
    /* state */
    bool failing;                /* an outage is going on (said) */
    bool quit;                   /* not waiting with the circuit open: nothing more is tried (said) */
    char last_failure[2048];     /* the last failed attempt's error */
    d9_breaker breaker;
} d9_upload_pace;

/* Closed, no callbacks. The first cool-down is DIAL9_S3_BREAKER_SECS (default 30; a bad value
 * is said and the default used). */
void d9_upload_pace_init(d9_upload_pace *p, const char *who);

bool d9_upload_pace_given_up(const d9_upload_pace *p);

/* Wait until the breaker lets an attempt go: true then. false when given up first, or when
 * the circuit is open and not waited for (p->quit, said once). */
bool d9_upload_pace_wait(d9_upload_pace *p);

/* The attempt stored its object: the circuit closes. true when that ends an outage (the caller
 * says what came through). */
bool d9_upload_pace_success(d9_upload_pace *p);

/* The attempt failed transiently with err: said once per outage, counted by the breaker. true
 * when it opened the circuit. The circuit open and not waited for: quits (p->quit, said once). */
bool d9_upload_pace_failure(d9_upload_pace *p, const char *err);

#endif
