/* Deferred unwinding of context-switch samples (collector_switch_stack.h). */
#include "core/collector_switch_stack.h"

#include <string.h>

#include "sources/perf_events.h"

/* Inside a poll by the thread's records merged so far, or later than the records this merge
 * could see: a poll's begin is committed before the thread can block in it, so a sample whose
 * poll began after the merge read the heads is itself later than merge_heads_ns (unwound: the
 * rule never drops the stack of a switch inside a poll). */
static bool inside_poll(const d9_collector *c, const d9_thread *t, uint64_t ts) {
    return t && (t->c_task != 0 || ts >= c->merge_heads_ns);
}

void d9_col_switch_stack(d9_collector *c, const d9_thread *t, const d9_src_event *se, out_event *e) {
    uint32_t words = se->sample.deferred_words;
    uint32_t kernel = se->sample.nframes > words ? se->sample.nframes - words : 0;
    if (kernel > DUMP_MAX_FRAMES) kernel = DUMP_MAX_FRAMES;
    e->nframes = kernel; /* the kernel's frames, as the perf source gave them */
    e->v[4] = 0;         /* D9_STACK_UNRECORDED: no user frames */
    if (!inside_poll(c, t, se->ts_ns)) return;
    memcpy(c->dump_frames, se->sample.frames, kernel * sizeof *c->dump_frames);
    uint8_t method = 0;
    e->nframes = kernel + d9_perf_unwind_deferred(se->sample.frames + kernel, words, c->dump_frames + kernel,
                                                  DUMP_MAX_FRAMES - kernel, &method);
    e->payload = c->dump_frames;
    e->v[4] = method;
}
