/* `dial9 export`: writing the export model (export_model.h) in the formats other tools read
 * (docs/export.md):
 *
 *   perfetto    Perfetto protobuf trace (TrackEvent): Perfetto UI, trace_processor
 *   chrome      Chrome JSON trace events: Perfetto UI, chrome://tracing, speedscope, ...
 *   folded      folded stacks "a;b;c N": flamegraph.pl, speedscope, inferno
 *   pprof       gzipped profile.proto: go tool pprof, Perfetto, speedscope, profiling backends
 *   speedscope  speedscope JSON: sampled profiles per thread, or evented polls per worker
 *
 * Every writer takes the finished model and a FILE; none keeps state between calls. */
#ifndef D9_EXPORT_EXPORT_H
#define D9_EXPORT_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "export/export_model.h"

typedef enum d9_xformat {
    D9_XF_PERFETTO,
    D9_XF_CHROME,
    D9_XF_FOLDED,
    D9_XF_PPROF,
    D9_XF_SPEEDSCOPE,
} d9_xformat;

/* Which stack samples a profile holds (folded, pprof, speedscope): CpuSampleEvent source 0
 * (CPU profile) and/or source 1 (context switch: the stack where the thread went off CPU). */
enum { D9_XSTACKS_CPU = 1, D9_XSTACKS_OFFCPU = 2, D9_XSTACKS_ALL = 3, D9_XSTACKS_HEAP = 4 /* pprof only */ };

/* The default limit of chrome trace events: ~100 B each in JSON. */
#define D9_XCHROME_DEFAULT_MAX_EVENTS 2000000u

typedef struct d9_xopts {
    unsigned stacks;       /* D9_XSTACKS_*; 0 means CPU */
    bool by_location;      /* root each stack at the spawn location of the poll it hit */
    bool by_cause;         /* folded: root each off-CPU stack at its cause, "[lock]", "[io]", ...
                              (model/attribution.h; "[off-cpu]" when the trace has no switch records) */
    bool speedscope_polls; /* speedscope: evented profiles of polls instead of samples */
    uint64_t max_events;   /* chrome: refuse to write more trace events than this; 0 = no limit */
    const char *name;      /* a name for the profile (speedscope, pprof comment); may be NULL */
} d9_xopts;

void d9_xopts_init(d9_xopts *o);

/* "perfetto", ... -> format; false when unknown. */
bool d9_xformat_parse(const char *name, d9_xformat *out);
const char *d9_xformat_name(d9_xformat f);

enum {
    D9_XWRITE_OK = 0,
    D9_XWRITE_ERROR = -1,   /* I/O error or out of memory (message says which) */
    D9_XWRITE_REFUSED = -2, /* the output would exceed a limit (message says how to proceed) */
};

/* Write the model in format f. Returns D9_XWRITE_*, with a message in err when not OK. */
int d9_export_write(const d9_xmodel *m, d9_xformat f, const d9_xopts *o, FILE *out, char *err,
                    size_t errlen);

int d9_export_perfetto(const d9_xmodel *m, const d9_xopts *o, FILE *out, char *err, size_t errlen);
int d9_export_chrome(const d9_xmodel *m, const d9_xopts *o, FILE *out, char *err, size_t errlen);
int d9_export_folded(const d9_xmodel *m, const d9_xopts *o, FILE *out, char *err, size_t errlen);
int d9_export_pprof(const d9_xmodel *m, const d9_xopts *o, FILE *out, char *err, size_t errlen);
int d9_export_speedscope(const d9_xmodel *m, const d9_xopts *o, FILE *out, char *err,
                         size_t errlen);

/* Helpers shared by the stack-profile writers. */

/* Whether sample s belongs in a profile of `stacks` (D9_XSTACKS_*). */
bool d9_xsample_selected(const d9_xsample *s, unsigned stacks);

/* The frames of sample s's stack, root first (outermost caller first, the leaf's innermost
 * inline frame last), as frame indexes into m->frames; grows *buf (capacity *cap). Returns
 * the count, or -1 when out of memory. */
long d9_xsample_frames(const d9_xmodel *m, const d9_xsample *s, uint32_t **buf, size_t *cap);

/* The label of the poll a sample hit: its spawn location, "task N" when the location is
 * unknown, "[parked]" or "[not in a poll]". Written into buf. */
const char *d9_xsample_where(const d9_xmodel *m, const d9_xsample *s, char *buf, size_t len);

#endif
