/* The per-poll attribution of the model (model/attribution.h, model/offcpu_cause.h) on known
 * intervals: parts that add up exactly, gaps (partial coverage, drops) that stay unknown
 * whatever lies in them, broken input that becomes unknown rather than a guess, and the cause
 * read from an off-CPU stack; the rule of a long poll's CPU time (PollCpuEvent, metadata poll_cpu). */
#include "check.h"
#include "test_rng.h"
#include "model/attribution.h"
#include "model/offcpu_cause.h"

static uint64_t total(const d9m_parts *p) { return d9m_parts_total(p); }

static void test_exact_parts(void) {
    d9m_attr_poll p;
    d9m_parts out;
    d9m_attr_begin(&p, 100, 1100);
    d9m_attr_offcpu(&p, 200, 300, D9M_PART_LOCK);
    d9m_attr_offcpu(&p, 400, 450, D9M_PART_RUNNABLE);
    d9m_attr_offcpu(&p, 500, 600, D9M_PART_IO);
    d9m_attr_offcpu(&p, 1050, 1300, D9M_PART_SLEEP); /* runs past the end: clipped */
    d9m_attr_finish(&p, &out);
    CHECK_EQ_U64(out.ns[D9M_PART_LOCK], 100);
    CHECK_EQ_U64(out.ns[D9M_PART_RUNNABLE], 50);
    CHECK_EQ_U64(out.ns[D9M_PART_IO], 100);
    CHECK_EQ_U64(out.ns[D9M_PART_SLEEP], 50);
    CHECK_EQ_U64(out.ns[D9M_PART_UNKNOWN], 0);
    CHECK_EQ_U64(out.ns[D9M_PART_ON_CPU], 700);
    CHECK_EQ_U64(total(&out), 1000);
}

static void test_gaps(void) {
    d9m_attr_poll p;
    d9m_parts out;
    d9m_attr_begin(&p, 100, 1100);
    d9m_attr_gap(&p, 250, 550);
    d9m_attr_gap(&p, 0, 120);    /* before the poll: clipped to [100, 120) */
    d9m_attr_gap(&p, 540, 560);  /* overlaps the first: merged */
    CHECK_EQ_U64(p.ngaps, 2);
    CHECK_EQ_U64(d9m_attr_covered(&p, 200, 300), 50);
    d9m_attr_offcpu(&p, 200, 300, D9M_PART_LOCK);     /* 50 covered, 50 in the gap */
    d9m_attr_offcpu(&p, 400, 450, D9M_PART_RUNNABLE); /* all in the gap */
    d9m_attr_offcpu(&p, 500, 600, D9M_PART_IO);       /* 40 covered */
    d9m_attr_finish(&p, &out);
    CHECK_EQ_U64(out.ns[D9M_PART_LOCK], 50);
    CHECK_EQ_U64(out.ns[D9M_PART_RUNNABLE], 0);
    CHECK_EQ_U64(out.ns[D9M_PART_IO], 40);
    CHECK_EQ_U64(out.ns[D9M_PART_UNKNOWN], 20 + 310);
    CHECK_EQ_U64(out.ns[D9M_PART_ON_CPU], 1000 - 330 - 90);
    CHECK_EQ_U64(total(&out), 1000);

    /* more disjoint gaps than kept: their hull, never fewer unknown ns */
    d9m_attr_begin(&p, 0, 1000);
    for (uint64_t i = 0; i < 12; i++) d9m_attr_gap(&p, i * 50, i * 50 + 10);
    d9m_attr_finish(&p, &out);
    CHECK(out.ns[D9M_PART_UNKNOWN] >= 120);
    CHECK_EQ_U64(total(&out), 1000);
}

static void test_broken_input(void) {
    d9m_attr_poll p;
    d9m_parts out;
    d9m_attr_begin(&p, 0, 1000);
    d9m_attr_offcpu(&p, 100, 300, D9M_PART_LOCK);
    d9m_attr_offcpu(&p, 200, 400, D9M_PART_IO); /* one thread off-CPU twice at once */
    d9m_attr_finish(&p, &out);
    CHECK_EQ_U64(out.ns[D9M_PART_UNKNOWN], 1000);
    CHECK_EQ_U64(total(&out), 1000);
    /* the parts without a cause are no causes */
    d9m_attr_begin(&p, 0, 1000);
    d9m_attr_offcpu(&p, 100, 300, D9M_PART_ON_CPU);
    d9m_attr_offcpu(&p, 300, 400, D9M_PART_UNKNOWN);
    d9m_attr_finish(&p, &out);
    CHECK_EQ_U64(out.ns[D9M_PART_BLOCKED_OTHER], 300);
    CHECK_EQ_U64(out.ns[D9M_PART_ON_CPU], 700);
    /* an end before the start is an empty poll */
    d9m_attr_begin(&p, 500, 400);
    d9m_attr_finish(&p, &out);
    CHECK_EQ_U64(total(&out), 0);
}

/* The poll's exact CPU time (a PollCpuEvent): its gaps resolve into on_cpu and
 * off_cpu_uncaptured, never more of it off-CPU than the gaps hold, and the parts add up,
 * through d9m_attr_finish and d9m_attr_add_to alike. */
static void check_both(const d9m_attr_poll *p, const d9m_parts *want) {
    d9m_parts out, sum = {{0}};
    d9m_attr_finish(p, &out);
    d9m_attr_add_to(p, &sum);
    for (int i = 0; i < D9M_PARTS; i++) {
        CHECK_EQ_U64(out.ns[i], want->ns[i]);
        CHECK_EQ_U64(sum.ns[i], want->ns[i]);
    }
    CHECK_EQ_U64(total(&out), p->end - p->start);
}

static void test_cpu_time(void) {
    d9m_attr_poll p;
    d9m_parts want;
    /* all a gap (no switch records), CPU 400 of 1000 */
    d9m_attr_begin(&p, 0, 1000);
    d9m_attr_gap(&p, 0, 1000);
    d9m_attr_cpu(&p, 400);
    want = (d9m_parts){{0}};
    want.ns[D9M_PART_ON_CPU] = 400;
    want.ns[D9M_PART_OFF_CPU_UNCAPTURED] = 600;
    check_both(&p, &want);
    /* a covered lock wait of 200, a gap of 300, CPU 500: off 500, 200 lock, 300 uncaptured */
    d9m_attr_begin(&p, 0, 1000);
    d9m_attr_gap(&p, 600, 900);
    d9m_attr_offcpu(&p, 100, 300, D9M_PART_LOCK);
    d9m_attr_cpu(&p, 500);
    want = (d9m_parts){{0}};
    want.ns[D9M_PART_LOCK] = 200;
    want.ns[D9M_PART_OFF_CPU_UNCAPTURED] = 300;
    want.ns[D9M_PART_ON_CPU] = 500;
    check_both(&p, &want);
    /* CPU 100: off 900, but only the gap's 300 can be uncaptured (the rest was seen running) */
    d9m_attr_cpu(&p, 100);
    want.ns[D9M_PART_ON_CPU] = 500;
    check_both(&p, &want);
    /* CPU 900: off 100, less than the covered 200: nothing uncaptured, the gap ran */
    d9m_attr_cpu(&p, 900);
    want.ns[D9M_PART_OFF_CPU_UNCAPTURED] = 0;
    want.ns[D9M_PART_ON_CPU] = 800;
    check_both(&p, &want);
    /* CPU above the elapsed time (clocks): all of the gap ran */
    d9m_attr_cpu(&p, 5000);
    check_both(&p, &want);
    /* no gap: the switch records' split stands (the task clock leaves out the switching) */
    d9m_attr_begin(&p, 0, 1000);
    d9m_attr_offcpu(&p, 100, 300, D9M_PART_IO);
    d9m_attr_cpu(&p, 700);
    want = (d9m_parts){{0}};
    want.ns[D9M_PART_IO] = 200;
    want.ns[D9M_PART_ON_CPU] = 800;
    check_both(&p, &want);
    /* inconsistent intervals: all unknown still */
    d9m_attr_begin(&p, 0, 1000);
    d9m_attr_gap(&p, 800, 1000);
    d9m_attr_offcpu(&p, 100, 300, D9M_PART_LOCK);
    d9m_attr_offcpu(&p, 200, 400, D9M_PART_IO);
    d9m_attr_cpu(&p, 100);
    want = (d9m_parts){{0}};
    want.ns[D9M_PART_UNKNOWN] = 1000;
    check_both(&p, &want);
    CHECK_STR(d9m_part_names[D9M_PART_OFF_CPU_UNCAPTURED], "off_cpu_uncaptured");
}

#define N(a) (sizeof(a) / sizeof(a)[0])

static void test_causes(void) {
    const char *lock[] = {"__schedule", "schedule", "futex_wait_queue", "futex_wait", "__x64_sys_futex",
                          "do_syscall_64", "entry_SYSCALL_64_after_hwframe", "__lll_lock_wait",
                          "___pthread_mutex_lock", "take_lock", "start_thread"};
    const char *sleep[] = {"__schedule", "schedule", "do_nanosleep", "hrtimer_nanosleep",
                           "__x64_sys_clock_nanosleep", "do_syscall_64", "__GI___clock_nanosleep",
                           "__nanosleep", "nap"};
    const char *fault[] = {"__schedule", "io_schedule", "folio_wait_bit_common", "filemap_fault",
                           "__do_fault", "handle_mm_fault", "do_user_addr_fault", "exc_page_fault",
                           "asm_exc_page_fault", "touch_pages"};
    const char *io[] = {"__schedule", "schedule", "pipe_read", "vfs_read", "ksys_read", "__x64_sys_read",
                        "do_syscall_64", "entry_SYSCALL_64_after_hwframe", "__GI___libc_read", "handler"};
    const char *user_io[] = {NULL, "__libc_recv", "handler"}; /* no kernel frames: the wrapper */
    const char *other[] = {"__schedule", "schedule", "some_kernel_wait", NULL, "app"};
    CHECK_EQ_U64(d9m_offcpu_cause(false, lock, N(lock)), D9M_PART_LOCK);
    CHECK_EQ_U64(d9m_offcpu_cause(false, sleep, N(sleep)), D9M_PART_SLEEP);
    CHECK_EQ_U64(d9m_offcpu_cause(false, fault, N(fault)), D9M_PART_FAULT);
    CHECK_EQ_U64(d9m_offcpu_cause(false, io, N(io)), D9M_PART_IO);
    CHECK_EQ_U64(d9m_offcpu_cause(false, user_io, N(user_io)), D9M_PART_IO);
    CHECK_EQ_U64(d9m_offcpu_cause(false, other, N(other)), D9M_PART_BLOCKED_OTHER);
    CHECK_EQ_U64(d9m_offcpu_cause(false, NULL, 0), D9M_PART_BLOCKED_OTHER);
    CHECK_EQ_U64(d9m_offcpu_cause(true, lock, N(lock)), D9M_PART_RUNNABLE);
    CHECK(d9m_is_lock_frame("pthread_mutex_lock.constprop.0"));
    CHECK(d9m_is_lock_frame("__pthread_rwlock_wrlock_full64"));
    CHECK(!d9m_is_lock_frame("pthread_mutex_unlock"));
    CHECK(!d9m_is_lock_frame(NULL));
    CHECK_STR(d9m_part_names[D9M_PART_BLOCKED_OTHER], "blocked_other");
}

static void poll_parts(const d9m_coverage *c, uint64_t worker, uint64_t start, uint64_t end,
                       d9m_parts *out) {
    d9m_attr_poll p;
    d9m_attr_begin(&p, start, end);
    d9m_coverage_gaps(c, worker, &p);
    d9m_attr_offcpu(&p, start + 10, start + 20, D9M_PART_IO);
    d9m_attr_finish(&p, out);
}

/* One poll's parts with its gaps found from a cursor (NULL: searched). */
static void poll_parts_from(const d9m_coverage *c, uint64_t worker, uint64_t start, uint64_t end,
                            d9m_cov_cursor *cur, d9m_parts *out) {
    d9m_attr_poll p;
    d9m_attr_begin(&p, start, end);
    d9m_coverage_gaps_from(c, worker, &p, cur);
    d9m_attr_finish(&p, out);
}

/* The coverage cursor (a caller's polls in order of start step on from the previous poll's
 * changes and drops) gives every poll the gaps the two searches give it: polls of three
 * workers in order with a cursor each and one for all, polls that go back, polls between,
 * across and on the changes and drops. */
static void test_coverage_cursor(void) {
    d9m_coverage c = {0};
    d9m_coverage_metadata(&c, "source.off_cpu", 14, "active", 6);
    d9t_rng rng = {D9T_RNG_SEED};
    uint64_t t = 1000;
    for (int i = 0; i < 400; i++) { /* the governor pausing and resuming, drops between */
        uint64_t x = d9t_rng_next(&rng);
        t += 50 + x % 3000;
        if (x % 5 == 0) d9m_coverage_drop(&c, t, x % 7 == 0 ? 255 : (x >> 8) % 3, 0);
        else d9m_coverage_change(&c, t, "off_cpu", 7, (x >> 16) % 3 ? "paused" : "full", (x >> 16) % 3 ? 6 : 4);
    }
    CHECK(c.nchanges > 200 && c.ndrops > 40);
    d9m_cov_cursor each[3] = {{0}, {0}, {0}}, all = {0}, back = {0};
    size_t polls = 0, differ = 0;
    for (uint64_t s = 0; s < t + 5000; s += 700) {
        for (uint64_t w = 0; w < 3; w++) {
            uint64_t start = s + w * 233, end = start + 40 + (start * 7919) % 2500;
            d9m_parts want, got;
            poll_parts_from(&c, w, start, end, NULL, &want);
            poll_parts_from(&c, w, start, end, &each[w], &got);
            differ += memcmp(&want, &got, sizeof want) != 0;
            poll_parts_from(&c, w, start, end, &all, &got);
            differ += memcmp(&want, &got, sizeof want) != 0;
            /* every other poll far back, then on again: searched, not stepped on */
            uint64_t bs = (polls & 1) ? start / 3 : start;
            poll_parts_from(&c, w, bs, bs + (end - start), NULL, &want);
            poll_parts_from(&c, w, bs, bs + (end - start), &back, &got);
            differ += memcmp(&want, &got, sizeof want) != 0;
            polls++;
        }
    }
    CHECK(polls > 1000);
    CHECK_EQ_U64(differ, 0);
    /* a poll on a change's and a drop's time, and at 0 */
    d9m_cov_cursor z = {0};
    d9m_parts want, got;
    poll_parts_from(&c, 1, c.changes[7].ts, c.changes[9].ts, NULL, &want);
    poll_parts_from(&c, 1, c.changes[7].ts, c.changes[9].ts, &z, &got);
    CHECK(memcmp(&want, &got, sizeof want) == 0);
    poll_parts_from(&c, 1, c.drops[3].ts, c.drops[3].ts + 1, NULL, &want);
    poll_parts_from(&c, 1, c.drops[3].ts, c.drops[3].ts + 1, &z, &got);
    CHECK(memcmp(&want, &got, sizeof want) == 0);
    poll_parts_from(&c, 1, 0, 10, NULL, &want);
    poll_parts_from(&c, 1, 0, 10, &z, &got);
    CHECK(memcmp(&want, &got, sizeof want) == 0);
    /* polls that end on, start on or start just after a change's or a drop's time, each
     * stepped on to from a poll just before (the cursor's quiet times, d9m_cov_cursor,
     * at their bounds) */
    size_t edges = 0;
    differ = 0;
    for (size_t k = 0; k < c.nchanges + c.ndrops; k++) {
        uint64_t ts = k < c.nchanges ? c.changes[k].ts : c.drops[k - c.nchanges].ts;
        const uint64_t from[3] = {ts - 30, ts, ts + 1}, to[3] = {ts, ts + 30, ts + 30};
        for (int e = 0; e < 3; e++)
            for (uint64_t w = 0; w < 3; w++) {
                d9m_cov_cursor cur = {0};
                poll_parts_from(&c, w, from[e] - 40, from[e] - 35, &cur, &got); /* the cursor before */
                poll_parts_from(&c, w, from[e], to[e], NULL, &want);
                poll_parts_from(&c, w, from[e], to[e], &cur, &got);
                differ += memcmp(&want, &got, sizeof want) != 0;
                edges++;
            }
    }
    CHECK(edges > 3000);
    CHECK_EQ_U64(differ, 0);
    d9m_coverage_free(&c);
}

static void test_coverage(void) {
    d9m_coverage c = {0};
    d9m_parts out;
    /* nothing stated, no switch record read: nothing is known */
    poll_parts(&c, 0, 100, 1100, &out);
    CHECK_EQ_U64(out.ns[D9M_PART_UNKNOWN], 1000);
    c.switch_seen = true;
    poll_parts(&c, 0, 100, 1100, &out);
    CHECK_EQ_U64(out.ns[D9M_PART_UNKNOWN], 0);
    CHECK_EQ_U64(out.ns[D9M_PART_IO], 10);
    d9m_coverage_metadata(&c, "source.off_cpu", 14, "inactive: no perf", 17);
    poll_parts(&c, 0, 100, 1100, &out);
    CHECK_EQ_U64(out.ns[D9M_PART_UNKNOWN], 1000);
    d9m_coverage_metadata(&c, "source.off_cpu", 14, "active: perf", 12);

    /* the governor: full from 0, sampled 500..800, no_stacks (covered) 800..1000, paused on */
    d9m_coverage_change(&c, 800, "off_cpu", 7, "no_stacks", 9);
    d9m_coverage_change(&c, 0, "off_cpu", 7, "full", 4);
    d9m_coverage_change(&c, 500, "off_cpu", 7, "sampled", 7);
    d9m_coverage_change(&c, 1000, "off_cpu", 7, "paused", 6);
    d9m_coverage_change(&c, 600, "cpu_profile", 11, "paused", 6); /* another source */
    poll_parts(&c, 0, 100, 1100, &out);
    CHECK_EQ_U64(out.ns[D9M_PART_UNKNOWN], 300 + 100);
    CHECK_EQ_U64(out.ns[D9M_PART_ON_CPU], 1000 - 400 - 10);
    poll_parts(&c, 0, 550, 700, &out); /* inside the sampled period */
    CHECK_EQ_U64(out.ns[D9M_PART_UNKNOWN], 150);
    CHECK_EQ_U64(out.ns[D9M_PART_IO], 0);

    /* drops: the poll of the worker they concern, from its start to the drop */
    d9m_coverage d = {0};
    d9m_coverage_metadata(&d, "source.off_cpu", 14, "active", 6);
    d9m_coverage_drop(&d, 700, 3, 300);
    d9m_coverage_drop(&d, 2500, 255, 0);   /* the whole process (perf_ring_full) */
    d9m_coverage_drop(&d, 3500, 255, 999); /* a thread that is no worker */
    poll_parts(&d, 3, 100, 1100, &out);
    CHECK_EQ_U64(out.ns[D9M_PART_UNKNOWN], 600);
    CHECK_EQ_U64(out.ns[D9M_PART_IO], 0);
    poll_parts(&d, 4, 100, 1100, &out);
    CHECK_EQ_U64(out.ns[D9M_PART_UNKNOWN], 0);
    poll_parts(&d, 4, 2000, 3000, &out);
    CHECK_EQ_U64(out.ns[D9M_PART_UNKNOWN], 500);
    poll_parts(&d, 4, 3000, 4000, &out);
    CHECK_EQ_U64(out.ns[D9M_PART_UNKNOWN], 0);
    poll_parts(&d, 3, 800, 1100, &out); /* a drop before the poll: nothing of it */
    CHECK_EQ_U64(out.ns[D9M_PART_UNKNOWN], 0);
    d9m_coverage_free(&c);
    d9m_coverage_free(&d);
}

#define S(x) x, sizeof x - 1

/* The metadata poll_cpu, read once for every reader (d9m_coverage_metadata). */
static void test_poll_cpu_metadata(void) {
    bool on = false;
    uint64_t min = 7;
    CHECK(!d9m_poll_cpu_metadata(S("source.off_cpu"), S("on: polls over 1000 us"), &on, &min));
    CHECK(!on && min == 7); /* another key: untouched */
    CHECK(d9m_poll_cpu_metadata(S("poll_cpu"), S("on: polls over 2500 us with a switch inside"), &on, &min));
    CHECK(on);
    CHECK_EQ_U64(min, 2500000);
    CHECK(d9m_poll_cpu_metadata(S("poll_cpu"), S("off: DIAL9_POLL_CPU_MIN_US=0"), &on, &min));
    CHECK(!on && min == 0);
    d9m_poll_cpu_metadata(S("poll_cpu"), S("on: polls over 0 us"), &on, &min);
    CHECK(!on);
    d9m_poll_cpu_metadata(S("poll_cpu"), S("on: polls over us"), &on, &min);
    CHECK(!on);
    d9m_coverage c = {0};
    d9m_coverage_metadata(&c, S("poll_cpu"), S("on: polls over 1000 us"));
    d9m_coverage_metadata(&c, S("source.off_cpu"), S("active: perf"));
    CHECK(c.poll_cpu_on && c.poll_cpu_min_ns == 1000000 && c.stated == D9M_SWITCH_ACTIVE);
    d9m_coverage_free(&c);
}

/* The rule of a poll's CPU time (d9m_attr_poll_cpu): exact -> its CPU time; none, stated on,
 * over the threshold, with gaps -> elapsed (gaps on_cpu); not exact, none under the threshold,
 * none without gaps, none while not stated on -> nothing. */
static void rule_parts(const d9m_coverage *c, d9m_poll_cpu said, uint64_t cpu, uint64_t end, bool gap, d9m_parts *out) {
    d9m_attr_poll p;
    d9m_attr_begin(&p, 0, end);
    if (gap) d9m_attr_gap(&p, 0, end / 2);
    d9m_attr_offcpu(&p, end / 2, end / 2 + 100, D9M_PART_IO);
    d9m_attr_poll_cpu(&p, c, said, cpu);
    d9m_attr_finish(&p, out);
    CHECK_EQ_U64(total(out), end);
}

static void test_poll_cpu_rule(void) {
    d9m_coverage on = {0}, off = {0};
    d9m_coverage_metadata(&on, S("poll_cpu"), S("on: polls over 1 us"));
    d9m_parts out;
    rule_parts(&on, D9M_POLL_CPU_NONE, 0, 2000, true, &out); /* no switch: its gap ran */
    CHECK_EQ_U64(out.ns[D9M_PART_ON_CPU], 1900);
    CHECK_EQ_U64(out.ns[D9M_PART_UNKNOWN], 0);
    CHECK_EQ_U64(out.ns[D9M_PART_OFF_CPU_UNCAPTURED], 0);
    rule_parts(&on, D9M_POLL_CPU_EXACT, 1400, 2000, true, &out); /* 600 off, 100 covered */
    CHECK_EQ_U64(out.ns[D9M_PART_OFF_CPU_UNCAPTURED], 500);
    CHECK_EQ_U64(out.ns[D9M_PART_ON_CPU], 1400);
    rule_parts(&on, D9M_POLL_CPU_NOT_EXACT, 0, 2000, true, &out);
    CHECK_EQ_U64(out.ns[D9M_PART_UNKNOWN], 1000);
    rule_parts(&on, D9M_POLL_CPU_NONE, 0, 1000, true, &out); /* 1000 ns: not over the 1 us threshold */
    CHECK_EQ_U64(out.ns[D9M_PART_UNKNOWN], 500);
    rule_parts(&on, D9M_POLL_CPU_NONE, 0, 2000, false, &out); /* no gap: the switch records */
    CHECK_EQ_U64(out.ns[D9M_PART_ON_CPU], 1900);
    CHECK_EQ_U64(out.ns[D9M_PART_IO], 100);
    rule_parts(&off, D9M_POLL_CPU_NONE, 0, 2000, true, &out); /* not stated on */
    CHECK_EQ_U64(out.ns[D9M_PART_UNKNOWN], 1000);
    CHECK(d9m_poll_cpu_presumed(&on, D9M_POLL_CPU_NONE, 1001, true));
    CHECK(!d9m_poll_cpu_presumed(&on, D9M_POLL_CPU_NONE, 1001, false));
    CHECK(!d9m_poll_cpu_presumed(&on, D9M_POLL_CPU_NOT_EXACT, 1001, true));
    CHECK(!d9m_poll_cpu_presumed(&off, D9M_POLL_CPU_NONE, 1001, true));
}

int main(void) {
    test_poll_cpu_metadata();
    test_poll_cpu_rule();
    test_exact_parts();
    test_gaps();
    test_broken_input();
    test_causes();
    test_coverage();
    test_coverage_cursor();
    test_cpu_time();
    return d9t_summary("model_attribution");
}
