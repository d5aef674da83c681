/* A wall-clock window of one instance, as the start page's form asks for it (/window): which
 * segments of a selection's runs (serve_selection.h) it takes, by the segment starts their S3
 * keys give — the rule of `dial9 ... s3:// --from/--to`: a segment is taken when it starts
 * before the window ends and the next one of its run starts after the window begins (the last
 * one of a run: when it starts at most an hour before the window). */
#ifndef D9_SERVE_INSTANCE_WINDOW_H
#define D9_SERVE_INSTANCE_WINDOW_H

#include <stdbool.h>
#include <stddef.h>

#include "serve/serve_selection.h"

/* "service=S/instance=I" of a run named "service=S/instance=I/boot=B"; false for other names
 * (keys in no layout: no instance to choose). */
bool d9_run_instance(const char *run, char *out, size_t len);

/* "YYYY-MM-DDTHH:MM[:SS]" (an HTML datetime-local value; a space for the T too) in UTC, or UTC
 * seconds. 0, or -1. */
int d9_parse_utc(const char *s, long long *out);

/* picked[k] for run->segs[k]: in [from, to]. Returns how many; segments without a start from
 * their key are not taken. */
size_t d9_window_segments(const d9_sel_run *run, long long from, long long to, bool *picked);

#endif
