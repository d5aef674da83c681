/* The application's own release/acquire callbacks (ev_set_loop_release_cb) run once a loop turn
 * behind dial9's, which keep them per thread (ev_loop.c, user_hooks): a change takes effect at
 * the next turn, whether made on the loop's thread or another; a thread that runs two loops
 * calls each loop's own; a loop made after another was destroyed (often at its address) has
 * none of the old loop's. One turn is one ev_run(EVRUN_NOWAIT): one release, one acquire.
 * Recording is not started: the chaining does not depend on it. */
#include <pthread.h>
#include <stdio.h>

#include "check.h"
#include "dial9/ev.h"

enum { HOOKS_A1, HOOKS_A2, HOOKS_A3, HOOKS_B, NHOOKS };
static long released[NHOOKS], acquired[NHOOKS];

#define HOOKS(i)                                                                           \
    static void release_##i(struct ev_loop *l) { (void)l; released[i]++; }              \
    static void acquire_##i(struct ev_loop *l) { (void)l; acquired[i]++; }
HOOKS(HOOKS_A1)
HOOKS(HOOKS_A2)
HOOKS(HOOKS_A3)
HOOKS(HOOKS_B)

static void turns(struct ev_loop *loop, int n) {
    for (int i = 0; i < n; i++) ev_run(loop, EVRUN_NOWAIT);
}

/* Each hook's release and acquire count equal `want`. */
static void expect(const long want[NHOOKS], const char *when) {
    for (int i = 0; i < NHOOKS; i++) {
        if (released[i] == want[i] && acquired[i] == want[i]) continue;
        fprintf(stderr, "%s: hooks %d ran %ld / %ld times, want %ld\n", when, i, released[i],
                acquired[i], want[i]);
        CHECK(0);
    }
}

static struct ev_loop *loop_a;

static void *set_from_another_thread(void *unused) {
    (void)unused;
    ev_set_loop_release_cb(loop_a, release_HOOKS_A3, acquire_HOOKS_A3);
    return NULL;
}

int main(void) {
    loop_a = ev_loop_new(0);
    CHECK(loop_a != NULL);
    ev_set_loop_release_cb(loop_a, release_HOOKS_A1, acquire_HOOKS_A1); /* before dial9's */
    CHECK(d9_ev_instrument(loop_a, "ev-user-hooks-a") == 0);
    turns(loop_a, 3);
    expect((long[NHOOKS]){3, 0, 0, 0}, "set before instrumenting");

    ev_set_loop_release_cb(loop_a, release_HOOKS_A2, acquire_HOOKS_A2); /* behind dial9's */
    turns(loop_a, 2);
    expect((long[NHOOKS]){3, 2, 0, 0}, "changed on the loop's thread");

    pthread_t t;
    CHECK(pthread_create(&t, NULL, set_from_another_thread, NULL) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    turns(loop_a, 1);
    expect((long[NHOOKS]){3, 2, 1, 0}, "changed on another thread");

    struct ev_loop *loop_b = ev_loop_new(0);
    CHECK(loop_b != NULL);
    CHECK(d9_ev_instrument(loop_b, "ev-user-hooks-b") == 0);
    ev_set_loop_release_cb(loop_b, release_HOOKS_B, acquire_HOOKS_B);
    turns(loop_a, 1);
    turns(loop_b, 2);
    turns(loop_a, 1);
    expect((long[NHOOKS]){3, 2, 3, 2}, "two loops on one thread");

    ev_set_loop_release_cb(loop_b, NULL, NULL);
    turns(loop_b, 1);
    turns(loop_a, 1); /* the thread's last loop is loop_a */
    expect((long[NHOOKS]){3, 2, 4, 2}, "hooks taken away");

    /* the next loop, at loop_a's address when the allocator gives it back, has no hooks */
    void *was_a = loop_a;
    ev_loop_destroy(loop_a);
    struct ev_loop *loop_c = ev_loop_new(0);
    CHECK(loop_c != NULL);
    CHECK(d9_ev_instrument(loop_c, "ev-user-hooks-c") == 0);
    turns(loop_c, 2);
    expect((long[NHOOKS]){3, 2, 4, 2}, (void *)loop_c == was_a ? "a new loop at a destroyed one's address"
                                                               : "a new loop");
    printf("loop_c %s loop_a's address\n", (void *)loop_c == was_a ? "took" : "did not take");
    ev_loop_destroy(loop_c);
    ev_loop_destroy(loop_b);
    return d9t_summary("test_ev_user_hooks");
}
