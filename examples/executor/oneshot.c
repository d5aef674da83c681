#include "oneshot.h"

enum { EMPTY, WAITING, FULL };

void ex_oneshot_init(ex_oneshot *ch) {
    atomic_init(&ch->state, EMPTY);
    ch->value = 0;
    ch->waiter = (ex_waker){0};
}

bool ex_oneshot_poll(ex_oneshot *ch, ex_task *self, uint64_t *value) {
    int s = atomic_load(&ch->state);
    if (s == EMPTY) {
        ch->waiter = ex_task_waker(self);
        if (atomic_compare_exchange_strong(&ch->state, &s, WAITING)) return false;
        /* The value arrived meanwhile (s is now FULL): we will not need the waker. */
        ex_waker_drop(ch->waiter);
        ch->waiter = (ex_waker){0};
    }
    if (s == WAITING) return false; /* polled again before the value came: keep waiting */
    *value = ch->value;
    return true;
}

void ex_oneshot_send(ex_oneshot *ch, uint64_t value) {
    ch->value = value;
    int s = atomic_load(&ch->state);
    for (;;) {
        if (s == WAITING) {
            /* Copy the waker first: once FULL is visible the receiver may free `ch`. While
             * the state is WAITING the receiver never touches the waker, so this is safe. */
            ex_waker w = ch->waiter;
            if (atomic_compare_exchange_strong(&ch->state, &s, FULL)) {
                ex_wake(w);
                return;
            }
        } else if (atomic_compare_exchange_strong(&ch->state, &s, FULL)) {
            return; /* nobody waits yet: the receiver finds the value on its next poll */
        }
    }
}
