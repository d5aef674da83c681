/* `dial9 analyze DUMP` starts at the trigger (docs/flight-recorder.md): a dump directory's
 * manifest gives the window [trigger - look-back, trigger + look-forward] in the trace's
 * clock; the report begins at its look-back start and first says the trigger and its time. */
#ifndef D9_CLI_DUMP_WINDOW_H
#define D9_CLI_DUMP_WINDOW_H

#include <stdio.h>

#include "common/time_arg.h"

/* For each of paths[0..n) that is a dump directory: a line on `say` naming its trigger and
 * time (or that it is incomplete). When *from is not set, it becomes the earliest look-back
 * start of the complete dumps (an absolute timestamp); a crash dump's window is everything
 * the recorder held, so it sets none. */
void d9_dump_analyze_window(int n, char **paths, d9_time_arg *from, FILE *say);

#endif
