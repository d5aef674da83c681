/* Kernel data sources started with the recorder: CPU samples (perf or SIGPROF timers),
 * context switches and off-CPU stacks, memory maps, task dumps. Each is detected at start and
 * noted in the segment metadata (d9_collector_note_source), active or not and why. */
#ifndef D9_SOURCES_SOURCES_H
#define D9_SOURCES_SOURCES_H

#include "core/collector.h"
#include "dial9/dial9.h"
#include "sources/host_caps.h"

/* Start the sources `cfg` asks for and add them to the collector. Never fails the recording:
 * a source that cannot start is noted as inactive with the reason. */
void d9_sources_start(const d9_config *cfg, d9_collector *c);
/* After the collector closed them: undo process-wide state (signal handlers...). */
void d9_sources_stop(void);

/* The process is ending (the recorder's and the preload shim's exit handlers, while the
 * recorder may still be starting on a thread of its own): a d9_sources_start that has not
 * reached them yet starts no perf event, timer sampler or memory-map source, reads none of
 * the host's perf settings, and notes them "not started". Nothing would be left to observe
 * but the exit itself (no stack is taken from then on, so there is nothing to symbolize
 * either), and setting them up and tearing them down is most of what a short program pays
 * for being recorded. Any thread, any time; reset in a forked child. */
void d9_sources_process_ending(void);
/* Whether it was said (the recorder's start skips its draining thread too: recorder.c; the
 * preload shim its loop-library checks). */
bool d9_sources_process_is_ending(void);
/* The note of a source skipped so. */
#define D9_SOURCES_ENDING_NOTE "not started: " D9_ENDING_REASON

#endif
