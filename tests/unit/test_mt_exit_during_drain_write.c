/* A thread that exits while the drain's write runs, with drops made after the drain read its
 * count: those drops are its own (buffer_full, its tid), reported by the next drain, never a
 * write_error. The hand-over read the thread's `exited` flag again after the write and took
 * such drops for ones a failed write had lost: test_mt_recorder_accounting under ASan in CI
 * found 66 827 drops of two threads reported as write_error (tid 0). Played without a recorder:
 * the collector's drains are the test's, and the thread "exits" inside the write (pwrite,
 * interposed here), so nothing depends on timing. */
#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>

#include "check.h"
#include "core/collector.h"
#include "core/collector_state.h"
#include "core/thread_buffer.h"
#include "trace_files_util.h"

static d9_thread *_Atomic g_exiting;     /* the thread to "exit" inside the next write */
static _Atomic uint64_t g_drops_in_write; /* ... after making this many more drops */

ssize_t pwrite(int fd, const void *buf, size_t len, off_t off) {
    static ssize_t (*next)(int, const void *, size_t, off_t);
    if (!next) next = (ssize_t (*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, "pwrite");
    d9_thread *t = atomic_exchange(&g_exiting, NULL);
    if (t) {
        atomic_fetch_add(&t->drops_total, atomic_load(&g_drops_in_write));
        atomic_store_explicit(&t->exited, 1, memory_order_release);
    }
    return next(fd, buf, len, off);
}

static void *drop_and_exit(void *arg) {
    (void)arg;
    d9_thread *t = d9_thread_current();
    if (t)
        for (int i = 0; i < 10; i++) d9_thread_make_room(t, 2); /* no budget: each one drops */
    return NULL;
}

/* The thread the test made: the only one with drops. */
static d9_thread *find_dropper(void) {
    size_t n = 0;
    d9_thread **all = d9_threads_snapshot(&n);
    d9_thread *t = NULL;
    for (size_t i = 0; i < n; i++)
        if (atomic_load(&all[i]->drops_total) > 0) t = all[i];
    free(all);
    return t;
}

static bool registered(d9_thread *t) {
    size_t n = 0;
    d9_thread **all = d9_threads_snapshot(&n);
    bool found = false;
    for (size_t i = 0; i < n; i++) found |= all[i] == t;
    free(all);
    return found;
}

/* One drain's end over this thread alone (its ring holds nothing: every event dropped). */
static void drain(d9_collector *c, d9_thread *t) {
    c->threads = malloc(sizeof *c->threads);
    if (!c->threads) return;
    c->threads[0] = t;
    c->thread_count = 1;
    t->c_end = atomic_load(&t->head_pub);
    d9_col_hand_over(c);
}

static uint64_t g_buffer_full, g_write_error, g_other_tid;
static pid_t g_tid;

static bool reason_is(const d9_event *ev, const char *reason) {
    d9_dec_str s;
    return d9_value_str(d9_event_field(ev, "reason"), &s) && s.len == strlen(reason) &&
           memcmp(s.ptr, reason, s.len) == 0;
}

static void on_event(const d9_event *ev, void *ctx) {
    (void)ctx;
    if (!d9t_is(ev, "DroppedEventsEvent")) return;
    uint64_t n = d9t_field_u(ev, "count");
    if (reason_is(ev, "write_error")) g_write_error += n;
    else if (d9t_field_u(ev, "tid") != (uint64_t)g_tid) g_other_tid += n;
    else if (reason_is(ev, "buffer_full")) g_buffer_full += n;
}

int main(void) {
    d9_thread_set_ring_limits(512, 0); /* a budget of 0 bytes: every event drops */
    char *dir = d9t_mkdtemp("exit-in-write");
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    d9_collector_config cc = {.cfg = &cfg, .run_id = "exit-in-write-run", .service = "t",
                              .clock_name = "monotonic"};
    char err[256];
    d9_collector *c = d9_collector_open(&cc, err, sizeof err);
    CHECK(c != NULL);
    if (!c) return d9t_summary("exit_during_drain_write");
    d9_threads_set_collector_running(true);

    pthread_t th;
    CHECK(pthread_create(&th, NULL, drop_and_exit, NULL) == 0);
    pthread_join(th, NULL);
    d9_thread *t = find_dropper();
    CHECK(t != NULL);
    if (!t) return d9t_summary("exit_during_drain_write");
    g_tid = t->tid;
    CHECK_EQ_U64(atomic_load(&t->drops_total), 10);
    /* As the drain saw it: alive, 10 drops. It makes 5 more and exits inside the write. */
    atomic_store(&t->exited, 0);
    atomic_store(&g_drops_in_write, 5);
    atomic_store(&g_exiting, t);
    drain(c, t);
    CHECK(atomic_load(&g_exiting) == NULL); /* the drain wrote (its report of the 10) */
    CHECK_EQ_U64(atomic_load(&t->exited), 1);
    CHECK_EQ_U64(t->c_drops_written, 10);
    CHECK_EQ_U64(c->write_drops_pending, 0); /* no write failed: nothing for write_error */
    CHECK(registered(t));                    /* 5 drops unreported: not freed yet */

    drain(c, t); /* the next drain reports them as the thread's and frees it (t is gone: its
                  * 15 are checked in the trace below) */
    CHECK_EQ_U64(c->write_drops_pending, 0);
    CHECK(!registered(t));

    char run_dir[4096];
    snprintf(run_dir, sizeof run_dir, "%s", d9_collector_run_dir(c));
    d9_collector_close(c, NULL);
    d9_threads_set_collector_running(false);
    CHECK(d9t_decode_run(run_dir, on_event, NULL) == 0);
    CHECK_EQ_U64(g_buffer_full, 15);
    CHECK_EQ_U64(g_write_error, 0);
    CHECK_EQ_U64(g_other_tid, 0);
    d9t_rm_rf(dir);
    free(dir);
    return d9t_summary("exit_during_drain_write");
}
