/* The flight recorder (docs/flight-recorder.md): memory mode's store of sealed segments, dumps
 * of a window [trigger - look-back, trigger + look-forward] into self-contained directories,
 * on demand (d9_dump, the control socket) and on rules (DIAL9_TRIGGERS), with debounce and a
 * rate limit. Everything runs on its own thread ("dial9-flight"): the collector only hands it
 * each sealed segment (a pointer move under a lock), and the application's threads only post
 * d9_dump requests (lock-free). One per process, as the recorder. */
#ifndef D9_CORE_FLIGHT_RECORDER_H
#define D9_CORE_FLIGHT_RECORDER_H

#include <stdbool.h>

#include "core/collector.h"
#include "core/flight_config.h"

/* After d9_collector_open (its writer must be in memory mode when fc->memory): start the
 * thread and the control socket, and take every sealed segment from the collector. Nothing is
 * started when !fc->active. false, with a message on stderr, when it cannot start (the
 * recording goes on without dumps). */
bool d9_flight_start(const d9_flight_config *fc, d9_collector *col, const char *run_id);
/* Before d9_collector_close: the collector is not to be asked for seals any more. */
void d9_flight_collector_closing(void);
/* After d9_collector_close (its last segments handed over): finish the dumps under way with
 * what there is (their manifests say what they lack), stop the thread, free the store. */
void d9_flight_stop(void);
/* In a forked child: forget the parent's flight recorder without touching it. */
void d9_flight_forget_after_fork(void);

#endif
