#include "model/pairing.h"

#include <string.h>

static uint64_t uint_or(const d9_event *ev, int index, uint64_t dflt) {
    uint64_t v;
    return index >= 0 && d9_value_uint(&ev->values[index], &v) ? v : dflt;
}

bool d9m_mark_read(const d9_event *ev, d9m_mark *k) {
    const d9_dec_binding *b = &ev->schema->bind;
    const int16_t *f = b->field;
    memset(k, 0, sizeof *k);
    switch (b->role) {
    case D9_SCH_POLL_START: k->kind = D9M_POLL_START; break;
    case D9_SCH_POLL_END: k->kind = D9M_POLL_END; break;
    case D9_SCH_WORKER_PARK: k->kind = D9M_PARK; break;
    case D9_SCH_WORKER_UNPARK: k->kind = D9M_UNPARK; break;
    default: return false;
    }
    k->ts = ev->ts_ns;
    k->worker_id = uint_or(ev, f[D9_KF_WORKER_ID], D9_WORKER_NONE);
    if (k->kind == D9M_POLL_END) return true;
    uint64_t queue = uint_or(ev, f[D9_KF_LOCAL_QUEUE], 0);
    k->queue = queue > UINT32_MAX ? UINT32_MAX : (uint32_t)queue;
    if (k->kind == D9M_POLL_START) {
        k->task = uint_or(ev, f[D9_KF_TASK_ID], 0);
        return true;
    }
    k->tid = uint_or(ev, f[D9_KF_TID], 0);
    k->cpu_ns = uint_or(ev, f[D9_KF_CPU_TIME_NS], 0);
    k->has_cpu = k->cpu_ns != 0;
    if (k->kind == D9M_UNPARK && f[D9_KF_SCHED_WAIT_NS] >= 0 &&
        d9_value_uint(&ev->values[f[D9_KF_SCHED_WAIT_NS]], &k->sched_wait_ns)) {
        k->has_sched_wait_field = true;
        k->has_sched_wait = k->sched_wait_ns != 0 || k->has_cpu;
    }
    return true;
}

d9m_pair_result d9m_pair(d9m_pair_state *s, const d9m_mark *k, d9m_mark *start) {
    bool poll = k->kind == D9M_POLL_START || k->kind == D9M_POLL_END;
    bool *open = poll ? &s->in_poll : &s->parked;
    d9m_mark *held = poll ? &s->poll : &s->park;
    if (d9m_mark_is_start(k)) {
        bool was_open = *open;
        *open = true;
        *held = *k;
        return was_open ? D9M_PAIR_REOPENED : D9M_PAIR_OPENED;
    }
    if (!*open) return D9M_PAIR_STRAY_END;
    *open = false;
    *start = *held;
    return D9M_PAIR_CLOSED;
}
