/* Which context-switch sample (CpuSampleEvent source 1) gives its stack to which off-CPU
 * interval: one rule for every reader of the attribution (analyze's sweep, the export,
 * viewer/src/attribution.js), so that they pair the same sample with the same switch-out.
 *
 * A sample and its switch-out come from two perf events, either may carry the earlier
 * timestamp (model/attribution.h, D9M_SWITCH_STACK_MATCH_NS). A worker's intervals (by
 * switch-out) and samples come in time order, a sample before a switch-out of the same time:
 *   - a sample taken while the latest interval has no sample yet, at most the window after its
 *     switch-out and before its switch-in, is that interval's;
 *   - any other sample waits: the next switch-out at most the window after it takes the
 *     oldest waiting sample; a sample older than the window before a switch-out is dropped
 *     (no later interval can take it).
 * The first sample that qualifies wins. At most D9M_SWITCH_WAITING samples wait (the oldest
 * goes first): a sample is taken at a switch-out, so more within the window mean lost switch
 * records. Inline: analyze runs it for every switch and sample. */
#ifndef D9_MODEL_SWITCH_STACK_MATCH_H
#define D9_MODEL_SWITCH_STACK_MATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "model/attribution.h"

#define D9M_SWITCH_WAITING 8
#define D9M_SWITCH_NO_SAMPLE UINT32_MAX

typedef struct d9m_switch_match {
    uint64_t out, in; /* the latest interval */
    bool open;        /* it has no sample yet */
    uint8_t head, nwait;
    uint64_t wait_ts[D9M_SWITCH_WAITING];
    uint32_t wait_id[D9M_SWITCH_WAITING]; /* the reader's sample ids */
} d9m_switch_match;

static inline void d9m_switch_match_pop(d9m_switch_match *m) {
    m->head = (uint8_t)((m->head + 1) % D9M_SWITCH_WAITING);
    m->nwait--;
}

/* The interval [out, in) of the worker: the id of the sample it takes, or D9M_SWITCH_NO_SAMPLE
 * (a later sample may still be its: d9m_switch_match_sample). */
static inline uint32_t d9m_switch_match_interval(d9m_switch_match *m, uint64_t out, uint64_t in) {
    while (m->nwait && m->wait_ts[m->head] + D9M_SWITCH_STACK_MATCH_NS < out) d9m_switch_match_pop(m);
    m->out = out;
    m->in = in;
    m->open = m->nwait == 0;
    if (m->open) return D9M_SWITCH_NO_SAMPLE;
    uint32_t id = m->wait_id[m->head];
    d9m_switch_match_pop(m);
    return id;
}

/* A sample `id` of the worker at ts: true when the latest interval (m->out, m->in) takes it,
 * else it waits for the next switch-out. */
static inline bool d9m_switch_match_sample(d9m_switch_match *m, uint64_t ts, uint32_t id) {
    if (m->open && ts >= m->out && ts - m->out <= D9M_SWITCH_STACK_MATCH_NS && ts < m->in) {
        m->open = false;
        return true;
    }
    if (m->nwait == D9M_SWITCH_WAITING) d9m_switch_match_pop(m);
    uint8_t at = (uint8_t)((m->head + m->nwait) % D9M_SWITCH_WAITING);
    m->wait_ts[at] = ts;
    m->wait_id[at] = id;
    m->nwait++;
    return false;
}

#endif
