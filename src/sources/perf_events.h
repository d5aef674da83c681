/* The perf source: CPU profile samples (software CPU clock), exact off-CPU intervals
 * (PERF_RECORD_SWITCH) and context-switch samples with call chains, for every thread of the
 * process. Events are opened per CPU on each thread that exists at start, with `inherit`, so
 * threads created later are covered without any work on their side; each CPU has one ring
 * for the samples and one for the switch records (which carry less). The collector's thread
 * reads the rings on every drain. */
#ifndef D9_SOURCES_PERF_EVENTS_H
#define D9_SOURCES_PERF_EVENTS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/collector.h"
#include "core/source.h"

#define D9_PERF_MAX_FRAMES 128
/* Context-switch stacks are paced to d9_perf_request.stacks_per_sec (DIAL9_SWITCH_STACKS_PER_SEC,
 * default 500) on average, bursts of one second's worth passing whole: every switch below that
 * rate; above it the stacks pause between drains (see pace_stacks in perf_events.c). A stack
 * costs ~4-6 us of kernel time on the reference VM (a kernel unwind and the user frames), so
 * 500 a second is ~0.25 % of one CPU at any switch rate, small next to the switch records
 * themselves (docs/kernel-sources.md, "Costs"); it was 2000 (~1 %). */
/* The longest pause after a burst (the debt is forgiven beyond it), and the shortest time
 * the stacks stay on or off. */
#define D9_STACKS_MAX_PAUSE_NS 5000000000ull
#define D9_STACKS_WINDOW_NS (20u * 1000u * 1000u)

typedef struct d9_perf_request {
    bool cpu_profile;     /* CPU-clock samples at `hz` */
    uint32_t hz;
    bool kernel_frames;   /* try exclude_kernel = 0 for the CPU profile */
    bool switches;        /* PERF_RECORD_SWITCH for threads that record */
    bool switch_stacks;   /* context-switch samples with call chains, for workers */
    uint32_t stacks_per_sec; /* their pacing budget (> 0: d9_config_validate's bound) */
    d9_collector *collector; /* where to note changes (stacks paused); may be NULL */
    double budget_pct;    /* the cost governor's budget, % of one CPU; 0: not governed */
    bool thread_rings;    /* switch records from the recorded threads' task-clock events where they
                           * can carry them (thread_cpu_switch_ring.h), no switch event of ours */
} d9_perf_request;

/* What was opened, and why the rest was not (a negative errno, or 0 when active). */
typedef struct d9_perf_report {
    int cpu_err, switch_err, stacks_err;
    bool stacks_silent;   /* context-switch samples open but yield nothing (kernel excluded) */
    bool kernel_frames;   /* the CPU profile includes kernel frames */
    bool inherit_thread;  /* forked child processes are not followed (Linux 5.13+) */
    unsigned ring_kb;     /* data KiB per CPU ring of samples (CPU profile, switch stacks) */
    unsigned switch_ring_kb; /* data KiB per CPU ring of switch records */
    int cpus;             /* CPUs with a ring */
    int threads;          /* threads that existed at start and were attached */
    int threads_missed;   /* threads that existed at start and could not be attached */
    bool switch_rings;    /* the switch records come from the threads' own rings (thread_rings) */
    char switch_rings_why[160]; /* why not, when asked for */
} d9_perf_report;

/* Open what `req` asks for and the kernel allows. NULL when nothing could be opened; `rep`
 * says what happened either way. */
d9_source *d9_perf_source_open(const d9_perf_request *req, d9_perf_report *rep);

/* Counters of a perf source (for tests and benchmarks). */
typedef struct d9_perf_counters {
    uint64_t cpu_samples, switch_records, stack_samples, lost, filtered;
    uint64_t unwound, truncated; /* samples whose user stack was unwound with CFI / ended early, at the
                                  * drain (context-switch stacks unwound later: d9_perf_stacks_unwound) */
    uint64_t coverage_changes;   /* governor level changes (CoverageEvent written) */
    int level;                   /* the governor's level now (cost_governor.h) */
    uint64_t orphans;            /* switch-ins dropped: their switch-out fell in a gap */
    uint64_t closes, reopens;    /* the switch and stacks events closed (paused, between windows), opened again */
    uint64_t reopen_failures;    /* reopens that failed (the governor went to paused) */
    uint64_t reopen_cpu_ns;      /* CPU time the last reopen took (the collector's thread) */
} d9_perf_counters;
void d9_perf_source_counters(d9_source *s, d9_perf_counters *out);
/* The governor's level (cost_governor.h) and its changes so far, of the perf source opened
 * last (for tests and benchmarks, which cannot reach the source itself). */
void d9_perf_governor_now(int *level, uint64_t *changes);
/* The closes and reopens of the switch and stacks events (at the paused level and between a
 * sampled level's windows), and the switch records read, since the perf source opened last
 * (tests). */
void d9_perf_switch_events_now(uint64_t *closes, uint64_t *reopens, uint64_t *switch_records);
/* How many times a window enabled the open switch events by ioctl (an ioctl per event each
 * time) since the perf source opened last. A window that starts with a reopen opens them
 * enabled and adds none (tests). */
uint64_t d9_perf_switch_enables(void);
/* The CPU time the last reopen took, ns. */
uint64_t d9_perf_last_reopen_cpu_ns(void);
/* What the governor counts for a close and a reopen (its reopen_ns), ns of CPU: the open at
 * start at first, then smoothed over the measured closes and reopens. */
uint64_t d9_perf_reopen_cost_ns(void);
/* Reopens that failed (each sent the governor to paused). */
uint64_t d9_perf_reopen_failures(void);
/* Rings hosted on a dummy event of the collector's thread (host_ring in perf_events.c): the
 * perf fds that stay open while the switch events are closed (besides the CPU profile's). */
int d9_perf_ring_hosts(void);
/* The switch events' state, for tests that must know it held while they did something:
 * `*seq` is odd while it changes; the same even `*seq` before and after = the state held all
 * along. */
enum { D9_PERF_SWITCH_CLOSED, D9_PERF_SWITCH_OPEN /* open, disabled */, D9_PERF_SWITCH_ENABLED };
int d9_perf_switch_state(uint64_t *seq);
/* Tests and benchmarks: for the perf sources opened from now on, whether a sampled level closes
 * its events between windows (AUTO: where the governor's estimate says it pays; NEVER: as
 * before this existed; ALWAYS: at every sampled level); and, from the governor's next
 * evaluation on, a level it is held at (-1: none; a failed reopen still pauses it). */
typedef enum { D9_PERF_CLOSE_AUTO, D9_PERF_CLOSE_NEVER, D9_PERF_CLOSE_ALWAYS } d9_perf_window_closing;
void d9_perf_set_window_closing(d9_perf_window_closing policy);
void d9_perf_hold_governor_level(int level);
/* For d9_bench_governor's before/after: perf sources opened from now on keep their events
 * open (disabled) at the paused level, as before the paused level closed them. */
void d9_perf_keep_events_open_when_paused(bool keep);
/* Context-switch stacks the kernel took (read by the collector, kept or not) and CPU samples
 * read, since the perf source opened last (d9_bench_governor's costs per stack and sample). */
void d9_perf_samples_read(uint64_t *stacks, uint64_t *cpu_samples);

/* Whether the governor's full level paces the stacks at what the budget leaves after the
 * records (cost_governor.h, thin_stacks_at_full; the default) or at stacks_per_sec, sampling
 * the records sooner (as before; benchmarks). Read at each evaluation. */
void d9_perf_thin_stacks_at_full(bool thin);
/* Who unwinds a context-switch sample's user stack (CFI over its 2 KiB copy), for the perf
 * sources opened from now on. IN_POLLS (the default): the collector, and only for a sample
 * that falls inside a poll of its thread (core/collector_switch_stack.h); the others keep their
 * kernel frames. EVERY: the source, at the drain, every one (as before). NONE: nobody, the
 * samples are dropped once read (d9_bench_governor: the kernel's part of a stack alone). */
typedef enum { D9_PERF_UNWIND_IN_POLLS, D9_PERF_UNWIND_EVERY, D9_PERF_UNWIND_NONE } d9_perf_stack_unwind;
void d9_perf_set_stack_unwind(d9_perf_stack_unwind mode);
/* The collector's unwinding of a deferred sample: `payload` is what the source put after the
 * kernel frames (d9_src_event.sample.deferred_words). The user frames into out[0..max), leaf
 * first; *method says how (d9_stack_method). */
uint32_t d9_perf_unwind_deferred(const uint64_t *payload, uint64_t words, uint64_t *out, uint32_t max,
                                 uint8_t *method);
/* Context-switch stacks d9_perf_unwind_deferred unwound since the perf source opened last. */
uint64_t d9_perf_stacks_unwound(void);

/* Does the context-switch sample event deliver samples with kernel frames on this host?
 * 0 yes, 1 it opens but stays silent, or -errno when refused. Costs ~0.2 ms of CPU and three
 * 50 µs sleeps; -ECANCELED as soon as cancelled() (may be NULL) says the answer is not wanted
 * any more (checked before the event opens and before each sleep). */
int d9_perf_probe_switch_stacks(bool (*cancelled)(void));

#endif
