/* What a loop adapter knows about the calling thread: the loop it runs, the poll in progress,
 * and a terminate owed at the end of a task's last poll.
 *
 * Polls never nest in the trace (a poll is the span from PollStart to the next PollEnd on a
 * worker), but callbacks do: libevent's bufferevent read callback runs inside the callback of
 * its internal event, libuv's fs-poll callback inside an internal stat request's. So a
 * callback that starts inside another one ends the outer poll, records its own, and resumes
 * the outer poll when it returns: the time of each callback is attributed exactly once. */
#ifndef D9_ADAPTERS_THREAD_STATE_H
#define D9_ADAPTERS_THREAD_STATE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "dial9/dial9.h"
#include "real_symbol.h"

typedef struct d9a_thread {
    const void *loop;          /* loop whose run function is on this thread's stack, or NULL */
    bool park_on_epoll;        /* epoll_wait outside callbacks is that loop's poll */
    const void *worker_loop;   /* loop whose worker identity this thread carries */
    uint32_t depth;            /* adapter callbacks on the stack */
    uint64_t poll_task;        /* the innermost poll */
    const d9_loc *poll_loc;
    uint64_t owed_terminate;   /* task to terminate when the innermost poll ends (0: none) */
    const void *owed_object;   /* ... the object it stands for */
    const d9_loc *next_loc;    /* location for the callbacks of the next registration */
    const void *last_cb;       /* d9a_loc_for's one-entry cache: the last callback named here */
    const d9_loc *last_cb_loc; /* ... and its location (never NULL while last_cb is set) */
    const void *cache_loop;    /* d9a_loop_recorded's one-entry cache */
    uint32_t cache_gen;
    bool cache_recorded;
    _Atomic bool *cache_wrapped; /* ... and that loop's "trampolines installed" (lazy_wrap.h) */
    _Atomic bool *lazy_wrapped;  /* the running loop's, when its adapter wraps lazily, else NULL */
    void (*lazy_sync)(const void *loop); /* ... and what swaps its trampolines in or out */
    /* The last callback's poll ends at the loop's next park, not at its return (one clock read
     * and one hook for both: d9a_park_owing_end). end_deferrable: this run's poller goes
     * through a wrapper that ends it (the shim's or the adapters' epoll wrapper parked here
     * once); end_owed: a poll's end is owed. */
    bool end_deferrable;
    bool end_owed;
    /* What follows the owed end (meaningful only while end_owed, 0 also then: nothing), one
     * word: D9A_END_THEN_TERMINATE(task), the last callback completed a request or closed a
     * handle, its task's terminate (at the park, one hook call for the end, the terminate and
     * the park: d9__poll_end_terminate_park); D9A_END_UNLESS_NEXT(task), the callback named its
     * task's next callback, located at cont_loc, which then goes on in the same poll
     * (d9a_poll_exit_into: libuv's alloc callback, always followed by its read callback). */
    uint64_t end_after;
    const d9_loc *cont_loc;
    /* The loop's poller returned, and its unpark is owed to what the loop records next: the
     * first callback's poll, one hook call and one clock read with it (d9a_poll_enter), with
     * the turn's one readiness wake, owed_woken (0: none yet). The epoll wrappers owe it with
     * the wake their poller found (d9a_owe_unpark_wake, poll_returned.h); libev, whose ready
     * watchers are fed after its acquire callback, owes it alone (d9a_owe_unpark) and its
     * first fed watcher's wake joins it (d9a_wake_ready_owing_unpark). Any other record of the
     * thread first writes what is owed (d9a_pay_owed_unpark: a spawn, a terminate, a wake, a
     * run's entry or exit, the next poller call). Never set together with end_owed: the park
     * pays that one, a callback's start this one. */
    bool unpark_owed;
    uint64_t owed_woken;
    /* Loop requests submitted in a poll, whose spawn waits for the loop's next park
     * (d9a_defer_spawn: a request that completes before it is a poll of the task that submitted
     * it, libuv's writes): spawned there by deferred_spawn, unless their completion took them out
     * first (d9a_undefer). terminates counts the tasks ended on this thread (recorded or owed):
     * a deferred request whose submitter ended since its submission is spawned at its completion
     * instead, so that no poll of that task follows its end. */
    uint32_t deferred_n;
    uint32_t terminates;
    void (*deferred_spawn)(void *obj);
    void *deferred[8];
} d9a_thread;

extern __thread d9a_thread d9a_self D9A_HIDDEN __attribute__((tls_model("initial-exec")));

#define D9A_END_THEN_TERMINATE(task) ((task) << 1 | 1)
#define D9A_END_UNLESS_NEXT(task) ((task) << 1)

/* Writes the owed unpark (and the ready wake owed with it) alone: out of line, for the turns
 * whose first record is no callback's poll. */
D9A_HIDDEN void d9a_write_owed_unpark(void);

/* The unpark owed to the first ready wake is written alone: another record comes first. */
static inline __attribute__((always_inline)) void d9a_pay_owed_unpark(const d9a_thread *s) {
    if (__builtin_expect(s->unpark_owed, 0)) d9a_write_owed_unpark();
}

/* The poll owed by the last callback ends now (a record that must not fall inside it: its
 * task's terminate, the loop's exit). */
static inline __attribute__((always_inline)) void d9a_end_owed_poll(d9a_thread *s) {
    if (__builtin_expect(s->end_owed, 0)) {
        uint64_t after = s->end_after;
        s->end_owed = false;
        s->end_after = 0;
        if (after & 1) d9_poll_end_terminate(after >> 1);
        else d9_poll_end();
    }
}

/* The loop parks with deferred spawns (d9a_defer_spawn) still pending: the owed poll's end (and
 * terminate), those requests' spawns, then the park (out of line: a request that did not
 * complete within its loop iteration, a write waiting for the socket). */
D9A_HIDDEN void d9a_park_spawning_deferred(void);

/* The loop's poller is about to be called (its wrapper, outside callbacks): the poll the last
 * callback owes ends here, with the park when the call parks (`park`: recording and it may
 * block), at one clock read (d9__poll_end_park); a call that does not park ends it alone. From
 * now on this run's callbacks may owe their end to the poller. */
static inline __attribute__((always_inline)) void d9a_park_owing_end(bool park) {
    d9a_thread *s = &d9a_self;
    if (__builtin_expect(s->deferred_n != 0, 0) && park) {
        d9a_park_spawning_deferred();
        return;
    }
    if (s->end_owed) { /* set only where end_deferrable is */
        uint64_t after = s->end_after;
        s->end_owed = false;
        s->end_after = 0;
        if (after & 1) {
            if (park) d9__poll_end_terminate_park(after >> 1);
            else d9_poll_end_terminate(after >> 1);
        } else {
            if (park) d9__poll_end_park();
            else d9_poll_end();
        }
    } else {
        d9a_pay_owed_unpark(s); /* a turn that ran no callback */
        s->end_deferrable = true;
        if (park) d9__park();
    }
}

/* The loop's poller returned, before the loop hands out what it found ready (libev's acquire
 * callback, outside callbacks): the unpark waits for the first callback's poll, with the first
 * ready wake (d9a_wake_ready_owing_unpark), to be one hook call at one clock read. Recording,
 * that is: a pause owes the end of a park it saw begin now (d9_unpark's paused path). */
static inline void d9a_owe_unpark(void) {
    if (D9__ACTIVE()) d9a_self.unpark_owed = true;
    else d9_unpark();
}

/* The loop's poller returned (it parked, recording) and found task `woken` ready (0: none), the
 * only readiness wake of this return: the unpark and that wake wait for the first callback's
 * poll (d9a_poll_enter), to be one hook call and one clock read with it. */
static inline void d9a_owe_unpark_wake(uint64_t woken) {
    d9a_thread *s = &d9a_self;
    s->unpark_owed = true;
    s->owed_woken = woken;
}

/* The loop found task `task` (not 0) ready (its poller returned): the turn's first readiness
 * wake joins the owed unpark, and both wait for the first callback's poll (d9a_poll_enter: one
 * hook call and one clock read for the three records), as d9a_owe_unpark_wake's; a second wake
 * writes them first (d9_unpark_wake_ready), then itself. */
static inline void d9a_wake_ready_owing_unpark(uint64_t task) {
    d9a_thread *s = &d9a_self;
    if (s->unpark_owed) {
        if (!s->owed_woken) {
            s->owed_woken = task;
            return;
        }
        d9a_write_owed_unpark();
    }
    d9_wake_ready(task);
}

/* The poll owed by the last callback ends, with what its end_after says after it (a terminate),
 * and task `task`'s poll begins at `loc` (out of line: a callback after a request's completion
 * in one iteration, or after an alloc callback not followed by its read callback). */
D9A_HIDDEN void d9a_end_then_begin(uint64_t task, const d9_loc *loc);

/* What a callback's trampoline keeps across the application's callback. A callback that starts
 * outside any other (depth 0: every callback of a loop turn) finds the thread's poll state at
 * rest (no poll, no terminate owed) and leaves it so, which it need not save: only a nested
 * one keeps the outer poll to resume (task, loc, owed_*), out of line (d9a_enter_nested). */
enum { D9A_FRAME_OFF, D9A_FRAME_TOP, D9A_FRAME_NESTED };
typedef struct d9a_frame {
    /* decided at entry, one byte the exit tests once: D9A_FRAME_OFF, the recorder was off
     * (nothing tracked); D9A_FRAME_TOP, recording, outside any other callback; D9A_FRAME_NESTED,
     * recording, inside another callback: the rest is kept */
    uint8_t how;
    uint64_t task;
    const d9_loc *loc;
    uint64_t owed_terminate;
    const void *owed_object;
} d9a_frame;

/* The nested callback's entry and exit (out of line: libuv's pool completions, libevent's
 * bufferevents, the rare callback run inside another): the outer poll ends where this one
 * begins and resumes where it ends, at one clock read each. */
D9A_HIDDEN void d9a_enter_nested(d9a_frame *f, uint64_t task, const d9_loc *loc);
D9A_HIDDEN void d9a_exit_nested(const d9a_frame *f);

/* While the recorder is off a callback costs finding its callback and nothing else. If it
 * starts during a callback, nested callbacks see depth 0 and record normally. Always inlined,
 * as d9a_poll_exit (gcc otherwise keeps a copy out of line for the adapters with many
 * trampolines: a call and its saved registers per callback). Recording was tested here, so the
 * hooks are called without their wrappers' test of it again. */
static inline __attribute__((always_inline)) void d9a_poll_enter(d9a_frame *f, uint64_t task, const d9_loc *loc) {
    if (!D9__ACTIVE()) {
        f->how = D9A_FRAME_OFF;
        return;
    }
    f->how = D9A_FRAME_TOP;
    d9a_thread *s = &d9a_self;
    if (__builtin_expect(s->depth != 0, 0)) {
        d9a_enter_nested(f, task, loc);
        return;
    }
    /* at rest: owed_terminate 0 (what d9a_continued_task and d9a_spawn read); the end owed by
     * a callback before goes with this begin (one loop iteration running callbacks back to
     * back), unless that callback named this one as its continuation (d9a_poll_exit_into):
     * then its poll goes on, nothing recorded */
    s->depth = 1;
    s->poll_task = task;
    s->poll_loc = loc;
    if (s->end_owed) {
        uint64_t after = s->end_after;
        s->end_owed = false;
        if (__builtin_expect(after == 0, 1)) {
            d9__poll_end_begin(task, loc);
        } else if (after == D9A_END_UNLESS_NEXT(task) && s->cont_loc == loc) {
            s->end_after = 0; /* the poll goes on */
        } else {
            d9a_end_then_begin(task, loc);
        }
    } else if (s->unpark_owed) { /* the first callback since the poller returned */
        uint64_t woken = s->owed_woken;
        s->unpark_owed = false;
        s->owed_woken = 0;
        d9__unpark_wake_ready_poll_begin(woken, task, loc);
    } else {
        d9__poll_begin(task, loc);
    }
}

/* always inline: out of line (as gcc chose for the adapters with many trampolines) the call,
 * its saved registers and a second test of the frame cost ~15 instructions per callback.
 * `into`: true when the callback that returns says which callback of its task comes next (the
 * poll's task and location, d9a_poll_exit_into); a constant in each caller. The callback may
 * have stopped the recording: the hooks' wrappers test it again. */
static inline __attribute__((always_inline)) void d9a_poll_exit_body(const d9a_frame *f, bool into) {
    if (__builtin_expect(f->how != D9A_FRAME_TOP, 0)) {
        if (f->how == D9A_FRAME_NESTED) d9a_exit_nested(f);
        return;
    }
    d9a_thread *s = &d9a_self;
    uint64_t owed = s->owed_terminate;
    uint64_t task = s->poll_task;
    const d9_loc *loc = s->poll_loc;
    s->depth = 0; /* back at rest */
    s->owed_terminate = 0;
    s->owed_object = NULL;
    s->poll_task = 0;
    s->poll_loc = NULL;
    if (s->end_deferrable) {
        /* the loop's next poller call ends it, with its park (d9a_park_owing_end), and the
         * terminate owed after it there too */
        s->end_owed = true;
        s->end_after = owed ? D9A_END_THEN_TERMINATE(owed) : into ? D9A_END_UNLESS_NEXT(task) : 0;
        if (into) s->cont_loc = loc;
    } else if (owed) {
        d9_poll_end_terminate(owed);
    } else {
        d9_poll_end();
    }
}

static inline __attribute__((always_inline)) void d9a_poll_exit(const d9a_frame *f) { d9a_poll_exit_body(f, false); }

/* The callback returns into another callback of its task, which the library always calls next
 * (libuv's alloc callback, then its read callback): the poll, opened at that next callback's
 * location, goes on through it, one poll for the two (d9a_poll_enter). Nested, or where the
 * end cannot be owed, as d9a_poll_exit. */
static inline __attribute__((always_inline)) void d9a_poll_exit_into(const d9a_frame *f) { d9a_poll_exit_body(f, true); }

/* The poll in progress is the last one of its task (a request completes, a handle's close
 * callback runs): its terminate is recorded right after the poll ends, unless the callback
 * registers the same object again, which then simply goes on as the same task. */
static inline void d9a_owe_terminate(const d9a_frame *f, const void *obj) {
    d9a_self.terminates++; /* recording or not: the task ends (d9a_defer_spawn) */
    if (f->how == D9A_FRAME_OFF) return;
    d9a_self.owed_terminate = d9a_self.poll_task;
    d9a_self.owed_object = obj;
}

/* The object of the poll in progress is gone for good (a libuv handle's close callback): a
 * registration of the same address from here on is a new task. */
static inline void d9a_no_continuation(const d9a_frame *f) {
    if (f->how != D9A_FRAME_OFF) d9a_self.owed_object = NULL;
}

/* The task a new registration of `obj` gets: the one whose last poll is running, when the
 * callback registers the same object again (the task goes on), else 0 (a new id). */
static inline uint64_t d9a_continued_task(const void *obj) {
    const d9a_thread *s = &d9a_self;
    return s->owed_terminate && s->owed_object == obj ? s->owed_terminate : 0;
}

/* The entry of `obj` now holds task `task`: a spawn, unless it goes on as the task whose
 * terminate was owed. */
static inline void d9a_spawn(const void *obj, uint64_t task, const d9_loc *loc) {
    d9a_thread *s = &d9a_self;
    d9a_pay_owed_unpark(s);
    d9a_end_owed_poll(s);
    if (s->owed_terminate == task && s->owed_object == obj) {
        s->owed_terminate = 0;
        s->owed_object = NULL;
        return;
    }
    d9_task_spawn_object(task, loc, obj);
}

/* Task `task` of `obj` ends. From inside its own callback the terminate waits for the end of
 * the poll. */
static inline void d9a_terminate(const void *obj, uint64_t task) {
    d9a_thread *s = &d9a_self;
    if (!task) return;
    s->terminates++; /* d9a_defer_spawn */
    if (s->depth && s->poll_task == task) {
        s->owed_terminate = task;
        s->owed_object = obj;
        return;
    }
    d9a_pay_owed_unpark(s);
    d9a_end_owed_poll(s); /* a task's terminate never inside its poll */
    d9_task_terminate(task);
}

/* A request `obj` of `loop` submitted now, whose completion the loop calls back on this thread:
 * true when its spawn waits for the loop's next park (the caller then records nothing and keeps
 * *issuer, the task whose poll submits it, and *issued_at for d9a_deferred_task). A request
 * that completes before that park (a libuv write the socket took at once: its callback runs in
 * the loop's next iteration, before the poller) is a poll of its submitter there, located at
 * its callback; one still pending at the park is spawned there (d9a_park_spawning_deferred), as
 * its own task, and ends after its callback as before. Only inside a recorded poll of this
 * loop's run, whose poller a wrapper parks (end_deferrable), by a task whose poll is not its
 * last (no terminate owed), with room in the thread's list; else false: spawned now. */
static inline bool d9a_defer_spawn(void *obj, const void *loop, void (*spawn)(void *obj),
                                   uint64_t *issuer, uint64_t *issued_at) {
    d9a_thread *s = &d9a_self;
    if (!s->depth || s->loop != loop || !s->end_deferrable || s->owed_terminate ||
        s->deferred_n == sizeof s->deferred / sizeof s->deferred[0])
        return false;
    s->deferred[s->deferred_n++] = obj;
    s->deferred_spawn = spawn;
    *issuer = s->poll_task;
    *issued_at = s->terminates;
    return true;
}

/* Request `obj`, whose spawn was deferred, completes (or its submission failed): out of the
 * thread's list. */
static inline void d9a_undefer(const void *obj) {
    d9a_thread *s = &d9a_self;
    for (uint32_t i = s->deferred_n; i-- > 0;) {
        if (s->deferred[i] == obj) {
            s->deferred[i] = s->deferred[--s->deferred_n];
            return;
        }
    }
}

/* The task a deferred request's completion callback is a poll of: its submitter `issuer`, unless
 * a task ended on this thread since its submission (`issued_at`: that may be the submitter),
 * then 0 (the caller spawns the request as its own task now). */
static inline uint64_t d9a_deferred_task(uint64_t issuer, uint64_t issued_at) {
    return d9a_self.terminates == (uint32_t)issued_at ? issuer : 0;
}

/* A loop's run function (uv_run, event_base_loop, ev_run) is entered / left on this thread.
 * Entered from inside a callback (a nested loop), the outer poll is ended first and resumed
 * on the way out, like a nested callback. */
typedef struct d9a_run_scope {
    const void *loop;
    bool park_on_epoll;
    uint32_t depth;
    d9a_frame frame;
    _Atomic bool *lazy_wrapped;
    void (*lazy_sync)(const void *loop);
} d9a_run_scope;

static inline void d9a_run_enter(d9a_run_scope *sc, const void *loop, bool park_on_epoll) {
    d9a_thread *s = &d9a_self;
    d9a_pay_owed_unpark(s);
    d9a_end_owed_poll(s);
    s->end_deferrable = false; /* until this run's poller wrapper says it ends owed polls */
    sc->loop = s->loop;
    sc->park_on_epoll = s->park_on_epoll;
    sc->depth = s->depth;
    sc->frame.task = s->poll_task;
    sc->frame.loc = s->poll_loc;
    sc->frame.owed_terminate = s->owed_terminate;
    sc->frame.owed_object = s->owed_object;
    sc->lazy_wrapped = s->lazy_wrapped;
    sc->lazy_sync = s->lazy_sync;
    if (s->depth) d9_poll_end();
    s->depth = 0;
    s->poll_task = 0;
    s->poll_loc = NULL;
    s->owed_terminate = 0;
    s->owed_object = NULL;
    s->loop = loop;
    s->park_on_epoll = park_on_epoll;
    s->lazy_wrapped = NULL; /* the adapter sets it after entering, if it wraps lazily */
    s->lazy_sync = NULL;
}

static inline void d9a_run_exit(const d9a_run_scope *sc) {
    d9a_thread *s = &d9a_self;
    d9a_pay_owed_unpark(s); /* a last turn that ran no callback */
    d9a_end_owed_poll(s); /* the run's last poll ends before the loop returns */
    s->end_deferrable = false;
    s->loop = sc->loop;
    s->park_on_epoll = sc->park_on_epoll;
    s->depth = sc->depth;
    s->poll_task = sc->frame.task;
    s->poll_loc = sc->frame.loc;
    s->owed_terminate = sc->frame.owed_terminate;
    s->owed_object = sc->frame.owed_object;
    s->lazy_wrapped = sc->lazy_wrapped;
    s->lazy_sync = sc->lazy_sync;
    if (s->depth) d9_poll_begin(s->poll_task, s->poll_loc);
}

/* A callback whose side-table entry is missing: cannot happen unless the table was corrupted;
 * says so once on stderr (the callback cannot be called: its address is lost). */
D9A_HIDDEN void d9a_lost_callback(const void *object);

#endif
