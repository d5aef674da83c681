/* Format names, options and the helpers the stack-profile writers share (see export.h). */
#include "export/export.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const char *const format_names[] = {
    [D9_XF_PERFETTO] = "perfetto", [D9_XF_CHROME] = "chrome", [D9_XF_FOLDED] = "folded",
    [D9_XF_PPROF] = "pprof",       [D9_XF_SPEEDSCOPE] = "speedscope",
};

void d9_xopts_init(d9_xopts *o) {
    memset(o, 0, sizeof *o);
    o->stacks = D9_XSTACKS_CPU;
    o->max_events = D9_XCHROME_DEFAULT_MAX_EVENTS;
}

bool d9_xformat_parse(const char *name, d9_xformat *out) {
    for (size_t i = 0; i < sizeof format_names / sizeof format_names[0]; i++)
        if (!strcmp(name, format_names[i])) {
            *out = (d9_xformat)i;
            return true;
        }
    return false;
}

const char *d9_xformat_name(d9_xformat f) {
    return (size_t)f < sizeof format_names / sizeof format_names[0] ? format_names[f] : "?";
}

bool d9_xsample_selected(const d9_xsample *s, unsigned stacks) {
    if (!stacks) stacks = D9_XSTACKS_CPU;
    return s->source == D9_XSAMPLE_OFFCPU ? (stacks & D9_XSTACKS_OFFCPU) != 0
                                          : (stacks & D9_XSTACKS_CPU) != 0;
}

long d9_xsample_frames(const d9_xmodel *m, const d9_xsample *s, uint32_t **buf, size_t *cap) {
    const d9_xstack *st = &m->stacks[s->stack];
    size_t need = 0;
    for (uint32_t i = 0; i < st->count; i++) need += m->locs[m->stack_locs[st->first + i]].frame_count;
    if (need > *cap) {
        uint32_t *p = realloc(*buf, need * sizeof *p);
        if (!p) return -1;
        *buf = p;
        *cap = need;
    }
    size_t n = 0;
    for (uint32_t i = st->count; i-- > 0;) { /* stack_locs are leaf first */
        const d9_xloc *loc = &m->locs[m->stack_locs[st->first + i]];
        for (uint32_t k = loc->frame_count; k-- > 0;) /* frames are innermost first */
            (*buf)[n++] = loc->first_frame + k;
    }
    return (long)n;
}

const char *d9_xsample_where(const d9_xmodel *m, const d9_xsample *s, char *buf, size_t len) {
    if (s->poll != D9_XNONE) {
        const d9_xpoll *p = &m->polls[s->poll];
        if (p->loc) return d9_xm_str(m, p->loc);
        snprintf(buf, len, "task %" PRIu64, p->task);
        return buf;
    }
    return s->parked ? "[parked]" : "[not in a poll]";
}
