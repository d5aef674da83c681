/* The adapters' poll stack (thread_state.h) without a loop library, on one thread: a callback
 * outside any other keeps no frame (the thread's poll state is at rest there and is left so),
 * a callback inside another ends the outer poll where it begins and resumes it where it ends
 * (d9a_enter_nested, d9a_exit_nested), and a terminate owed inside a nested callback comes
 * between its poll's end and the outer poll's resumption. Polls never nest in the trace:
 *   A { B }           -> polls A, B, A
 *   C { D, its last } -> polls C, D, C; D terminates between D's end and C's resumption
 *   E { F { G } }     -> polls E, F, G, F, E
 *   H, its last       -> poll H, then its terminate; the state at rest afterwards (a new
 *                        registration of H's object is a new task)
 * Everything runs on the test's thread in program order: nothing depends on timing. */
#include <stdlib.h>
#include <string.h>

#include "adapter_trace.h"
#include "check.h"
#include "thread_state.h"

#define WORKER "nested"

static uint64_t task_a, task_b, task_c, task_d, task_e, task_f, task_g, task_h;
static int obj_d, obj_h; /* the objects of the tasks that end (their addresses) */

static void callback(uint64_t task, const char *name, void (*inner)(void), const void *last_of) {
    d9a_frame f;
    d9a_poll_enter(&f, task, d9_loc_intern(name));
    if (last_of) {
        d9a_owe_terminate(&f, last_of);
        /* while its last poll runs, a registration of the object would go on as the same task */
        CHECK_EQ_U64(d9a_continued_task(last_of), task);
    }
    if (inner) inner();
    d9a_poll_exit(&f);
}

static void run_b(void) { callback(task_b, "cb_b", NULL, NULL); }
static void run_d(void) { callback(task_d, "cb_d", NULL, &obj_d); }
static void run_g(void) { callback(task_g, "cb_g", NULL, NULL); }
static void run_f(void) { callback(task_f, "cb_f", run_g, NULL); }

static bool at_rest(void) {
    const d9a_thread *s = &d9a_self;
    return s->depth == 0 && s->poll_task == 0 && s->owed_terminate == 0;
}

int main(void) {
    char *dir = at_mkdtemp("nested-polls");
    CHECK(dir != NULL);
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    CHECK(d9_start(&cfg) == 0);
    d9_worker_begin(WORKER, 0);
    uint64_t *tasks[] = {&task_a, &task_b, &task_c, &task_d, &task_e, &task_f, &task_g, &task_h};
    for (size_t i = 0; i < sizeof tasks / sizeof tasks[0]; i++) {
        *tasks[i] = d9_task_id_new();
        d9_task_spawn(*tasks[i], D9_HERE);
    }

    callback(task_a, "cb_a", run_b, NULL);
    CHECK(at_rest());
    callback(task_c, "cb_c", run_d, NULL);
    CHECK(at_rest());
    CHECK_EQ_U64(d9a_continued_task(&obj_d), 0); /* D ended: its object's next task is new */
    callback(task_e, "cb_e", run_f, NULL);
    CHECK(at_rest());
    callback(task_h, "cb_h", NULL, &obj_h);
    CHECK(at_rest());
    CHECK_EQ_U64(d9a_continued_task(&obj_h), 0);
    d9_stop();

    at_trace t;
    CHECK(at_load(d9_run_dir(), &t) == 0);
    CHECK_EQ_U64(t.nesting_errors, 0);
    CHECK_EQ_U64(t.open_polls, 0);
    const uint64_t want[] = {task_a, task_b, task_a, task_c, task_d, task_c,
                             task_e, task_f, task_g, task_f, task_e, task_h};
    const char *want_loc[] = {"cb_a", "cb_b", "cb_a", "cb_c", "cb_d", "cb_c",
                              "cb_e", "cb_f", "cb_g", "cb_f", "cb_e", "cb_h"};
    const size_t n = sizeof want / sizeof want[0];
    CHECK_EQ_U64(t.npolls, n);
    for (size_t i = 0; i < n && i < t.npolls; i++) {
        CHECK_EQ_U64(t.polls[i].task, want[i]);
        CHECK_STR(t.polls[i].loc, want_loc[i]);
        if (i) CHECK(t.polls[i].start_ns >= t.polls[i - 1].end_ns);
    }
    /* the ending tasks: one terminate each, D's between its poll's end and C's resumption */
    CHECK_EQ_U64(at_terminates(&t, task_d), 1);
    CHECK_EQ_U64(at_terminates(&t, task_h), 1);
    for (size_t k = 0; k < t.nterminates; k++) {
        if (t.terminates[k].task != task_d || t.npolls != n) continue;
        CHECK(t.terminates[k].ts_ns >= t.polls[4].end_ns);
        CHECK(t.terminates[k].ts_ns <= t.polls[5].start_ns);
    }
    at_free(&t);
    if (!d9t_failed) at_remove_tree(dir);
    free(dir);
    return d9t_summary("test_adapter_nested_polls");
}
