/* A context-switch sample whose user stack the perf source left for later (its frames: the
 * kernel's, then a payload of registers, the user stack copy and the kernel's user chain,
 * d9_src_event.sample.deferred_words): unwound here, in time order with the thread's records,
 * only when it falls inside a poll, where a switch-out is the diagnosis; a parked thread's
 * sample keeps its kernel frames alone (docs/kernel-sources.md, "Stacks where the diagnosis
 * is"). */
#ifndef D9_CORE_COLLECTOR_SWITCH_STACK_H
#define D9_CORE_COLLECTOR_SWITCH_STACK_H

#include "core/collector_state.h"

/* `e` was made from `se` (a CpuSampleEvent whose payload is se's frames); `t` is the sample's
 * thread or NULL. Rewrites e's frames and method. */
void d9_col_switch_stack(d9_collector *c, const d9_thread *t, const d9_src_event *se, out_event *e);

#endif
