/* The governor tests' workload (test_mt_source_governor*.c, one test file each): two recording
 * threads ping-pong a byte through two pipes as fast as they can, tens of thousands of context
 * switches a second, until g_stop; g_trips counts the round trips. Also the copy of a string
 * field that both read CoverageEvent records with. */
#ifndef D9_TEST_PINGPONG_WORKLOAD_H
#define D9_TEST_PINGPONG_WORKLOAD_H

#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include "dial9/dial9.h"
#include "format/decoder.h"

static int g_ping[2], g_pong[2]; /* pipe(g_ping) and pipe(g_pong) before starting the threads */
static atomic_bool g_stop;
static atomic_ullong g_trips;

static void *pinger(void *arg) {
    (void)arg;
    d9_worker_begin("pingpong", 0);
    char c = 'p';
    for (uint64_t i = 1; !atomic_load(&g_stop); i++) {
        d9_poll_begin(i, D9_HERE);
        if (write(g_ping[1], &c, 1) != 1 || read(g_pong[0], &c, 1) != 1) break;
        d9_poll_end();
        atomic_fetch_add(&g_trips, 1);
    }
    d9_poll_end();
    c = 'q';
    if (write(g_ping[1], &c, 1) != 1) perror("write");
    d9_worker_end();
    return NULL;
}

static void *ponger(void *arg) {
    (void)arg;
    d9_wake(0); /* records: switch records are kept for threads that record */
    char c;
    while (read(g_ping[0], &c, 1) == 1 && c != 'q') {
        if (write(g_pong[1], &c, 1) != 1) break;
    }
    return NULL;
}

/* A string field of `ev` into dst (32 bytes), "" when it has none. */
static inline void copy_str(char *dst, const d9_event *ev, const char *field) {
    dst[0] = 0;
    const d9_value *v = d9_event_field(ev, field);
    d9_dec_str s;
    if (v && d9_value_str(v, &s)) snprintf(dst, 32, "%.*s", (int)s.len, s.ptr);
}

#endif
