/* Wake linking, written once for every reader of the trace model (analysis/ and export/):
 * which poll a wake led to, and how long the woken task waited for it.
 *
 * The rule follows dial9 (and the viewer): a wake of a task leads to that task's first poll
 * that starts at or after it; several wakes before one poll all lead to that poll. The task was
 * runnable from the first of them, or from the end of its previous poll when that wake came
 * while the poll still ran (the task could not run again before), and the wake-to-poll delay
 * runs from then to the poll's start.
 *
 * A task's wakes and polls come in time order, a wake before a poll of the same timestamp:
 * the analysis feeds them from its time-ordered records, the export per task after sorting.
 * The state is a small struct per task, kept by the reader next to its own per-task data.
 * Inline: the analysis runs it for every poll. */
#ifndef D9_MODEL_WAKE_LINK_H
#define D9_MODEL_WAKE_LINK_H

#include <stdbool.h>
#include <stdint.h>

/* 20 bytes, 4-aligned (no tail padding): the analysis keeps one in each task's record, and
 * the padding made every record 8 bytes larger (measurably slower to create and reuse). */
typedef struct __attribute__((packed, aligned(4))) d9m_wake_state {
    uint64_t first_wake;    /* the first wake since the task's last poll started (wakes > 0) */
    uint64_t last_poll_end; /* the end of the task's last poll (0 before the first) */
    uint32_t wakes;         /* wakes since the task's last poll started: 0 = none pending */
} d9m_wake_state;

/* What a poll the pending wakes led to says about them. */
typedef struct d9m_wake_link {
    uint64_t runnable_since; /* the first wake, or the end of the poll it came during */
    uint64_t delay_ns;       /* from runnable_since to the poll's start (0 when that poll
                              * started first: polls of one task overlapping) */
    uint32_t wakes;          /* how many wakes led to the poll */
} d9m_wake_link;

/* A wake of the state's task at ts. */
static inline void d9m_wake_note(d9m_wake_state *s, uint64_t ts) {
    if (s->wakes++ == 0) s->first_wake = ts;
}

/* True while some wake of the task waits for its poll. */
static inline bool d9m_wake_pending(const d9m_wake_state *s) { return s->wakes > 0; }

/* A poll of the state's task, from start to end: true when it is the poll the pending wakes
 * led to (it starts at or after the first of them), with what the link says in *link; those
 * wakes are then consumed. A poll that starts before them (the analysis's late records) leaves
 * them pending. Either way it is the task's latest poll from now on. */
static inline bool d9m_wake_poll(d9m_wake_state *s, uint64_t start, uint64_t end,
                                 d9m_wake_link *link) {
    bool linked = s->wakes > 0 && start >= s->first_wake;
    if (linked) {
        uint64_t since = s->first_wake > s->last_poll_end ? s->first_wake : s->last_poll_end;
        *link = (d9m_wake_link){.runnable_since = since,
                                .delay_ns = start > since ? start - since : 0,
                                .wakes = s->wakes};
        s->wakes = 0;
    }
    s->last_poll_end = end;
    return linked;
}

#endif
