/* The recorder's plugin point for what is built around it (the preload shim): a function that
 * each d9_start calls once the kernel sources are started and have noted themselves, before
 * the first segment is written, with the run's collector, so that it can add its own source
 * notes and metadata (d9_collector_note_source, d9_run_metadata_set). Like the collector's
 * d9_dump_unwind_fn, it is registered, never linked in by name. */
#ifndef D9_CORE_RECORDER_HOOKS_H
#define D9_CORE_RECORDER_HOOKS_H

struct d9_collector;

typedef void (*d9_on_sources_started_fn)(struct d9_collector *c);

/* Register fn (NULL: none), before d9_start; a later call replaces it. */
void d9_recorder_set_on_sources_started(d9_on_sources_started_fn fn);

#endif
