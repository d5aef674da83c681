/* What a trace says of its schedstat source, read once from its metadata, so every reader
 * tells a measured run-queue wait from one that was not read the same way. */
#ifndef D9_MODEL_SCHEDSTAT_SOURCE_H
#define D9_MODEL_SCHEDSTAT_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* Since parks and unparks carry dial9's required cpu_time_ns (read from the thread's CPU clock
 * at every one), a CPU time no longer says that schedstat was read, and an unpark whose
 * schedstat read was skipped (within DIAL9_SCHEDSTAT_RESOLUTION_US of the thread's previous
 * read, its wait carried to the next read) writes sched_wait_ns 0. The recorder states the
 * source in `source.schedstat` ("active: ..." / "inactive: ..."); traces that do not (dial9's,
 * which read schedstat at every unpark, and ours from before the source was noted) keep the
 * older rule: a wait was measured where the unpark has a CPU time. */
typedef enum d9m_schedstat {
    D9M_SCHEDSTAT_UNSTATED = 0,
    D9M_SCHEDSTAT_ACTIVE,
    D9M_SCHEDSTAT_INACTIVE,
} d9m_schedstat;

/* The state a metadata entry states, or -1 when the key is another. */
static inline int d9m_schedstat_from_metadata(const char *key, size_t key_len, const char *val,
                                              size_t val_len) {
    static const char name[] = "source.schedstat";
    if (key_len != sizeof name - 1 || memcmp(key, name, key_len) != 0) return -1;
    return val_len >= 6 && !memcmp(val, "active", 6) ? D9M_SCHEDSTAT_ACTIVE : D9M_SCHEDSTAT_INACTIVE;
}

/* Whether an unpark's sched_wait_ns (present) is a measurement: a nonzero wait always is; a zero one is
 * where the trace does not state its source and the unpark has a CPU time (the older rule).
 * Where schedstat is stated active, 0 is an unread wait (carried to the next read): excluded,
 * as an absent one was, so the distribution stays over reads. */
static inline bool d9m_sched_wait_measured(d9m_schedstat ss, unsigned long long wait, bool has_cpu) {
    if (wait != 0) return true;
    return ss == D9M_SCHEDSTAT_UNSTATED && has_cpu;
}

#endif
