/* fleet/window_days.c: the UTC days a listing window takes, as the dated key prefixes
 * (date=YYYY-MM-DD/) name them, for the segments' listing and the dumps' alike. Checked against
 * dates written out by hand: one day, a window across midnight, one ending exactly at a
 * midnight, across a month's and a year's end, the hour of lead before a window that starts
 * just after midnight, and a window whose end is before its start (no day). */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "fleet/window_days.h"

/* The days of [from, to] joined by spaces. */
static const char *days(time_t from, time_t to) {
    static char out[512];
    out[0] = 0;
    for (d9_window_days d = d9_window_days_of(from, to); d9_window_days_next(&d);) {
        size_t n = strlen(out);
        snprintf(out + n, sizeof out - n, "%s%s", n ? " " : "", d.date);
    }
    return out;
}

/* UTC seconds of Y-M-D h:m:s */
static time_t utc(int y, int mo, int d, int h, int mi, int s) {
    struct tm tm = {.tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d, .tm_hour = h, .tm_min = mi, .tm_sec = s};
    return timegm(&tm);
}

int main(void) {
    CHECK_STR(days(utc(2026, 1, 10, 9, 55, 0), utc(2026, 1, 10, 10, 5, 0)), "2026-01-10");
    CHECK_STR(days(utc(2026, 1, 10, 23, 30, 0), utc(2026, 1, 11, 0, 30, 0)), "2026-01-10 2026-01-11");
    /* a window ending on a midnight touches that day (keys of its first second) */
    CHECK_STR(days(utc(2026, 1, 10, 12, 0, 0), utc(2026, 1, 11, 0, 0, 0)), "2026-01-10 2026-01-11");
    CHECK_STR(days(utc(2026, 1, 10, 12, 0, 0), utc(2026, 1, 10, 23, 59, 59)), "2026-01-10");
    CHECK_STR(days(utc(2026, 2, 27, 1, 0, 0), utc(2026, 3, 1, 1, 0, 0)), "2026-02-27 2026-02-28 2026-03-01");
    CHECK_STR(days(utc(2024, 12, 31, 22, 0, 0), utc(2025, 1, 1, 2, 0, 0)), "2024-12-31 2025-01-01");
    /* the listing starts an hour before the window: 00:20 reaches back into the day before */
    CHECK_STR(days(utc(2026, 1, 12, 0, 20, 0) - D9_WINDOW_LEAD_SECS, utc(2026, 1, 12, 1, 0, 0)),
              "2026-01-11 2026-01-12");
    CHECK_STR(days(utc(2026, 1, 12, 5, 0, 0), utc(2026, 1, 11, 5, 0, 0)), "");
    return d9t_summary("test_window_days");
}
