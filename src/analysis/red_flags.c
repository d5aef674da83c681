/* Red flags: the findings of a report that deserve attention, each with a severity, the
 * evidence (numbers, where, when) and, when there is one, what to do about it. Thresholds are
 * in d9a_options (docs/analyze.md lists them). */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "analysis/internal.h"

#define MAX_FLAGS 24

typedef struct flag_list {
    d9a_flag *items;
    size_t n;
} flag_list;

static d9a_flag *add(flag_list *l, d9a_severity sev, const char *code) {
    if (l->n == MAX_FLAGS) return NULL;
    d9a_flag *f = &l->items[l->n++];
    memset(f, 0, sizeof *f);
    f->severity = sev;
    f->code = code;
    return f;
}

static void put(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void put(char *buf, size_t len, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
}

/* Append to a buffer already holding a string. */
static void append(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void append(char *buf, size_t len, const char *fmt, ...) {
    size_t n = strlen(buf);
    if (n + 1 >= len) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + n, len - n, fmt, ap);
    va_end(ap);
}

static double rel_s(const d9a_report *r, uint64_t ts) {
    return ts >= r->trace_first_ns ? (double)(ts - r->trace_first_ns) / 1e9 : 0;
}

static const d9a_source *source(const d9a_report *r, const char *name) {
    for (size_t i = 0; i < r->nsources; i++)
        if (!strcmp(r->sources[i].name, name)) return &r->sources[i];
    return NULL;
}

static void long_polls(const d9a_analysis *a, const d9a_report *r, flag_list *l) {
    if (r->polls_over_warn == 0 || r->nlong_polls == 0) return;
    char t1[32], t2[32];
    const d9a_long_poll *p = &r->long_polls[0];
    bool crit = r->polls_over_crit > 0;
    d9a_flag *f = add(l, crit ? D9A_CRITICAL : D9A_WARNING, "long_poll");
    if (!f) return;
    put(f->title, sizeof f->title, "%" PRIu64 " poll%s longer than %s (longest %s)",
        crit ? r->polls_over_crit : r->polls_over_warn,
        (crit ? r->polls_over_crit : r->polls_over_warn) == 1 ? "" : "s",
        d9a_format_ns(t1, sizeof t1, crit ? a->opt.long_poll_crit_ns : a->opt.long_poll_warn_ns),
        d9a_format_ns(t2, sizeof t2, p->duration_ns));
    put(f->evidence, sizeof f->evidence,
        "longest: worker %" PRIu64 ", task %#" PRIx64 " spawned at %s, at +%.6f s; %" PRIu64
        " poll(s) > %s in all",
        p->worker, p->task, p->location, rel_s(r, p->start_ns), r->polls_over_warn,
        d9a_format_ns(t1, sizeof t1, a->opt.long_poll_warn_ns));
    if (p->ngroups > 0 && p->groups[0].stack) {
        const d9a_stack_view *v = p->groups[0].stack;
        append(f->evidence, sizeof f->evidence, "; inside it: %" PRIu64 " %s sample(s) in %s",
               p->groups[0].count, p->groups[0].source ? "off-CPU" : "CPU", v->function);
        if (v->syscall) append(f->evidence, sizeof f->evidence, " in %s()", v->syscall);
        if (p->groups[0].est_ns)
            append(f->evidence, sizeof f->evidence, " (off-CPU up to %s)",
                   d9a_format_ns(t1, sizeof t1, p->groups[0].est_ns));
        if (v->app_frame) append(f->evidence, sizeof f->evidence, " called from %s", v->app_frame);
        put(f->hint, sizeof f->hint, "see LONG POLLS for the stacks inside the slowest polls");
    } else {
        put(f->hint, sizeof f->hint,
            "a poll should return within ~100 us: find the work or blocking call in the task "
            "spawned at %s",
            p->location);
    }
}

static void sched_delays(const d9a_analysis *a, const d9a_report *r, flag_list *l) {
    if (r->sched_wait.count == 0 || r->sched_wait.max <= a->opt.sched_delay_warn_ns) return;
    bool crit = r->sched_wait.max > a->opt.sched_delay_crit_ns;
    d9a_flag *f = add(l, crit ? D9A_CRITICAL : D9A_WARNING, "sched_delay");
    if (!f) return;
    char t1[32], t2[32];
    put(f->title, sizeof f->title, "kernel scheduling delays up to %s (%" PRIu64 " unpark%s > %s)",
        d9a_format_ns(t1, sizeof t1, r->sched_wait.max), r->sched_over_warn,
        r->sched_over_warn == 1 ? "" : "s",
        d9a_format_ns(t2, sizeof t2, a->opt.sched_delay_warn_ns));
    if (r->nsched_worst)
        put(f->evidence, sizeof f->evidence,
            "worst: worker %" PRIu64 " waited %s runnable before running, at +%.6f s; p99 %s",
            r->sched_worst[0].worker, d9a_format_ns(t1, sizeof t1, r->sched_worst[0].wait_ns),
            rel_s(r, r->sched_worst[0].ts), d9a_format_ns(t2, sizeof t2, r->sched_wait.p99));
    put(f->hint, sizeof f->hint,
        "worker threads sat on a CPU run queue: more runnable threads than CPUs (other "
        "processes, cgroup CPU limits, too many workers)");
}

static void wake_delays(const d9a_analysis *a, const d9a_report *r, flag_list *l) {
    if (r->wake_over_warn == 0 || r->nwake_worst == 0) return;
    bool crit = r->wake_over_crit > 0;
    d9a_flag *f = add(l, crit ? D9A_CRITICAL : D9A_WARNING, "wake_delay");
    if (!f) return;
    char t1[32], t2[32];
    const d9a_wake_delay *w = &r->wake_worst[0];
    put(f->title, sizeof f->title, "%" PRIu64 " wake%s waited more than %s for a poll (worst %s)",
        r->wake_over_warn, r->wake_over_warn == 1 ? "" : "s",
        d9a_format_ns(t1, sizeof t1, a->opt.wake_delay_warn_ns),
        d9a_format_ns(t2, sizeof t2, w->delay_ns));
    put(f->evidence, sizeof f->evidence,
        "worst: task %#" PRIx64 " (%s) woken at +%.6f s, polled on worker %" PRIu64
        " at +%.6f s; p99 %s",
        w->task, w->location, rel_s(r, w->wake_ns), w->worker, rel_s(r, w->poll_ns),
        d9a_format_ns(t1, sizeof t1, r->wake_delay.p99));
    put(f->hint, sizeof f->hint,
        "woken tasks waited behind other work: long polls on the same worker, deep queues, or "
        "busy/preempted worker threads");
}

static void blocking(const d9a_report *r, flag_list *l) {
    uint64_t blocked = r->blocked_in_poll, blocked_est = r->blocked_in_poll_ns;
    const d9a_sample_group *top = NULL;
    for (size_t i = 0; i < r->nblocking_functions && !top; i++) /* by time inside polls */
        if (!r->blocking_functions[i].preempted && r->blocking_functions[i].in_poll)
            top = &r->blocking_functions[i];
    uint64_t blocked_ns = 0;
    for (size_t i = 0; i < r->nworkers; i++)
        blocked_ns += r->workers[i].offcpu_in_poll_ns - r->workers[i].preempted_in_poll_ns;
    if (blocked == 0 && blocked_ns < 1000000) return;
    d9a_flag *f = add(l, D9A_WARNING, "blocking_in_poll");
    if (!f) return;
    char t1[32];
    if (blocked)
        put(f->title, sizeof f->title,
            "blocking calls inside polls (%" PRIu64 " off-CPU sample%s inside polls, up to %s)",
            blocked, blocked == 1 ? "" : "s", d9a_format_ns(t1, sizeof t1, blocked_est));
    else
        put(f->title, sizeof f->title, "worker threads blocked inside polls for %s",
            d9a_format_ns(t1, sizeof t1, blocked_ns));
    /* by system call first (socket(), futex(), ...): what the code called; else by function */
    size_t shown = 0;
    for (size_t i = 0; i < r->nblocking_syscalls && shown < 3; i++) {
        const d9a_sample_group *g = &r->blocking_syscalls[i];
        if (!g->syscall || g->in_poll == 0 || g->preempted) continue;
        append(f->evidence, sizeof f->evidence, "%s%s(): %" PRIu64 " sample%s, up to %s, in %s",
               shown ? "; " : "", g->syscall, g->in_poll, g->in_poll == 1 ? "" : "s",
               d9a_format_ns(t1, sizeof t1, g->in_poll_ns), g->function);
        if (shown == 0 && g->app_frame)
            append(f->evidence, sizeof f->evidence, " called from %s", g->app_frame);
        if (shown == 0 && g->example_location)
            append(f->evidence, sizeof f->evidence, " (task spawned at %s)", g->example_location);
        shown++;
    }
    if (shown == 0 && top) {
        put(f->evidence, sizeof f->evidence, "top: %s (%" PRIu64 " sample%s, up to %s)",
            top->function, top->in_poll, top->in_poll == 1 ? "" : "s",
            d9a_format_ns(t1, sizeof t1, top->in_poll_ns));
        if (top->app_frame) append(f->evidence, sizeof f->evidence, " called from %s", top->app_frame);
        if (top->example_location)
            append(f->evidence, sizeof f->evidence, ", in a task spawned at %s", top->example_location);
    }
    if (blocked_ns)
        append(f->evidence, sizeof f->evidence, "%soff-CPU time inside polls (SchedSwitch): %s",
               f->evidence[0] ? "; " : "", d9a_format_ns(t1, sizeof t1, blocked_ns));
    put(f->hint, sizeof f->hint,
        "a blocking call stalls every task of the worker: move it to a thread pool or make it "
        "non-blocking (see BLOCKING CALLS)");
}

/* Lock contention is the blocking a user fixes differently (the critical section, not the
 * call): said apart from blocking_in_poll, by the function that took the lock. */
static void lock_contention(const d9a_report *r, flag_list *l) {
    uint64_t samples = 0, total = 0, worst = 0;
    for (size_t i = 0; i < r->nlock_waits; i++) {
        samples += r->lock_waits[i].samples;
        total += r->lock_waits[i].total_ns;
        if (r->lock_waits[i].worst_ns > worst) worst = r->lock_waits[i].worst_ns;
    }
    if (samples == 0) return;
    d9a_flag *f = add(l, D9A_WARNING, "lock_contention");
    if (!f) return;
    char t1[32], t2[32];
    put(f->title, sizeof f->title, "lock contention inside polls: %" PRIu64 " wait%s for a lock, up to %s in all (worst %s)",
        samples, samples == 1 ? "" : "s", d9a_format_ns(t1, sizeof t1, total), d9a_format_ns(t2, sizeof t2, worst));
    for (size_t i = 0; i < r->nlock_waits && i < 3; i++) {
        const d9a_lock_wait *w = &r->lock_waits[i];
        append(f->evidence, sizeof f->evidence, "%s%s in %s: %" PRIu64 " wait%s, up to %s, worst %s", i ? "; " : "",
               w->app_frame ? w->app_frame : "(unknown caller)", w->lock_function, w->samples,
               w->samples == 1 ? "" : "s", d9a_format_ns(t1, sizeof t1, w->total_ns),
               d9a_format_ns(t2, sizeof t2, w->worst_ns));
        if (i == 0 && w->example_location)
            append(f->evidence, sizeof f->evidence, " (task spawned at %s)", w->example_location);
    }
    put(f->hint, sizeof f->hint,
        "a worker waiting for a lock stalls every task of that worker: shorten what the other "
        "holders do under the lock, split or shard it, or take it with a trylock and retry from "
        "the loop instead of blocking (see LOCK CONTENTION)");
}

static void task_leak(const d9a_report *r, flag_list *l) {
    if (r->spawned < 20 || r->live_at_end < 20 || r->live_at_end * 2 < r->spawned ||
        r->live_growth_per_s <= 0)
        return;
    d9a_flag *f = add(l, D9A_WARNING, "task_leak");
    if (!f) return;
    put(f->title, sizeof f->title,
        "live tasks keep growing: %" PRIu64 " of %" PRIu64 " tasks spawned are still alive "
        "(+%.1f/s over the second half)",
        r->live_at_end, r->spawned, r->live_growth_per_s);
    const d9a_location_report *top = NULL;
    for (size_t i = 0; i < r->nlocations; i++)
        if (!top || r->locations[i].live > top->live) top = &r->locations[i];
    if (top)
        put(f->evidence, sizeof f->evidence,
            "most live tasks spawned at %s: %" PRIu64 " spawned, %" PRIu64 " terminated, %" PRIu64
            " alive",
            top->location, top->spawned, top->terminated, top->live);
    put(f->hint, sizeof f->hint,
        "tasks that never finish (waiting on a channel nobody closes, missing timeouts) hold "
        "memory; check the location above");
}

static void imbalance(const d9a_report *r, flag_list *l) {
    const d9a_worker_report *hi = NULL, *lo = NULL;
    size_t active = 0;
    for (size_t i = 0; i < r->nworkers; i++) {
        const d9a_worker_report *w = &r->workers[i];
        if (w->polls == 0 && w->parks == 0) continue;
        active++;
        if (!hi || w->busy_pct > hi->busy_pct) hi = w;
        if (!lo || w->busy_pct < lo->busy_pct) lo = w;
    }
    bool uneven = active >= 2 && hi->busy_pct >= 20 && hi->busy_pct >= 3 * lo->busy_pct;
    uint64_t q = r->polls_with_queue_while_parked;
    bool stranded = q >= 10 && q * 100 >= r->polls.count;
    if (!uneven && !stranded) return;
    d9a_flag *f = add(l, D9A_WARNING, "worker_imbalance");
    if (!f) return;
    if (uneven)
        put(f->title, sizeof f->title,
            "uneven load: worker %" PRIu64 " busy %.1f %% of the time, worker %" PRIu64 " %.1f %%",
            hi->id, hi->busy_pct, lo->id, lo->busy_pct);
    else
        put(f->title, sizeof f->title, "work waited in a worker's queue while another worker was parked");
    put(f->evidence, sizeof f->evidence,
        "%" PRIu64 " poll(s) started with a non-empty local queue while another worker was "
        "parked (of %" PRIu64 " with a queue)",
        q, r->polls_with_queue);
    if (r->nqueued_examples)
        append(f->evidence, sizeof f->evidence,
               "; e.g. worker %" PRIu64 " had %" PRIu64 " queued at +%.6f s while worker %" PRIu64
               " was parked",
               r->queued_examples[0].worker, r->queued_examples[0].local_queue,
               rel_s(r, r->queued_examples[0].ts), r->queued_examples[0].parked_worker);
    put(f->hint, sizeof f->hint,
        "one worker does most of the work: tasks pinned to it (a single connection, a "
        "thread-local runtime), or work stealing that does not kick in");
}

static void contention(const d9a_report *r, flag_list *l) {
    const d9a_worker_report *worst = NULL;
    for (size_t i = 0; i < r->nworkers; i++) {
        const d9a_worker_report *w = &r->workers[i];
        if (w->cpu_ratio < 0 || w->busy_wall_ns < 100000000) continue;
        if (!worst || w->cpu_ratio < worst->cpu_ratio) worst = w;
    }
    uint64_t preempted_samples = 0, in_poll = 0;
    for (size_t i = 0; i < r->nblocking_functions; i++) {
        in_poll += r->blocking_functions[i].in_poll;
        if (r->blocking_functions[i].preempted) preempted_samples += r->blocking_functions[i].in_poll;
    }
    uint64_t preempted_ns = 0, poll_ns = 0;
    for (size_t i = 0; i < r->nworkers; i++) {
        preempted_ns += r->workers[i].preempted_in_poll_ns;
        poll_ns += r->workers[i].poll_ns;
    }
    bool low_ratio = worst && worst->cpu_ratio < 0.7;
    bool preempted = preempted_samples >= 5 && preempted_samples * 10 >= in_poll;
    bool switch_preempted = poll_ns && preempted_ns * 100 >= poll_ns && preempted_ns >= 1000000;
    if (!low_ratio && !preempted && !switch_preempted) return;
    d9a_flag *f = add(l, D9A_WARNING, "cpu_contention");
    if (!f) return;
    char t1[32];
    if (low_ratio)
        put(f->title, sizeof f->title,
            "worker %" PRIu64 " ran on a CPU only %.0f %% of its busy time", worst->id,
            worst->cpu_ratio * 100);
    else
        put(f->title, sizeof f->title, "worker threads were preempted inside polls");
    if (low_ratio)
        append(f->evidence, sizeof f->evidence,
               "CPU time / wall time between unpark and park = %.2f over %" PRIu64
               " busy periods", worst->cpu_ratio, worst->busy_periods);
    if (preempted)
        append(f->evidence, sizeof f->evidence, "%s%" PRIu64 " preemption sample(s) inside polls",
               f->evidence[0] ? "; " : "", preempted_samples);
    if (switch_preempted)
        append(f->evidence, sizeof f->evidence, "%spreempted inside polls for %s",
               f->evidence[0] ? "; " : "", d9a_format_ns(t1, sizeof t1, preempted_ns));
    put(f->hint, sizeof f->hint,
        "the threads were off-CPU while busy: preempted by other threads (too few CPUs, CPU "
        "limits) or blocked (see BLOCKING CALLS)");
}

static void drops(const d9a_report *r, flag_list *l) {
    if (r->dropped == 0) return;
    bool crit = r->dropped * 100 > r->events;
    d9a_flag *f = add(l, crit ? D9A_CRITICAL : D9A_WARNING, "dropped_events");
    if (!f) return;
    put(f->title, sizeof f->title, "%" PRIu64 " event%s dropped by the recorder: the trace has gaps",
        r->dropped, r->dropped == 1 ? " was" : "s were");
    for (size_t i = 0; i < r->ndrops; i++)
        append(f->evidence, sizeof f->evidence, "%s%s: %" PRIu64, i ? ", " : "",
               r->drops_by_reason[i].name, r->drops_by_reason[i].count);
    put(f->hint, sizeof f->hint,
        "buffer_full: raise DIAL9_BUFFER_KB or lower DIAL9_FLUSH_MS; write_error: check the "
        "disk and DIAL9_TRACE_DIR; perf_lost: lower DIAL9_CPU_SAMPLE_HZ");
}

static void missing_sources(const d9a_analysis *a, const d9a_report *r, flag_list *l) {
    const d9a_source *cpu = source(r, "cpu_profile"), *cs = source(r, "context_switches");
    if (r->polls_over_warn > 0 && r->counts.cpu_samples == 0 && r->counts.offcpu_samples == 0 &&
        r->counts.sched_switches == 0) {
        d9a_flag *f = add(l, D9A_WARNING, "missing_source");
        if (f) {
            put(f->title, sizeof f->title,
                "long polls, but no CPU or context-switch samples to explain them");
            put(f->evidence, sizeof f->evidence, "%" PRIu64 " poll(s) > 10 ms; cpu_profile: %s; "
                "context switches: %s", r->polls_over_warn,
                cpu && cpu->declared ? cpu->declared : "no samples",
                cs && cs->declared ? cs->declared : "no samples");
            put(f->hint, sizeof f->hint,
                "enable DIAL9_CPU_PROFILE_ENABLED=1 (CPU samples) and "
                "DIAL9_SCHEDULE_PROFILE_ENABLED=1 (context switches) to see the stacks inside "
                "slow polls");
        }
    }
    if ((r->counts.cpu_samples || r->counts.offcpu_samples) && !r->symbols_present) {
        d9a_flag *f = add(l, D9A_INFO, "missing_source");
        if (f) {
            put(f->title, sizeof f->title, "stacks are not symbolized (no SymbolTableEntry events)");
            put(f->evidence, sizeof f->evidence, "%" PRIu64 " samples shown as hex addresses",
                r->counts.cpu_samples + r->counts.offcpu_samples);
            put(f->hint, sizeof f->hint,
                "run `dial9 symbolize` on the trace, or keep DIAL9_SYMBOLIZE=1 so sealed "
                "segments get symbols");
        }
    }
    if (r->counts.unparks > 0 && a->schedstat_seen == 0) {
        d9a_flag *f = add(l, D9A_INFO, "missing_source");
        if (f) {
            /* a trace that states its schedstat source has a CPU time on every park and
             * unpark (model/schedstat_source.h): only the delay is missing there */
            bool stated = a->schedstat != D9M_SCHEDSTAT_UNSTATED;
            put(f->title, sizeof f->title, stated ? "no kernel scheduling delay on unpark events"
                : "no CPU time or kernel scheduling delay on park/unpark events");
            put(f->evidence, sizeof f->evidence, stated ? "%" PRIu64 " unparks, sched_wait_ns all 0"
                : "%" PRIu64 " unparks, cpu_time_ns and sched_wait_ns all 0 or absent",
                r->counts.unparks);
            put(f->hint, sizeof f->hint, "enable DIAL9_SCHEDSTAT=1 (reads /proc/thread-self/schedstat)");
        }
    }
    if (r->polls.count > 0 && r->counts.wakes == 0) {
        d9a_flag *f = add(l, D9A_INFO, "missing_source");
        if (f) {
            put(f->title, sizeof f->title, "no wake events: wake-to-poll delays are unknown");
            put(f->hint, sizeof f->hint,
                "call d9_wake() where the runtime wakes a task (the loop adapters do)");
        }
    }
}

/* The preload shim's io_uring rings it never saw waited on (IoUringRingEvent). */
static void unseen_rings(const d9a_analysis *a, flag_list *l) {
    if (a->unseen_rings == 0) return;
    d9a_flag *f = add(l, D9A_WARNING, "unseen_io_uring");
    if (!f) return;
    char fds[64] = "";
    for (uint64_t i = 0; i < a->unseen_rings && i < 4; i++)
        append(fds, sizeof fds, "%s%" PRIu64, i ? ", " : "", a->unseen_ring_fd[i]);
    if (a->unseen_rings == 1)
        put(f->title, sizeof f->title, "io_uring ring at fd %s was never waited on where the shim "
            "could see it: its completions are not recorded", fds);
    else
        put(f->title, sizeof f->title, "%" PRIu64 " io_uring rings (fd %s%s) were never waited on "
            "where the shim could see them: their completions are not recorded", a->unseen_rings,
            fds, a->unseen_rings > 4 ? ", ..." : "");
    put(f->evidence, sizeof f->evidence, "IoUringRingEvent: set up through syscall(), no "
        "io_uring_enter wait seen");
    put(f->hint, sizeof f->hint, "the program enters the kernel with its own system call "
        "instruction: its loop's iterations are missing; call the d9_* hooks in the loop, or "
        "wait through libc's syscall() or liburing");
}

static void data_quality(const d9a_analysis *a, const d9a_report *r, flag_list *l) {
    if (r->late_records > 0) {
        d9a_flag *f = add(l, D9A_INFO, "out_of_order");
        if (f) {
            put(f->title, sizeof f->title,
                "%" PRIu64 " records were out of time order beyond the reordering window",
                r->late_records);
            put(f->evidence, sizeof f->evidence, "window: %zu records", a->opt.window_records);
            put(f->hint, sizeof f->hint,
                "samples/wakes near them may be misattributed; raise --window to reorder more");
        }
    }
    if (r->unmatched_poll_starts + r->unmatched_poll_ends > 0) {
        d9a_flag *f = add(l, D9A_INFO, "unmatched_polls");
        if (f) {
            put(f->title, sizeof f->title,
                "%" PRIu64 " poll start(s) without an end, %" PRIu64 " end(s) without a start",
                r->unmatched_poll_starts, r->unmatched_poll_ends);
            put(f->hint, sizeof f->hint,
                "expected at the edges of a trace or of --from/--to; many mean lost events");
        }
    }
}

static int cmp_flag(const void *x, const void *y) {
    const d9a_flag *a = x, *b = y;
    return (int)b->severity - (int)a->severity;
}

int d9a_add_red_flags(d9a_analysis *a) {
    d9a_report *r = &a->report;
    d9a_flag *items = d9_arena_alloc(&a->report_arena, MAX_FLAGS * sizeof *items, 16);
    if (!items) return -1;
    flag_list l = {items, 0};
    drops(r, &l);
    long_polls(a, r, &l);
    blocking(r, &l);
    lock_contention(r, &l);
    sched_delays(a, r, &l);
    wake_delays(a, r, &l);
    contention(r, &l);
    imbalance(r, &l);
    task_leak(r, &l);
    missing_sources(a, r, &l);
    unseen_rings(a, &l);
    data_quality(a, r, &l);
    /* stable by severity: keep the order above within one severity */
    for (size_t i = 1; i < l.n; i++) {
        d9a_flag v = l.items[i];
        size_t j = i;
        while (j > 0 && cmp_flag(&l.items[j - 1], &v) > 0) {
            l.items[j] = l.items[j - 1];
            j--;
        }
        l.items[j] = v;
    }
    r->flags = l.items;
    r->nflags = l.n;
    return 0;
}
