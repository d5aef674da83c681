#include "thread_state.h"

#include <stdatomic.h>
#include <stdio.h>

__thread d9a_thread d9a_self __attribute__((tls_model("initial-exec")));

void d9a_write_owed_unpark(void) {
    d9a_thread *s = &d9a_self;
    uint64_t woken = s->owed_woken;
    s->unpark_owed = false;
    s->owed_woken = 0;
    d9_unpark_wake_ready(woken); /* d9_unpark when 0; paused, the end of a recorded park */
}

void d9a_lost_callback(const void *object) {
    static atomic_flag said = ATOMIC_FLAG_INIT;
    if (!atomic_flag_test_and_set(&said))
        fprintf(stderr, "dial9: no callback recorded for %p; the call is dropped\n", object);
}

void d9a_end_then_begin(uint64_t task, const d9_loc *loc) {
    d9a_thread *s = &d9a_self;
    uint64_t after = s->end_after;
    s->end_after = 0;
    if (after & 1) {
        d9_poll_end_terminate(after >> 1);
        d9_poll_begin(task, loc);
    } else {
        d9_poll_end_begin(task, loc);
    }
}

void d9a_park_spawning_deferred(void) {
    d9a_thread *s = &d9a_self;
    d9a_end_owed_poll(s); /* with its terminate: the spawns are no poll's */
    d9a_pay_owed_unpark(s);
    s->end_deferrable = true;
    for (uint32_t i = 0; i < s->deferred_n; i++) s->deferred_spawn(s->deferred[i]);
    s->deferred_n = 0;
    d9__park(); /* recording: the caller's `park` */
}

void d9a_enter_nested(d9a_frame *f, uint64_t task, const d9_loc *loc) {
    d9a_thread *s = &d9a_self;
    f->how = D9A_FRAME_NESTED;
    f->task = s->poll_task;
    f->loc = s->poll_loc;
    f->owed_terminate = s->owed_terminate;
    f->owed_object = s->owed_object;
    s->depth++;
    s->poll_task = task;
    s->poll_loc = loc;
    s->owed_terminate = 0;
    s->owed_object = NULL;
    /* the outer poll ends where this one begins, at one clock read (never with a poll's end
     * owed: that is paid before any callback of the loop's starts) */
    s->end_owed = false; /* the adapters owe none here (above); cleared as always, for the shim's flag */
    d9_poll_end_begin(task, loc);
}

void d9a_exit_nested(const d9a_frame *f) {
    d9a_thread *s = &d9a_self;
    uint64_t owed = s->owed_terminate;
    s->owed_terminate = f->owed_terminate;
    s->owed_object = f->owed_object;
    s->poll_task = f->task;
    s->poll_loc = f->loc;
    s->depth--;
    if (owed) { /* the terminate goes between this poll's end and the outer one's resumption */
        d9_poll_end_terminate(owed); /* one clock read for both */
        d9_poll_begin(f->task, f->loc);
    } else {
        d9_poll_end_begin(f->task, f->loc); /* the outer poll resumes: one clock read */
    }
}
