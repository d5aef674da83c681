/* The UTC days a wall-clock window touches, as the dated key prefixes name them
 * (`date=YYYY-MM-DD/`): the segments' listing (s3_fetch.c) and the dumps' (s3_dump_runs.c) both
 * list a window day by day, from an hour before its start (the segment in progress at the
 * start began before it). */
#ifndef D9_FLEET_WINDOW_DAYS_H
#define D9_FLEET_WINDOW_DAYS_H

#include <stdbool.h>
#include <time.h>

/* How far before a window's start its listing begins. */
#define D9_WINDOW_LEAD_SECS 3600

typedef struct d9_window_days {
    time_t day, to; /* the next day's midnight (UTC), the window's end */
    char date[16];  /* YYYY-MM-DD of the day d9_window_days_next moved to */
} d9_window_days;

/* The days from `from`'s to `to`'s, both included. */
d9_window_days d9_window_days_of(time_t from, time_t to);

/* Move to the next day (its date in it->date); false after the last. */
bool d9_window_days_next(d9_window_days *it);

#endif
