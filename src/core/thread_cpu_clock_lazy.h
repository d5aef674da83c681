/* DIAL9_THREAD_CPU=lazy (issue #32): a thread pays for its task-clock page (thread_cpu_clock.h:
 * the kernel switches its perf context at each of the thread's context switches, ~1.3 us each on
 * the hosts measured) only from its first poll longer than DIAL9_POLL_CPU_MIN_US on, the polls
 * poll_cpu.h accounts. Before, the thread has no page: its gen is the recording's with
 * D9_TCC_LAZY, so every park and unpark takes the no-page path (the park's
 * clock_gettime(CLOCK_THREAD_CPUTIME_ID), its unpark carrying that value), and its poll_page is
 * d9_tcc_lazy_page, whose lock no thread's ever equals: each poll's begin and end take poll_cpu.h's
 * slow twins (a call each, the begin's returning at once), so that the end sees the poll's
 * length. A poll of the threshold or longer then gets a PollCpuEvent with exact false (its
 * off-CPU time unknown: no page measured it, and readers must not take it for a poll without a
 * switch) and the thread opens its page there, announced by a ThreadCpuPageEvent {worker_id,
 * open true}; its next polls have poll_cpu.h's exact values. A page without a long poll with a
 * switch inside for D9_TCC_LAZY_QUIET_NS is closed again at the thread's next park after a
 * switch (a slow path: nothing is tested in the fast ones), said by a ThreadCpuPageEvent with
 * open false: a preempted poll on a loaded host, or one burst of long polls, costs the page's
 * per-switch price for about that long, not for the rest of the recording. So every poll over the threshold is either
 * measured or said unknown, as before, and the metadata's poll_cpu keeps its meaning. Servers
 * whose polls are all short (memcached, redis: ~14 us a request) never open a page:
 * bench/README.md "The task-clock page from a thread's first long poll". Like a thread's page
 * before, a lazy thread starts at its first park or unpark. */
#ifndef D9_CORE_THREAD_CPU_CLOCK_LAZY_H
#define D9_CORE_THREAD_CPU_CLOCK_LAZY_H

#include <stdbool.h>
#include <stdint.h>

#include "core/thread_cpu_clock.h"

/* A lazy thread's poll_page: its lock (odd: no snapshot's, no thread's `lock`) never moves. */
extern const struct perf_event_mmap_page d9_tcc_lazy_page;

/* At d9_start (thread_cpu_clock.c): whether this recording's threads start lazy; the event type
 * is defined then. -1 (the error set) if it cannot be. */
int d9_tcc_lazy_start(bool on);
/* Whether this recording's threads start lazy. */
bool d9_tcc_lazy_on(void);
/* A thread becomes lazy (its first park or unpark of a lazy recording). */
void d9_tcc_lazy_begin(d9_tcc_state *s);
/* Whether the calling thread is lazy under the recording's gen `gen`. */
static inline bool d9_tcc_lazy_is(const d9_tcc_state *s, uint32_t gen) { return gen && s->gen == (gen | D9_TCC_LAZY); }
/* A lazy thread's poll over the threshold ended at end_ticks (its end's record written): its
 * PollCpuEvent (exact false), then its page opened (the ThreadCpuPageEvent). */
void d9_tcc_lazy_long_poll(uint64_t end_ticks);
/* A lazy thread opened its page at now_ticks: its ThreadCpuPageEvent (open true), counted. */
void d9_tcc_lazy_opened(d9_tcc_state *s, uint64_t now_ticks);
/* How long a lazily opened page stays without a long poll with a switch inside before a park
 * after a switch closes it (ns). */
#define D9_TCC_LAZY_QUIET_NS 1000000000u
/* At a park or unpark of a lazily opened page whose lock moved (the slow path, at now_ticks):
 * true when it has been quiet for D9_TCC_LAZY_QUIET_NS (no long poll with a switch inside) and
 * no poll is under way: the caller closes it (d9_tcc_lazy_close). */
bool d9_tcc_lazy_quiet(const d9_tcc_state *s, uint64_t now_ticks, double ns_per_tick);
/* The page closed (released by the caller): lazy again, its ThreadCpuPageEvent (open false). */
void d9_tcc_lazy_close(d9_tcc_state *s, uint32_t gen);
/* Pages closed again after a quiet period, this recording (tests, docs). */
uint32_t d9_tcc_lazy_closes(void);
/* Threads of this recording that opened their page lazily (tests, docs). */
uint32_t d9_tcc_lazy_pages(void);
/* Whether the calling thread is lazy now (no page yet): tests. */
bool d9_tcc_lazy_thread(void);

#endif
