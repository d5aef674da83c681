/* How many long polls have their off-CPU time accounted, for analyze's coverage section (issue
 * #32 item 3): a poll over the recorder's DIAL9_POLL_CPU_MIN_US (its metadata poll_cpu, else
 * 1 ms) is accounted exactly when
 *   - its PollCpuEvent gives its exact CPU time (core/poll_cpu.h), or
 *   - switch records cover all of it (no gap: model/attribution.h), or
 *   - the recording states poll_cpu on and the poll has no PollCpuEvent: its thread was not
 *     switched out inside it (the recorder writes one for every such poll with a switch; a
 *     thread before its first park or unpark has no task-clock page: docs/kernel-sources.md;
 *     the model's rule, d9m_attr_poll_cpu, which the sweep applies at the poll's end);
 * and it has a stack for its longest off-CPU interval when it had no off-CPU time, or its
 * longest covered interval was preempted (runnable) or has its switch-out stack and is no
 * shorter than the off-CPU time switch records did not capture. */
#ifndef D9_ANALYSIS_POLL_CPU_COVER_H
#define D9_ANALYSIS_POLL_CPU_COVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/json_writer.h"
#include "model/attribution.h"

typedef struct d9a_poll_cpu_cover {
    bool stated_on;     /* metadata poll_cpu "on: ..." */
    uint64_t min_ns;    /* the recorder's threshold (1 ms when not stated) */
    uint64_t polls;     /* polls over min_ns */
    uint64_t accounted; /* ... whose off-CPU time is exact */
    uint64_t by_event, by_switches, no_switch; /* how (a poll may be both of the first two: by_event) */
    uint64_t inexact;   /* a PollCpuEvent that could not say (exact false) and gaps left */
    uint64_t with_stack;/* accounted, and a stack for the longest off-CPU interval (or none needed) */
} d9a_poll_cpu_cover;

/* One poll's facts, gathered while it is open (sweep). */
typedef struct d9a_poll_cpu_facts {
    d9m_poll_cpu event;     /* its PollCpuEvent said: none, exact, not exact */
    uint64_t longest_ns;    /* its longest covered off-CPU interval */
    uint64_t longest_ts;    /* its start */
    bool longest_explained; /* preempted, or its switch-out stack is known */
} d9a_poll_cpu_facts;

/* The metadata entry poll_cpu ("on: polls over N us ..."), read by the model's parser
 * (d9m_poll_cpu_metadata, as the attribution's coverage reads it). */
void d9a_poll_cpu_cover_metadata(d9a_poll_cpu_cover *c, const char *key, size_t key_len, const char *val,
                                 size_t val_len);
/* A poll ends, its CPU time given by the model's rule (d9m_attr_poll_cpu): count it (p is its
 * attribution, finished or not). */
void d9a_poll_cpu_cover_poll(d9a_poll_cpu_cover *c, const d9m_attr_poll *p, const d9a_poll_cpu_facts *f);

/* analyze's coverage line ("  off-CPU of polls ..."), nothing when no poll is over the
 * threshold; and the "poll_cpu" object of analyze --json (docs/analyze.md). */
void d9a_poll_cpu_cover_text(const d9a_poll_cpu_cover *c, FILE *out);
void d9a_poll_cpu_cover_json(const d9a_poll_cpu_cover *c, d9_json *j);

#endif
