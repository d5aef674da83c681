/* The thread's CPU time from the task-clock page (core/thread_cpu_clock.h) against the real
 * kernel. Bounds by counts and by the event's own exact count, never by timing:
 *   - over busy loops of park/unpark values, each value is >= the one before, and each value
 *     taken from the page or the exact read is <= the event's exact count read right after it
 *     (read() of the same event, offset by the same base). Estimates (an anchor plus the wall
 *     time since) are not bounded so: a host's stop of the vCPU inside a run counts in the wall
 *     time and not in the guest's CPU clocks (thread_cpu_clock.h); how often and how much is
 *     printed;
 *   - the system-call path (exact reads) is taken at most once per update of the page (its
 *     lock moves by 2 at each sched-in): a park/unpark pair without a switch reads nothing;
 *   - after a usleep the unpark takes the page's value, never the exact read; the park after
 *     a usleep (200 us unaccounted by the page at least) takes the exact read every time with
 *     d9_tcc_park_slack_ns 0, and never with an hour (the page's value, a lower bound of the
 *     exact count): the slack is set here, nothing depends on timing;
 *   - a value the thread got after its caller's time with a 20 ms sleep between (a poll's exact
 *     read, an unpark's page value after the sleep's switch, a first value whose caller's time
 *     is 20 ms old) is stamped after it: the park after it is not 20 ms ahead of the exact count;
 *   - past D9_TCC_MAX_THREADS threads at once, the others read by system call;
 *   - the fd is close-on-exec, is closed at thread exit, at d9_thread_cpu_clock_stop and in a
 *     forked child (where the parent's event would measure the parent's thread);
 *   - refusals: perf_event_open refused by a seccomp filter (EACCES) leaves `auto` on the
 *     system call saying why and makes `perf` fail; as an unprivileged user (nobody) the choice
 *     agrees with what the kernel allows that user (perf_event_paranoid); a filter that kills
 *     on perf_event_open, installed after the start, is never tripped.
 * Those run with DIAL9_THREAD_CPU=page (the page alone), which `auto` takes too: a thread opened
 * under `auto` has its page and no switch ring, and the reason says why (the ring costs each
 * switch more than the reads it saves: bench/README.md). With the switch ring
 * (DIAL9_THREAD_CPU=ring, core/thread_cpu_switch_ring.h), where the kernel writes the thread's
 * switch records:
 *   - the kernel does: the thread has its ring, and after each sleep the unpark and the park
 *     after it take their values from the ring (ring_values + 2 a nap) with no read at all,
 *     whatever the slack (0 or an hour): each is at most the exact count read right after it
 *     (plus what a vCPU stop may add, 100 us), and how far below it is printed: exact, where the
 *     page alone gives a park a lower bound;
 *   - the late values (a 20 ms sleep between the caller's time and the value) are a line from
 *     the sleep's switch in, not a read: stamped at least 20 ms after the caller's time, the
 *     park after them within 100 us of the exact count;
 *   - past D9_TCC_MAX_RING_THREADS threads with a ring, the others have the page alone.
 * CLOCK_THREAD_CPUTIME_ID is printed beside, not bounded: perf's task clock counts steal time
 * (PARAVIRT_TIME_ACCOUNTING takes it out of the thread's clock), so the two drift apart by up
 * to ~2 % on a busy guest. Skips, saying so, where the kernel refuses the event to root. */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "core/thread_cpu_clock.h"
#include "dial9/dial9.h"

static uint64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The thread's context switches so far (voluntary + involuntary, /proc/thread-self/status). */
static long context_switches(void) {
    FILE *f = fopen("/proc/thread-self/status", "r");
    if (!f) return -1;
    char line[256];
    long n = 0, v;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "voluntary_ctxt_switches: %ld", &v) == 1) n += v;
        if (sscanf(line, "nonvoluntary_ctxt_switches: %ld", &v) == 1) n += v;
    }
    fclose(f);
    return n;
}

/* What a vCPU stop may add to a value estimated along the wall time (the switch ring's: the
 * CPU time at the switch in plus the wall time since): the poll tests' slack. */
#define STALL_SLACK_NS 100000u

/* Sleep until the thread was switched out and in (the page is rewritten at every sched-in),
 * which each nap below assumes: a usleep alone need not switch. When the host stops the vCPU
 * past the timer's expiry between nanosleep arming it and calling schedule(), the call returns
 * without sleeping and the guest sees no switch (3 runs in 100 at load ~3: an unpark that read
 * because the page was still its park's, a ring value short). */
static void sleep_switched(unsigned us) {
    d9_tcc_state *s = &d9__tls_cpu_clock;
    uint32_t before = s->page ? s->page->lock : 0;
    int tries = 0;
    do usleep(us);
    while (s->page && s->page->lock == before && ++tries < 100);
}

/* A park's (or an unpark's) value now, as the hooks take it. */
static uint64_t cpu_value(bool unpark) {
    uint32_t gen = __atomic_load_n(&d9_thread_cpu_clock_gen, __ATOMIC_RELAXED);
    return gen ? d9_thread_cpu_clock_ns(unpark ? D9_TCC_UNPARK : D9_TCC_PARK, mono_ns(), gen) : D9_TCC_NONE;
}

static void burn(unsigned iterations) {
    volatile unsigned sink = 0;
    for (unsigned i = 0; i < iterations; i++) sink += i;
}

/* The exact value now, as the module would take it; not counted among its reads. */
static uint64_t exact_now(void) {
    d9_tcc_state *s = &d9__tls_cpu_clock;
    uint32_t reads = s->exact_reads;
    uint64_t e = d9_thread_cpu_clock_exact(s);
    s->exact_reads = reads;
    return e == D9_TCC_NONE ? e : s->base_ns + e;
}

static void busy_loops(void) {
    d9_tcc_state *s = &d9__tls_cpu_clock;
    /* the thread's first value leaves no line, so the next reads with no page update between
     * (outside the window counted below: 1 read more than updates in 2 of 60 loaded runs) */
    CHECK(cpu_value(true) != D9_TCC_NONE);
    /* a line: from the page or the exact read; a read the thread got more than the park slack
     * after the hook's time (preempted between them: CI's TSan run on a loaded host) is stamped
     * then and leaves none, and the next unpark reads again */
    uint64_t first;
    int late = 0;
    while ((first = cpu_value(true)) != D9_TCC_NONE && (s->lock & 1) && late < 1000) late++;
    CHECK(first != D9_TCC_NONE);
    CHECK((s->lock & 1) == 0);
    if (late) printf("first line: after %d late reads\n", late);
    uint64_t prev = first, first_thread_cpu = thread_cpu_ns(), first_base = s->base_ns;
    /* the switches counted lie inside the page's window: read after its start, before its end */
    uint32_t lock_before = s->page->lock, reads_before = s->exact_reads;
    long switches_before = context_switches();
    int monotonic = 0, anchors = 0, anchors_bounded = 0, held = 0, checked = 0, ahead = 0;
    uint64_t most_ahead = 0;
    const int pairs = 100000;
    for (int i = 0; i < 2 * pairs; i++) {
        uint32_t lock = s->lock;
        uint64_t v = cpu_value(i & 1 ? false : true); /* unpark, park, ... */
        monotonic += v != D9_TCC_NONE && v >= prev;
        bool anchored = s->lock != lock; /* taken from the page or the exact read, not estimated */
        if (anchored || i % 1000 == 999) {
            uint64_t e = exact_now();
            if (anchored) {
                anchors++;
                /* a park's lower bound below the last value is held at it (values never go
                 * back) with the base unmoved: that value is the estimate before, carried, as
                 * far ahead of the task clock as it was (a vCPU stall; failed a CI run: 19 of
                 * 20 under TSan) */
                bool carried = v == prev && (s->lock & 1); /* no line: a lower bound */
                held += carried;
                /* from the switch ring: along the wall time since the switch in (a vCPU stop) */
                uint64_t stall = d9_thread_cpu_clock_has_ring() ? STALL_SLACK_NS : 0;
                anchors_bounded += e != D9_TCC_NONE && (v <= e + stall || carried);
            } else {
                /* an estimate: ahead of the task clock only by a vCPU stall since its anchor */
                checked++;
                if (v > e) {
                    ahead++;
                    if (v - e > most_ahead) most_ahead = v - e;
                }
            }
        }
        burn(i % 7 * 40);
        prev = v;
    }
    long switches = context_switches() - switches_before;
    uint32_t updates = (s->page->lock - lock_before) / 2, reads = s->exact_reads - reads_before;
    CHECK_EQ_U64(monotonic, 2 * pairs);
    CHECK(switches >= 0 && updates >= (uint32_t)switches); /* every switch rewrote the page */
    CHECK_EQ_U64(anchors_bounded, anchors);
    CHECK(reads <= updates); /* a pair without a switch read nothing */
    uint64_t exact_end = exact_now();
    printf("busy: %d pairs, %ld context switches, %u page updates, %u exact reads, %d anchors all <= the exact count (%d "
           "lower bounds held at the estimate before); "
           "estimates ahead of it at %d of %d checks (most %.1f us: vCPU stalls), base moved %.1f us; value "
           "%+.3f ms (%.1f us from the exact count), CLOCK_THREAD_CPUTIME_ID %+.3f ms\n",
           pairs, switches, updates, reads, anchors, held, ahead, checked, (double)most_ahead / 1e3,
           (double)(s->base_ns - first_base) / 1e3, (double)(prev - first) / 1e6,
           (double)(int64_t)(exact_end - prev) / 1e3, (double)(thread_cpu_ns() - first_thread_cpu) / 1e6);
}

static void sleeps(void) {
    d9_tcc_state *s = &d9__tls_cpu_clock;
    const int naps = 20;
    int park_exact = 0, park_page = 0, unpark_page = 0, bounded = 0;
    uint64_t most_short = 0; /* how far below the exact count a park's page value was */
    uint64_t prev = cpu_value(true), keep = __atomic_load_n(&d9_tcc_park_slack_ns, __ATOMIC_RELAXED);
    for (int i = 0; i < naps; i++) {
        bool no_slack = i % 2; /* by the slack, not by timing */
        __atomic_store_n(&d9_tcc_park_slack_ns, no_slack ? 0 : 3600000000000ull, __ATOMIC_RELAXED);
        sleep_switched(200); /* asleep: switched out and in, the page rewritten */
        uint32_t reads = s->exact_reads, lock_before_unpark = s->lock;
        uint64_t u = cpu_value(true), e_u = exact_now();
        if (!(s->exact_reads == reads && u >= prev && u <= e_u))
            printf("nap %d: unpark not from the page: reads +%u, u %llu prev %llu exact %llu, line before %s\n", i,
                   s->exact_reads - reads, (unsigned long long)u, (unsigned long long)prev, (unsigned long long)e_u,
                   lock_before_unpark & 1 ? "none" : "yes");
        unpark_page += s->exact_reads == reads && u >= prev && u <= e_u;
        burn(20000);
        sleep_switched(200);
        reads = s->exact_reads;
        uint32_t lock_before_park = s->lock, page_lock = s->page->lock;
        uint64_t ticks_before_park = s->ticks, cpu_before_park = s->cpu_ns;
        uint64_t p = cpu_value(false);
        uint64_t e = exact_now();
        if (no_slack && !(s->exact_reads == reads + 1 && p >= u))
            printf("nap %d: park without its exact read: reads +%u, p %llu u %llu, line before %s (lock %u, page %u -> "
                   "%u now), stamp %llu cpu %llu\n",
                   i, s->exact_reads - reads, (unsigned long long)p, (unsigned long long)u,
                   lock_before_park & 1 ? "none" : "yes", lock_before_park, page_lock, s->page->lock,
                   (unsigned long long)ticks_before_park, (unsigned long long)cpu_before_park);
        if (no_slack) park_exact += s->exact_reads == reads + 1 && p >= u;
        else park_page += s->exact_reads == reads && p >= u;
        if (!no_slack && e > p && e - p > most_short) most_short = e - p;
        bounded += p <= e;
        prev = p;
    }
    __atomic_store_n(&d9_tcc_park_slack_ns, keep, __ATOMIC_RELAXED);
    CHECK_EQ_U64(unpark_page, naps);
    CHECK_EQ_U64(park_exact, naps / 2);
    CHECK_EQ_U64(park_page, naps / 2);
    CHECK_EQ_U64(bounded, naps);
    printf("sleeps: %d/%d unparks from the page; parks: %d/%d with no slack by the exact read, %d/%d with an hour's "
           "slack from the page (at most %.1f us below the exact count)\n",
           unpark_page, naps, park_exact, naps / 2, park_page, naps / 2, (double)most_short / 1e3);
}

/* A value whose caller read its time before a switch that came ahead of the exact read (a poll's
 * end hook preempted between its clock read and the task clock's: poll_cpu.c passes the hook's
 * time): it is stamped after the read, as no line, so no estimate after it counts the off-CPU
 * time as CPU. Before, it was stamped at the caller's time: the park after it 20 ms ahead of the
 * exact count, which the next anchor's base then took from the next poll (test_mt_poll_cpu and
 * test_mt_poll_cpu_park_inside failed so under TSan: a poll of 2.1 ms recorded as 0). The switch
 * is a 20 ms sleep: off CPU for that long whatever the load. */
static void late_read(void) {
    d9_tcc_state *s = &d9__tls_cpu_clock;
    CHECK(cpu_value(true) != D9_TCC_NONE);
    uint64_t hook_time = mono_ns();
    sleep_switched(20000);
    uint64_t woke = mono_ns();
    uint64_t v = d9_thread_cpu_clock_slow(s, D9_TCC_EXACT, hook_time); /* a read: the page moved */
    CHECK(v != D9_TCC_NONE);
    uint64_t stamped = s->ticks;
    CHECK(stamped >= woke);    /* stamped after the switch */
    CHECK((s->lock & 1) == 1); /* no line: the next unpark reads */
    uint64_t park = cpu_value(false), e = exact_now();
    CHECK(park >= v);
    printf("late read: stamped %.1f ms after the caller's time; the park after it %.1f us from the exact count "
           "(before: ~20 ms ahead)\n",
           (double)(stamped - hook_time) / 1e6, ((double)park - (double)e) / 1e3);
    CHECK(park <= e + 10000000); /* 10 ms: half the sleep; an estimate ahead only by a vCPU stall */
    /* a hook sharing the late caller's time (a fused poll end and park): no wall time since */
    uint64_t again = d9_thread_cpu_clock_ns(D9_TCC_PARK, hook_time, d9_thread_cpu_clock_gen);
    CHECK(again >= park);
}

/* An unpark whose hook was switched out between its clock read and the page's read (the
 * thread's first unpark after its first value reads the page in the slow path, a window long
 * enough under ThreadSanitizer): the page's value is the CPU time at that switch-in, after the
 * hook's time. It is stamped after the read, as no line, so no estimate after it counts the
 * off-CPU time as CPU. Before, it was a line at the hook's time: the poll after it began 2 ms
 * ahead of the task clock, and its end's exact read made it 0.042 ms of CPU for 2.06
 * (test_mt_poll_cpu's first accounted poll, 1 TSan run in 30 under load). The switch is a
 * 20 ms sleep: off CPU for that long whatever the load, and the page moved. */
static void late_unpark(void) {
    d9_tcc_state *s = &d9__tls_cpu_clock;
    CHECK(cpu_value(true) != D9_TCC_NONE);
    uint64_t hook_time = mono_ns();
    sleep_switched(20000);
    uint64_t woke = mono_ns();
    uint32_t reads = s->exact_reads;
    uint64_t v = d9_thread_cpu_clock_slow(s, D9_TCC_UNPARK, hook_time); /* the page moved: its value */
    uint32_t value_reads = s->exact_reads - reads, lock = s->lock;
    uint64_t stamped = s->ticks;
    uint64_t park = cpu_value(false), e = exact_now(); /* before any output (a switch there) */
    CHECK(v != D9_TCC_NONE);
    CHECK_EQ_U64(value_reads, 0);
    CHECK(stamped >= woke); /* stamped after the switch */
    CHECK((lock & 1) == 1); /* no line */
    CHECK(park >= v);
    printf("late unpark: stamped %.1f ms after the hook's time; the park after it %.1f us from the exact count "
           "(before: ~20 ms ahead)\n",
           (double)(stamped - hook_time) / 1e6, ((double)park - (double)e) / 1e3);
    CHECK(park <= e + 10000000); /* 10 ms: half the sleep; an estimate ahead only by a vCPU stall */
}

/* A thread's first value opens its event (perf_event_open, mmap, the table: slow, and a switch
 * may come inside) after the hook read its time: the value, the CPU time after the open, is
 * stamped after it too, so the next park's estimate does not count the open's wall time (or a
 * switch in it) again. The hook's time here is 20 ms before the call, a stand-in for a slow
 * open. */
static void *first_value_late(void *arg) {
    (void)arg;
    d9_tcc_state *s = &d9__tls_cpu_clock;
    CHECK(s->page == NULL);
    uint64_t hook_time = mono_ns();
    sleep_switched(20000);
    uint64_t before = mono_ns();
    uint64_t v = d9_thread_cpu_clock_ns(D9_TCC_UNPARK, hook_time, d9_thread_cpu_clock_gen);
    uint64_t stamped = s->ticks;
    uint64_t park = cpu_value(false), e = exact_now(); /* before any output (a switch there) */
    CHECK(v != D9_TCC_NONE);
    CHECK(s->page != NULL);
    CHECK(stamped >= before); /* after the open */
    CHECK(park >= v);
    printf("first value: stamped %.1f ms after the hook's time; the park after it %.1f us from the exact count "
           "(before: ~20 ms ahead)\n",
           (double)(stamped - hook_time) / 1e6, ((double)park - (double)e) / 1e3);
    CHECK(park <= e + 10000000); /* 10 ms: as above */
    return NULL;
}

static void first_value(void) {
    pthread_t t;
    pthread_create(&t, NULL, first_value_late, NULL);
    pthread_join(t, NULL);
}

/* With the switch ring: a value after each sleep from the ring, none read, at most the exact
 * count (plus STALL_SLACK_NS), whatever the park slack. */
static void ring_sleeps(void) {
    d9_tcc_state *s = &d9__tls_cpu_clock;
    CHECK(cpu_value(true) != D9_TCC_NONE);
    CHECK(d9_thread_cpu_clock_has_ring());
    const int naps = 20;
    uint32_t reads = s->exact_reads, ring = s->ring_values;
    int bounded = 0, never_down = 0;
    uint64_t most_below = 0, sum_below = 0, prev = cpu_value(true), keep = d9_tcc_park_slack_ns;
    for (int i = 0; i < naps; i++) {
        __atomic_store_n(&d9_tcc_park_slack_ns, i % 2 ? 0 : 3600000000000ull, __ATOMIC_RELAXED);
        sleep_switched(200); /* asleep: switched out and in */
        uint64_t u = cpu_value(true), eu = exact_now();
        burn(20000);
        sleep_switched(200); /* inside the active period: the park after it follows a switch */
        uint64_t p = cpu_value(false), e = exact_now();
        never_down += u >= prev && p >= u;
        bounded += u <= eu + STALL_SLACK_NS && p <= e + STALL_SLACK_NS;
        uint64_t below = e > p ? e - p : 0;
        sum_below += below;
        if (below > most_below) most_below = below;
        prev = p;
    }
    __atomic_store_n(&d9_tcc_park_slack_ns, keep, __ATOMIC_RELAXED);
    CHECK_EQ_U64(s->exact_reads - reads, 0);
    CHECK_EQ_U64(s->ring_values - ring, 2 * naps);
    CHECK_EQ_U64(bounded, naps);
    CHECK_EQ_U64(never_down, naps);
    printf("switch ring, sleeps: %u reads, %u values from the ring for %d unparks and %d parks after a switch; parks "
           "below the exact count read right after them by %.1f us on average, %.1f us at most\n",
           s->exact_reads - reads, s->ring_values - ring, naps, naps, (double)sum_below / naps / 1e3,
           (double)most_below / 1e3);
}

/* With the switch ring: a value the thread got 20 ms after its caller's time (a poll's end, an
 * unpark) is the line from the sleep's switch in: no read, a line, stamped there. */
static void ring_late(d9_tcc_use use) {
    d9_tcc_state *s = &d9__tls_cpu_clock;
    CHECK(cpu_value(true) != D9_TCC_NONE);
    uint64_t hook_time = mono_ns();
    sleep_switched(20000);
    uint32_t reads = s->exact_reads, ring = s->ring_values;
    uint64_t v = d9_thread_cpu_clock_slow(s, use, hook_time);
    uint32_t lock = s->lock;
    uint64_t stamped = s->ticks;
    uint64_t park = cpu_value(false), e = exact_now();
    CHECK(v != D9_TCC_NONE);
    CHECK_EQ_U64(s->exact_reads - reads, 0);
    CHECK_EQ_U64(s->ring_values - ring, 1);
    CHECK(stamped >= hook_time + 20000000); /* at the switch in after the sleep */
    CHECK((lock & 1) == 0);                 /* a line */
    CHECK(park >= v);
    CHECK(park <= e + STALL_SLACK_NS);
    printf("switch ring, late %s: stamped %.1f ms after the caller's time, a line; the park after it %.1f us from the "
           "exact count\n",
           use == D9_TCC_EXACT ? "read" : "unpark", (double)(stamped - hook_time) / 1e6, ((double)park - (double)e) / 1e3);
}

/* Its count of open events while it has one (-1: it got no value); checked by the caller. */
static void *open_and_leave(void *arg) {
    int *open_inside = arg;
    *open_inside = cpu_value(false) != D9_TCC_NONE ? d9_thread_cpu_clock_open_count() : -1;
    return NULL;
}

static void lifetime(void) {
    int fd = d9_thread_cpu_clock_fd();
    CHECK(fd >= 0);
    CHECK((fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
    int before = d9_thread_cpu_clock_open_count(), inside = 0;
    pthread_t th;
    CHECK(pthread_create(&th, NULL, open_and_leave, &inside) == 0);
    pthread_join(th, NULL);
    CHECK_EQ_U64(inside, before + 1);
    CHECK_EQ_U64(d9_thread_cpu_clock_open_count(), before); /* closed at the thread's exit */

    /* a forked child: the parent's event gone, closed, and no value from it */
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        /* the fork guard's child handler has run (core/fork_guard.c) */
        int bad = d9_thread_cpu_clock_open_count() != 0;
        bad |= fcntl(fd, F_GETFD) != -1 || errno != EBADF;
        bad |= __atomic_load_n(&d9_thread_cpu_clock_gen, __ATOMIC_RELAXED) != 0;
        _exit(bad);
    }
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);

    d9_thread_cpu_clock_stop();
    CHECK_EQ_U64(d9_thread_cpu_clock_open_count(), 0);
    CHECK(fcntl(fd, F_GETFD) == -1 && errno == EBADF);
    /* the next recording reopens (with the switch ring: cap() counts them) */
    CHECK(d9_thread_cpu_clock_start(D9_THREAD_CPU_RING, true, false) == 0);
    CHECK(cpu_value(false) != D9_TCC_NONE);
    CHECK_EQ_U64(d9_thread_cpu_clock_open_count(), 1);
    printf("lifetime: close-on-exec, closed at thread exit, in a forked child and at stop\n");
}

/* More threads than the cap, all holding their event at once (a barrier, no timing): the
 * cap's worth get the page, the others read by system call. */
#define OVER_CAP (D9_TCC_MAX_THREADS + 8)
static pthread_barrier_t all_opened;
static int with_page, without_page, with_ring;

static void *open_and_wait(void *arg) {
    (void)arg;
    bool page = cpu_value(false) != D9_TCC_NONE;
    __atomic_add_fetch(page ? &with_page : &without_page, 1, __ATOMIC_RELAXED);
    if (d9_thread_cpu_clock_has_ring()) __atomic_add_fetch(&with_ring, 1, __ATOMIC_RELAXED);
    pthread_barrier_wait(&all_opened);
    return NULL;
}

static void cap(void) {
    int already = d9_thread_cpu_clock_open_count(), rings_already = d9_thread_cpu_clock_has_ring();
    pthread_t th[OVER_CAP];
    pthread_attr_t small;
    pthread_attr_init(&small);
    pthread_attr_setstacksize(&small, 64 * 1024);
    pthread_barrier_init(&all_opened, NULL, OVER_CAP + 1);
    int started = 0;
    for (int i = 0; i < OVER_CAP; i++) started += pthread_create(&th[i], &small, open_and_wait, NULL) == 0;
    CHECK_EQ_U64(started, OVER_CAP);
    if (started == OVER_CAP) {
        pthread_barrier_wait(&all_opened);
        CHECK_EQ_U64(with_page, D9_TCC_MAX_THREADS - already);
        CHECK_EQ_U64(without_page, OVER_CAP - (D9_TCC_MAX_THREADS - already));
        CHECK_EQ_U64(with_ring, D9_TCC_MAX_RING_THREADS - rings_already); /* the others: the page alone */
        for (int i = 0; i < OVER_CAP; i++) pthread_join(th[i], NULL);
    }
    CHECK_EQ_U64(d9_thread_cpu_clock_open_count(), already);
    printf("cap: %d threads at once: %d with the page (%d with a switch ring), %d by system call\n", OVER_CAP + already,
           with_page + already, with_ring + rings_already, without_page);
}

/* perf_event_open answers `action` from here on (this process only). */
static bool filter_perf_event_open(uint32_t action) {
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_perf_event_open, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, action),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {(unsigned short)(sizeof filter / sizeof filter[0]), filter};
    return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
}

static int run_child(int (*fn)(void)) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) _exit(fn());
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
    return WEXITSTATUS(status);
}

static int refused_by_seccomp(void) {
    if (!filter_perf_event_open(SECCOMP_RET_ERRNO | (EACCES & SECCOMP_RET_DATA))) return 77;
    int bad = d9_thread_cpu_clock_start(D9_THREAD_CPU_AUTO, true, false) != 0;
    bad |= __atomic_load_n(&d9_thread_cpu_clock_gen, __ATOMIC_RELAXED) != 0;
    const char *why = d9_thread_cpu_clock_reason();
    bad |= strncmp(why, "syscall: perf_event_open", 24) != 0 || !strstr(why, "Permission denied");
    printf("seccomp refusal, auto: %s\n", why);
    bad |= d9_thread_cpu_clock_start(D9_THREAD_CPU_PERF, true, false) != -1;
    bad |= !strstr(d9_last_error(), "DIAL9_THREAD_CPU=perf");
    printf("seccomp refusal, perf: %s\n", d9_last_error());
    fflush(stdout);
    return bad;
}

/* A filter that kills on perf_event_open, installed after the start: the thread's first value
 * must not open its event (it is read by system call), or this child dies of SIGSYS. */
static int killing_filter_after_start(void) {
    if (d9_thread_cpu_clock_start(D9_THREAD_CPU_AUTO, true, false) != 0 ||
        !__atomic_load_n(&d9_thread_cpu_clock_gen, __ATOMIC_RELAXED))
        return 77;
    if (!filter_perf_event_open(SECCOMP_RET_KILL_PROCESS)) return 77;
    int bad = cpu_value(false) != D9_TCC_NONE;
    bad |= d9_thread_cpu_clock_open_count() != 0;
    printf("a killing seccomp filter after the start: the thread reads by system call, alive\n");
    fflush(stdout);
    return bad;
}

static int as_nobody(void) {
    if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) return 77;
    int fd = d9_task_clock_open(false);
    bool allowed = fd >= 0;
    if (fd >= 0) close(fd);
    int bad = d9_thread_cpu_clock_start(D9_THREAD_CPU_AUTO, true, false) != 0;
    bool chose_page = __atomic_load_n(&d9_thread_cpu_clock_gen, __ATOMIC_RELAXED) != 0;
    bad |= chose_page != allowed;
    if (chose_page) bad |= cpu_value(false) == D9_TCC_NONE;
    printf("as uid %d (perf_event_paranoid allows the event: %s): %s\n", (int)getuid(), allowed ? "yes" : "no",
           d9_thread_cpu_clock_reason());
    fflush(stdout);
    return bad;
}

/* `auto` takes the page without its switch ring (opt-in: DIAL9_THREAD_CPU=ring). */
static bool g_auto_page, g_auto_ring;
static void *open_under_auto(void *arg) {
    (void)arg;
    g_auto_page = cpu_value(false) != D9_TCC_NONE;
    g_auto_ring = d9_thread_cpu_clock_has_ring();
    return NULL;
}

static void auto_takes_page(void) {
    CHECK(d9_thread_cpu_clock_start(D9_THREAD_CPU_AUTO, true, false) == 0);
    CHECK(strstr(d9_thread_cpu_clock_reason(), "perf: a task-clock page per thread") == d9_thread_cpu_clock_reason());
    CHECK(strstr(d9_thread_cpu_clock_reason(), "no switch ring (not asked for: it costs each switch more than the "
                                               "reads it saves; DIAL9_THREAD_CPU=ring takes it)") != NULL);
    pthread_t t;
    pthread_create(&t, NULL, open_under_auto, NULL);
    pthread_join(t, NULL);
    CHECK(g_auto_page);
    CHECK(!g_auto_ring);
}

static void forced_syscall(void) {
    CHECK(d9_thread_cpu_clock_start(D9_THREAD_CPU_SYSCALL, true, false) == 0);
    CHECK_EQ_U64(__atomic_load_n(&d9_thread_cpu_clock_gen, __ATOMIC_RELAXED), 0);
    CHECK_STR(d9_thread_cpu_clock_reason(), "syscall: DIAL9_THREAD_CPU=syscall");
}

int main(void) {
    if (d9_thread_cpu_clock_start(D9_THREAD_CPU_PAGE, true, false) != 0 ||
        !__atomic_load_n(&d9_thread_cpu_clock_gen, __ATOMIC_RELAXED)) {
        printf("test_mt_thread_cpu_clock_kernel: skipped: %s\n", d9_thread_cpu_clock_reason());
        return 0;
    }
    printf("%s\n", d9_thread_cpu_clock_reason());
    CHECK(strstr(d9_thread_cpu_clock_reason(), "no switch ring (DIAL9_THREAD_CPU=page)") != NULL);
    busy_loops();
    sleeps();
    late_read();
    late_unpark();
    auto_takes_page();
    CHECK(d9_thread_cpu_clock_start(D9_THREAD_CPU_RING, true, false) == 0);
    printf("%s\n", d9_thread_cpu_clock_reason());
    CHECK(strstr(d9_thread_cpu_clock_reason(), "(DIAL9_THREAD_CPU=ring)") != NULL);
    if (strstr(d9_thread_cpu_clock_reason(), "no switch ring")) {
        printf("switch ring: skipped (the kernel refuses it here)\n");
    } else {
        busy_loops();
        ring_sleeps();
        ring_late(D9_TCC_EXACT);
        ring_late(D9_TCC_UNPARK);
    }
    first_value();
    lifetime();
    cap();
    int rc = run_child(refused_by_seccomp);
    if (rc == 77) printf("seccomp refusal: skipped (no seccomp filter here)\n");
    else CHECK_EQ_U64(rc, 0);
    rc = run_child(killing_filter_after_start);
    if (rc == 77) printf("a killing filter after the start: skipped (no seccomp filter here)\n");
    else CHECK_EQ_U64(rc, 0);
    rc = run_child(as_nobody);
    if (rc == 77) printf("as nobody: skipped (cannot change user)\n");
    else CHECK_EQ_U64(rc, 0);
    forced_syscall();
    return d9t_summary("test_mt_thread_cpu_clock_kernel");
}
