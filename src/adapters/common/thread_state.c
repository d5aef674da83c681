#include "thread_state.h"

#include <stdatomic.h>
#include <stdio.h>

__thread d9a_thread d9a_self __attribute__((tls_model("initial-exec")));

void d9a_write_owed_unpark(void) {
    d9a_self.unpark_owed = false;
    d9_unpark();
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
