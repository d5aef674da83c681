/* DIAL9_THREAD_CPU=lazy (core/thread_cpu_clock_lazy.h): a thread opens its task-clock page only
 * at the end of its first poll of DIAL9_POLL_CPU_MIN_US or more, and says what that poll lacks.
 *
 * Time is the test's: the recorded threads' CLOCK_MONOTONIC (the recorder's clock here) is a
 * thread-local value the test moves on (clock_gettime interposed), so "short" and "long" polls
 * are exactly as long as written, whatever the machine's load. Per thread:
 *   - rounds of short polls (unpark, polls of 20 us and one of 999 us, park): no page, the
 *     thread still lazy, no PollCpuEvent (decided at each end inline: poll_cpu.h);
 *   - thread A: a 2 ms poll whose end is owed to the park (d9__poll_end_park, as the adapters and
 *     the shim end a loop's last callback); thread B (after A): a poll of the threshold exactly
 *     (1 ms) ended by d9_poll_end,
 *     then d9_park: each has its page after it, the long poll's PollCpuEvent right after its end
 *     says exact false (unknown, never taken for a poll without a switch), a ThreadCpuPageEvent
 *     marks the page;
 *   - then a 2 ms poll with a real sleep inside (a switch the page sees): its PollCpuEvent is
 *     exact;
 *   - thread A only: 1.5 s later (no long poll since: quiet), a park after a real sleep (a switch,
 *     the park's slow path) closes the page again (a ThreadCpuPageEvent with open false), and
 *     the next 2 ms poll is said unknown and reopens it.
 * The metadata says lazy in thread_cpu_clock and poll_cpu. Skips where perf refuses the page. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "core/poll_cpu.h"
#include "core/thread_cpu_clock.h"
#include "core/thread_cpu_clock_lazy.h"
#include "poll_cpu_test_util.h"

/* ---- the recorded threads' clock ---- */
static __thread bool t_fake;       /* this thread's CLOCK_MONOTONIC is t_fake_ns */
static __thread uint64_t t_fake_ns;

int clock_gettime(clockid_t id, struct timespec *ts) {
    if (id == CLOCK_MONOTONIC && t_fake) {
        ts->tv_sec = (time_t)(t_fake_ns / 1000000000u);
        ts->tv_nsec = (long)(t_fake_ns % 1000000000u);
        return 0;
    }
    return (int)syscall(SYS_clock_gettime, id, ts);
}

static void fake_clock_start(void) {
    struct timespec ts;
    syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
    t_fake_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    t_fake = true;
}

static void advance_us(uint64_t us) { t_fake_ns += us * 1000u; }

#define SHORT_ROUNDS 5
#define SHORT_POLLS 5
#define LONG_US 2000  /* over DIAL9_POLL_CPU_MIN_US=1000 */

/* What one thread saw of itself while it ran (checked on the main thread). */
typedef struct lazy_run {
    bool ends_with_park; /* its long poll's end owed to the park (d9__poll_end_park) */
    uint32_t worker;
    bool lazy_after_short, page_after_short, lazy_after_long, page_after_long;
    uint32_t pages_after_long;
    bool lazy_after_quiet, page_after_reopen; /* thread A */
    uint32_t closes_after_quiet;
} lazy_run;

static void short_rounds(void) {
    for (int round = 0; round < SHORT_ROUNDS; round++) {
        d9_unpark();
        for (int i = 0; i < SHORT_POLLS; i++) {
            d9_poll_begin(100 + (uint64_t)i, D9_HERE);
            advance_us(round == 0 && i == 2 ? 999 : 20); /* one just short of the threshold */
            if (i == SHORT_POLLS - 1 && round % 2 == 0) {
                d9__poll_end_park(); /* both ways a loop's last poll ends */
                break;
            }
            d9_poll_end();
            advance_us(5);
        }
        if (round % 2) d9_park();
        advance_us(500); /* asleep in the poller: not an active period */
    }
}

static void *run_thread(void *arg) {
    lazy_run *run = arg;
    fake_clock_start();
    run->worker = d9_worker_begin("lazy", run->ends_with_park ? 0 : 1);
    short_rounds();
    run->lazy_after_short = d9_tcc_lazy_thread();
    run->page_after_short = d9_thread_cpu_clock_fd() >= 0;
    /* the long poll, the page's trigger */
    d9_unpark();
    d9_poll_begin(7, D9_HERE);
    advance_us(run->ends_with_park ? LONG_US : 1000); /* B's: the threshold exactly, long */
    if (run->ends_with_park) {
        d9__poll_end_park();
    } else {
        d9_poll_end();
        advance_us(5);
        d9_park();
    }
    run->lazy_after_long = d9_tcc_lazy_thread();
    run->page_after_long = d9_thread_cpu_clock_fd() >= 0;
    run->pages_after_long = d9_tcc_lazy_pages();
    /* a long poll with a switch inside, on the page now */
    advance_us(500);
    d9_unpark();
    d9_poll_begin(8, D9_HERE);
    advance_us(LONG_US);
    usleep(2000); /* a sleep: switched out and in */
    d9_poll_end();
    d9_park();
    if (run->ends_with_park) { /* quiet, then closed at a park after a switch; reopened */
        advance_us(1500000);
        d9_unpark();
        d9_poll_begin(9, D9_HERE);
        advance_us(20);
        d9_poll_end();
        usleep(1000); /* a switch: the park after it takes the slow path */
        d9_park();
        run->lazy_after_quiet = d9_tcc_lazy_thread();
        run->closes_after_quiet = d9_tcc_lazy_closes();
        advance_us(500);
        d9_unpark();
        d9_poll_begin(10, D9_HERE);
        advance_us(LONG_US);
        d9_poll_end();
        d9_park();
        run->page_after_reopen = d9_thread_cpu_clock_fd() >= 0;
    }
    d9_worker_end();
    t_fake = false;
    return NULL;
}

typedef struct seen {
    pct_seen polls[2];
    int page_opens[2], page_closes[2];
    char thread_cpu_meta[400], poll_cpu_meta[400];
} seen;

static void meta_entry(const d9_event *ev, const char *key, char *out, size_t size) {
    const d9_value *m = d9_event_field(ev, "entries");
    size_t len = strlen(key);
    for (uint32_t i = 0; m && i < m->map.count; i++)
        if (m->map.items[i].key.len == len && !memcmp(m->map.items[i].key.ptr, key, len))
            snprintf(out, size, "%.*s", (int)m->map.items[i].value.len, m->map.items[i].value.ptr);
}

static void on_event(const d9_event *ev, void *ctx) {
    seen *s = ctx;
    const char *name = ev->schema->name;
    if (!strcmp(name, "SegmentMetadataEvent")) {
        meta_entry(ev, "thread_cpu_clock", s->thread_cpu_meta, sizeof s->thread_cpu_meta);
        meta_entry(ev, "poll_cpu", s->poll_cpu_meta, sizeof s->poll_cpu_meta);
        return;
    }
    for (int i = 0; i < 2; i++) {
        if (!strcmp(name, "ThreadCpuPageEvent") && d9t_field_u(ev, "worker_id") == s->polls[i].worker)
            (d9t_field_u(ev, "open") == 1 ? s->page_opens : s->page_closes)[i]++;
        /* the other thread's PollCpuEvents are not strays of this one */
        if (strcmp(name, "PollCpuEvent") || d9t_field_u(ev, "worker_id") == s->polls[i].worker)
            pct_on_event(ev, &s->polls[i]);
    }
}

int main(void) {
    char *dir = d9t_mkdtemp("cpulazy");
    d9_config cfg;
    pct_config(&cfg, dir);
    cfg.clock = D9_CLOCK_MONOTONIC; /* the clock the test moves */
    cfg.schedstat = false;
    setenv("DIAL9_POLL_CPU_MIN_US", "1000", 1);
    /* D9T_LAZY_SOURCE=page runs the same program on the page from the first park (the default's
     * behaviour): the checks that say "no page" and "said unknown" then fail */
    const char *source = getenv("D9T_LAZY_SOURCE");
    setenv("DIAL9_THREAD_CPU", source ? source : "lazy", 1);
    int started = d9_start(&cfg);
    if (started != 0) printf("d9_start: %s\n", d9_last_error());
    CHECK(started == 0);
    if (started == 0 && !__atomic_load_n(&d9_thread_cpu_clock_gen, __ATOMIC_RELAXED)) {
        printf("SKIP: no task-clock page here (%s)\n", d9_thread_cpu_clock_reason());
        d9_stop();
        d9t_rm_rf(dir);
        free(dir);
        return d9t_summary("thread_cpu_lazy");
    }
    /* the metadata's thread_cpu_clock names the threshold a poll must reach */
    if (started == 0 && !source) CHECK(strstr(d9_thread_cpu_clock_reason(), "first poll of 1000 us or more") != NULL);
    lazy_run runs[2] = {{.ends_with_park = true}, {.ends_with_park = false}};
    for (int i = 0; i < 2 && started == 0; i++) { /* one after the other */
        pthread_t th;
        pthread_create(&th, NULL, run_thread, &runs[i]);
        pthread_join(th, NULL);
    }
    uint32_t pages = d9_tcc_lazy_pages();
    /* a lazy poll's end compares its wall ticks with the threshold in ticks (poll_cpu.h): 1 ns a
     * tick here; on the TSC, the collector's slope (0.5 ns a tick: twice the ticks) */
    uint64_t min_ticks = d9_poll_cpu_lazy_min_ticks;
    d9_thread_cpu_clock_set_ns_per_tick(0.5);
    uint64_t min_ticks_tsc = d9_poll_cpu_lazy_min_ticks;
    d9_thread_cpu_clock_set_ns_per_tick(1.0);
    if (started == 0) d9_stop();
    unsetenv("DIAL9_THREAD_CPU");
    unsetenv("DIAL9_POLL_CPU_MIN_US");

    seen s = {.polls = {{.worker = runs[0].worker}, {.worker = runs[1].worker}}};
    CHECK(d9t_decode_run(d9_run_dir(), on_event, &s) == 0);
    printf("thread_cpu_clock = %s\npoll_cpu = %s\n", s.thread_cpu_meta, s.poll_cpu_meta);
    CHECK(tt_starts_with(s.thread_cpu_meta, "lazy: "));
    CHECK(tt_starts_with(s.poll_cpu_meta, "on: polls over 1000 us"));
    CHECK(strstr(s.poll_cpu_meta, "DIAL9_THREAD_CPU=lazy") != NULL);
    CHECK_EQ_U64(pages, 3); /* A twice, B once */
    CHECK_EQ_U64(min_ticks, 1000000);
    CHECK_EQ_U64(min_ticks_tsc, 2000000);
    for (int i = 0; i < 2; i++) {
        const lazy_run *r = &runs[i];
        const pct_seen *p = &s.polls[i];
        printf("thread %c (%s): after short polls lazy %d page %d; after the long poll lazy %d page %d (pages %u); "
               "%d polls, ThreadCpuPageEvent %d open %d closed\n",
               'A' + i, r->ends_with_park ? "d9__poll_end_park" : "d9_poll_end + d9_park", r->lazy_after_short,
               r->page_after_short, r->lazy_after_long, r->page_after_long, r->pages_after_long, p->npolls,
               s.page_opens[i], s.page_closes[i]);
        /* short polls: no page, nothing said */
        CHECK(r->lazy_after_short);
        CHECK(!r->page_after_short);
        /* the long poll: the page from its park on */
        CHECK(!r->lazy_after_long);
        CHECK(r->page_after_long);
        CHECK_EQ_U64(r->pages_after_long, (i == 0 ? 1 : 3)); /* B comes after A opened twice */
        CHECK_EQ_U64(s.page_opens[i], (i == 0 ? 2 : 1));
        CHECK_EQ_U64(s.page_closes[i], (i == 0 ? 1 : 0));
        CHECK_EQ_U64(p->stray, 0);
        int nshort = SHORT_ROUNDS * SHORT_POLLS;
        CHECK_EQ_U64(p->npolls, (nshort + (i == 0 ? 4 : 2)));
        int marked_short = 0;
        for (int k = 0; k < nshort && k < p->npolls; k++) marked_short += p->polls[k].cpu_events;
        CHECK_EQ_U64(marked_short, 0);
        if (i == 0) {
            printf("  after 1.5 s without a long poll and a park after a switch: lazy %d (closes %u); reopened %d\n",
                   r->lazy_after_quiet, r->closes_after_quiet, r->page_after_reopen);
            CHECK(r->lazy_after_quiet);
            CHECK_EQ_U64(r->closes_after_quiet, 1);
            CHECK(r->page_after_reopen);
            if (p->npolls == nshort + 4) {
                CHECK_EQ_U64(p->polls[nshort + 2].cpu_events, 0); /* short */
                CHECK_EQ_U64(p->polls[nshort + 3].cpu_events, 1); /* long without a page: unknown */
                CHECK(!p->polls[nshort + 3].exact);
            }
        }
        if (p->npolls >= nshort + 2) {
            const pct_poll *first = &p->polls[nshort], *next = &p->polls[nshort + 1];
            printf("  long poll before the page: %d PollCpuEvent, exact %d; the next: %d, exact %d, CPU %.3f ms\n",
                   first->cpu_events, first->exact, next->cpu_events, next->exact, next->cpu_ns / 1e6);
            CHECK_EQ_U64(first->cpu_events, 1); /* said: unknown */
            CHECK(!first->exact);
            CHECK_EQ_U64(first->cpu_ns, 0);
            CHECK_EQ_U64(next->cpu_events, 1); /* measured */
            CHECK(next->exact);
        }
    }
    d9t_rm_rf(dir);
    free(dir);
    return d9t_summary("thread_cpu_lazy");
}
