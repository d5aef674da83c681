/* The UTC days of a window (window_days.h). */
#include "fleet/window_days.h"

#define DAY_SECS 86400

d9_window_days d9_window_days_of(time_t from, time_t to) {
    return (d9_window_days){.day = from / DAY_SECS * DAY_SECS, .to = to};
}

bool d9_window_days_next(d9_window_days *it) {
    if (it->day > it->to) return false;
    struct tm tm;
    gmtime_r(&it->day, &tm);
    strftime(it->date, sizeof it->date, "%Y-%m-%d", &tm);
    it->day += DAY_SECS;
    return true;
}
