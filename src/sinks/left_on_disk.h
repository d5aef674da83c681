/* What the uploads of a run left on disk when it stopped, said once at exit: every sealed
 * segment still in its run directory by name (the first 32, then how many more), the directory,
 * and how to upload them later. An outage (or the exit wait running out) can leave many; the
 * message about the one being uploaded at that moment names only that one. */
#ifndef D9_SINKS_LEFT_ON_DISK_H
#define D9_SINKS_LEFT_ON_DISK_H

#include <stdio.h>

/* The sealed segments (trace.N.bin, .bin.gz, .bin.zst; not .active) in run_dir, oldest first,
 * written to `to` as one line starting "who: " with trace_dir in the hint; nothing when none is
 * left. Returns how many there are. */
unsigned long d9_say_left_on_disk(FILE *to, const char *who, const char *run_dir, const char *trace_dir);

#endif
