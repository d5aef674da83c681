/* Which kernel sources run, decided from the configuration and what the host allows, and said
 * in the metadata of every segment (docs/kernel-sources.md):
 *   source.cpu_profile    CPU samples (perf CPU clock, or SIGPROF timers as the fallback)
 *   source.off_cpu        exact off-CPU intervals (PERF_RECORD_SWITCH -> SchedSwitchEvent)
 *   source.switch_stacks  call chains at each context switch of a worker (CpuSampleEvent source 1)
 *   source.task_dumps     stacks of suspended tasks (TaskDumpEvent)
 *   host.*                perf_event_paranoid, kptr_restrict, frame pointers of the binary */
#include "sources/sources.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "core/run_metadata.h"
#include "core/thread_buffer.h"
#include "core/thread_cpu_clock.h"
#include "core/thread_cpu_switch_ring.h"
#include "sources/host_caps.h"
#include "sources/memory_map.h"
#include "sources/perf_events.h"
#include "sources/heap_sampler.h"
#include "sources/task_dump.h"
#include "sources/timer_sampler.h"
#include "sources/unwind_tables.h"

/* Every thread that registers may need a CPU timer (the timer sampler knows whether one runs),
 * and, where the off-CPU source takes its switch records from the threads' own task-clock
 * events, its event now: its switches are recorded from its first record on, not from the
 * collector's next drain (d9_tcc_rings_open_self: nothing when the rings are not consumed).
 * The hook is set once, when the library is loaded: before any thread can register, so the
 * core's plain (non-atomic) pointer is never written while another thread reads it. */
static void on_thread_register(d9_thread *t) {
    d9_timer_sampler_on_thread(t);
    d9_tcc_rings_open_self();
}

__attribute__((constructor)) static void install_register_hook(void) {
    d9_thread_register_hook = on_thread_register;
}

static _Atomic bool g_process_ending;

void d9_sources_process_ending(void) { atomic_store(&g_process_ending, true); }

static bool process_ending(void) { return atomic_load(&g_process_ending); }

bool d9_sources_process_is_ending(void) { return process_ending(); }

#define ENDING_NOTE D9_SOURCES_ENDING_NOTE

static void forget_in_child(void) {
    atomic_store(&g_process_ending, false);
    d9_timer_sampler_forget_after_fork();
    d9_unwind_tables_forget_after_fork();
    d9_task_dumps_stop();
    d9_heap_sampler_stop(); /* no collector here: a child samples again once it records */
}

/* "EACCES (perf_event_paranoid=3)" */
static const char *refusal(int err, const d9_host_caps *caps, char *buf, size_t len) {
    const char *name = err == -EACCES ? "EACCES" : err == -EPERM ? "EPERM" : err == -ENOENT ? "ENOENT"
                     : err == -ENOSYS ? "ENOSYS" : err == -EINVAL ? "EINVAL" : err == -EMFILE ? "EMFILE"
                     : err == -ENODEV ? "ENODEV" : err == -ENOMEM ? "ENOMEM" : NULL;
    char code[32];
    if (!name) {
        snprintf(code, sizeof code, "errno %d", -err);
        name = code;
    }
    if (caps->paranoid != D9_CAP_UNKNOWN)
        snprintf(buf, len, "%s, perf_event_paranoid=%d", name, caps->paranoid);
    else
        snprintf(buf, len, "%s", name);
    return buf;
}

static void note_host(d9_collector *c, const d9_host_caps *caps) {
    d9_run_metadata *m = d9_collector_metadata(c);
    char fp[128];
    if (!caps->checked) {
        d9_run_metadata_set(m, "host.perf_event_paranoid", D9_HOST_NOT_CHECKED);
        d9_run_metadata_set(m, "host.kptr_restrict", D9_HOST_NOT_CHECKED);
    } else {
        if (caps->paranoid == D9_CAP_UNKNOWN) d9_run_metadata_set(m, "host.perf_event_paranoid", "unknown");
        else
            d9_run_metadata_set(m, "host.perf_event_paranoid", "%d%s", caps->paranoid,
                                caps->perfmon ? " (CAP_PERFMON: not limited by it)" : "");
        if (caps->kptr_restrict == D9_CAP_UNKNOWN) d9_run_metadata_set(m, "host.kptr_restrict", "unknown");
        else
            d9_run_metadata_set(m, "host.kptr_restrict", "%d (kernel symbols %s)", caps->kptr_restrict,
                                caps->kernel_symbols ? "readable" : "hidden");
    }
    d9_run_metadata_set(m, "host.frame_pointers", "%s", d9_host_fp_verdict(caps, fp, sizeof fp));
}

static d9_source *add_or_close(d9_collector *c, d9_source *s) {
    if (s && !d9_collector_add_source(c, s)) {
        s->close(s);
        return NULL;
    }
    return s;
}

static void start_cpu_profile(const d9_config *cfg, d9_collector *c, const d9_host_caps *caps,
                              bool perf_tried, const d9_perf_report *rep, d9_source *perf) {
    char why[96], detail[320];
    if (!cfg->cpu_profile) {
        d9_collector_note_source(c, "cpu_profile", false, "disabled by configuration");
        return;
    }

    if (perf_tried && perf && rep->cpu_err == 0) {
        snprintf(detail, sizeof detail, "perf cpu-clock, %u Hz, %s, %d CPU rings of %u KiB", cfg->cpu_sample_hz,
                 rep->kernel_frames ? "kernel and user frames"
                                    : "user frames only (kernel frames need perf_event_paranoid <= 1 or CAP_PERFMON)",
                 rep->cpus, rep->ring_kb);
        d9_collector_note_source(c, "cpu_profile", true, detail);
        return;
    }
    int perf_err = perf_tried ? (rep->cpu_err ? rep->cpu_err : -ENOMEM) : 0;
    if (cfg->sampler == D9_SAMPLER_PERF) {
        snprintf(detail, sizeof detail, "perf refused (%s); DIAL9_CPU_SAMPLER=perf forbids the timer fallback",
                 refusal(perf_err, caps, why, sizeof why));
        d9_collector_note_source(c, "cpu_profile", false, detail);
        return;
    }
    d9_timer_report trep;
    d9_source *timer = add_or_close(c, d9_timer_sampler_open(cfg->cpu_sample_hz, c, &trep));
    char reason[160];
    if (cfg->sampler == D9_SAMPLER_TIMER) snprintf(reason, sizeof reason, "timer forced by configuration");
    else snprintf(reason, sizeof reason, "perf refused (%s)", refusal(perf_err, caps, why, sizeof why));
    if (!timer) {
        snprintf(detail, sizeof detail, "%s; timer fallback failed (%s)", reason,
                 refusal(trep.err ? trep.err : -ENOMEM, caps, why, sizeof why));
        d9_collector_note_source(c, "cpu_profile", false, detail);
        return;
    }
    snprintf(detail, sizeof detail,
             "timer (SIGPROF per thread CPU time, recording threads), %u Hz (at most CONFIG_HZ), user frames only; %s%s",
             cfg->cpu_sample_hz, reason,
             trep.chained ? "; chained to the application's SIGPROF handler" : "");
    d9_collector_note_source(c, "cpu_profile", true, detail);
}

static void note_schedule_profile(const d9_config *cfg, d9_collector *c, const d9_host_caps *caps,
                                  int stacks_probe, const d9_perf_report *rep, d9_source *perf) {
    char why[96], detail[256];
    if (!cfg->schedule_profile) {
        d9_collector_note_source(c, "off_cpu", false, "disabled by configuration");
        d9_collector_note_source(c, "switch_stacks", false, "disabled by configuration");
        return;
    }
    if (stacks_probe == -ECANCELED) {
        d9_collector_note_source(c, "off_cpu", false, ENDING_NOTE);
        d9_collector_note_source(c, "switch_stacks", false, ENDING_NOTE);
        return;
    }
    if (perf && rep->switch_rings) {
        snprintf(detail, sizeof detail,
                 "perf context-switch records from each recorded thread's own task-clock event (its %u-page "
                 "switch ring, read by the collector; records the kernel wrote over first are counted lost), "
                 "up to %d threads; no inherited switch event; cpu not recorded",
                 D9_TCC_SOURCE_RING_PAGES, D9_TCC_MAX_RING_THREADS);
        d9_collector_note_source(c, "off_cpu", true, detail);
    } else if (perf && rep->switch_err == 0) {
        snprintf(detail, sizeof detail,
                 "perf context-switch records (per-CPU events inherited by every thread, tid and time only), "
                 "threads that record, %d CPU rings of %u KiB",
                 rep->cpus, rep->switch_ring_kb);
        d9_collector_note_source(c, "off_cpu", true, detail);
    } else {
        snprintf(detail, sizeof detail, "perf refused (%s)",
                 refusal(rep->switch_err ? rep->switch_err : -ENOMEM, caps, why, sizeof why));
        d9_collector_note_source(c, "off_cpu", false, detail);
    }
    if (stacks_probe < 0) {
        snprintf(detail, sizeof detail,
                 "perf refused (%s): context-switch stacks need perf_event_paranoid <= 1 or CAP_PERFMON",
                 refusal(stacks_probe, caps, why, sizeof why));
        d9_collector_note_source(c, "switch_stacks", false, detail);
    } else if (stacks_probe == 1) {
        d9_collector_note_source(c, "switch_stacks", false,
                                 "the context-switch event opens but yields no samples here (kernel frames excluded)");
    } else if (perf && rep->stacks_err == 0) {
        snprintf(detail, sizeof detail,
                 "perf context-switch samples with kernel and user frames, workers only; every switch up to %u "
                 "stacks/s on average (bursts of %u), paused above",
                 cfg->switch_stacks_per_sec, cfg->switch_stacks_per_sec);
        d9_collector_note_source(c, "switch_stacks", true, detail);
    } else {
        snprintf(detail, sizeof detail, "perf refused (%s)",
                 refusal(rep->stacks_err ? rep->stacks_err : -ENOMEM, caps, why, sizeof why));
        d9_collector_note_source(c, "switch_stacks", false, detail);
    }
}

/* governor = "budget 1% of one CPU: ..." (docs/kernel-sources.md, "Cost governor") */
static void note_governor(const d9_config *cfg, d9_collector *c, bool switches, bool thread_rings) {
    d9_run_metadata *m = d9_collector_metadata(c);
    if (cfg->overhead_budget_pct <= 0)
        d9_run_metadata_set(m, "governor", "off (DIAL9_OVERHEAD_BUDGET_PCT=0): no source is degraded");
    else if (thread_rings)
        d9_run_metadata_set(m, "governor",
                            "budget %g%% of one CPU; not governing: the off-CPU records come from the recorded "
                            "threads' own task-clock events, which their CPU time keeps open, and the stacks are "
                            "paced (DIAL9_SWITCH_STACKS_PER_SEC)",
                            cfg->overhead_budget_pct);
    else if (!switches)
        d9_run_metadata_set(m, "governor", "budget %g%% of one CPU; nothing to govern (no context-switch records)",
                            cfg->overhead_budget_pct);
    else
        d9_run_metadata_set(m, "governor",
                            "budget %g%% of one CPU (off-CPU records and stacks, CPU samples, schedstat reads); "
                            "off_cpu degrades (records and stacks in one window of N, then paused) above it, "
                            "CoverageEvent says when",
                            cfg->overhead_budget_pct);
}

static void install_fork_handler(void) { pthread_atfork(NULL, NULL, forget_in_child); }

void d9_sources_start(const d9_config *cfg, d9_collector *c) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, install_fork_handler);
    bool ending = process_ending();
    /* no stack will be taken now, so no address needs a mapping to be named */
    if (ending) d9_collector_note_source(c, "memory_map", false, ENDING_NOTE);
    else d9_memory_map_source_start(cfg, c);
    ending = process_ending();
    d9_host_caps caps;
    d9_host_caps_detect(&caps, ending);
    note_host(c, &caps);

    /* Context-switch stacks are trusted only after the kernel showed it delivers them. The
     * probe gives up when the program ends meanwhile (it sleeps, and costs ~0.2 ms of CPU). */
    int stacks_probe = !cfg->schedule_profile ? -ENOENT
                       : ending                ? -ECANCELED
                                               : d9_perf_probe_switch_stacks(process_ending);
    if (!ending && process_ending()) {
        ending = true;
        if (cfg->schedule_profile) stacks_probe = -ECANCELED;
    }
    d9_perf_request req = {
        .cpu_profile = cfg->cpu_profile && cfg->sampler != D9_SAMPLER_TIMER,
        .hz = cfg->cpu_sample_hz,
        .kernel_frames = true, /* tried; refused kernel frames fall back to user frames */
        .switches = cfg->schedule_profile,
        .switch_stacks = cfg->schedule_profile && stacks_probe == 0,
        .stacks_per_sec = cfg->switch_stacks_per_sec,
        .collector = c,
        .budget_pct = cfg->overhead_budget_pct,
        .thread_rings = true, /* where DIAL9_THREAD_CPU=ring asks for them (d9_tcc_rings_consume) */
    };
    d9_perf_report rep;
    memset(&rep, 0, sizeof rep);
    bool perf_tried = !ending && (req.cpu_profile || req.switches || req.switch_stacks);
    d9_source *perf = perf_tried ? add_or_close(c, d9_perf_source_open(&req, &rep)) : NULL;

    note_governor(cfg, c, perf && rep.switch_err == 0, rep.switch_rings);
    if (ending && cfg->cpu_profile) d9_collector_note_source(c, "cpu_profile", false, ENDING_NOTE);
    else start_cpu_profile(cfg, c, &caps, req.cpu_profile, &rep, perf);
    note_schedule_profile(cfg, c, &caps, stacks_probe, &rep, perf);

    d9_collector_set_dump_unwinder(c, d9_task_dump_unwind);
    d9_task_dumps_start(cfg->task_dumps, 0);
    d9_heap_sampler_start(cfg, c); /* its records' stacks are unwound as the dumps' are */
    char fp[128];
    if (!cfg->task_dumps) {
        d9_collector_note_source(c, "task_dumps", false, "disabled by configuration");
    } else {
        char detail[256];
        snprintf(detail, sizeof detail,
                 "stacks at d9_task_suspend (frame pointers and a %u-byte stack copy, unwound with CFI), written when the task is still idle after Exp(%u ms); frame pointers: %s",
                 D9_UNWIND_STACK_BYTES, D9_TASK_DUMP_MEAN_NS / 1000000u, d9_host_fp_verdict(&caps, fp, sizeof fp));
        d9_collector_note_source(c, "task_dumps", true, detail);
    }
}

void d9_sources_stop(void) {
    d9_task_dumps_stop();
    d9_heap_sampler_stop();
}
