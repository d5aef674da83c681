/* A window of one instance over a selection (instance_window.h). */
#include "serve/instance_window.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BEFORE_WINDOW (60 * 60) /* a run's last segment may have started this long before it */

bool d9_run_instance(const char *run, char *out, size_t len) {
    if (strncmp(run, "service=", 8) != 0) return false;
    const char *inst = strstr(run, "/instance="), *boot = inst ? strstr(inst + 1, "/boot=") : NULL;
    if (!boot || strchr(boot + 1, '/') || (size_t)(boot - run) >= len) return false;
    memcpy(out, run, (size_t)(boot - run));
    out[boot - run] = '\0';
    return true;
}

/* s starts as shape says: 'D' a digit, '?' a 'T' or a space, any other byte itself. */
static bool digits_as(const char *s, const char *shape) {
    for (; *shape; s++, shape++) {
        bool ok = *shape == 'D' ? *s >= '0' && *s <= '9' : *shape == '?' ? *s == 'T' || *s == ' ' : *s == *shape;
        if (!ok) return false; /* a NUL in s fails here: nothing past it is read */
    }
    return true;
}

int d9_parse_utc(const char *s, long long *out) {
    if (!*s) return -1;
    if (strspn(s, "0123456789") == strlen(s)) {
        if (strlen(s) > 12) return -1;
        *out = strtoll(s, NULL, 10);
        return 0;
    }
    if (!digits_as(s, "DDDD-DD-DD?DD:DD") || (s[16] == ':' && !digits_as(s + 16, ":DD")))
        return -1; /* sscanf's %d alone would take a sign or spaces ("13:-9") */
    struct tm tm = {0};
    int n = 0, sec = 0;
    if (sscanf(s, "%4d-%2d-%2d%*1[T ]%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
               &n) != 5 || n != 16)
        return -1;
    if (s[n] == ':') {
        int m = 0;
        if (sscanf(s + n + 1, "%2d%n", &sec, &m) != 1 || m != 2) return -1;
        n += 3;
    }
    if (s[n] == 'Z') n++;
    if (s[n] || tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 ||
        tm.tm_min > 59 || sec > 60)
        return -1;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    tm.tm_sec = sec;
    *out = (long long)timegm(&tm);
    return 0;
}

typedef struct by_time { long long start; size_t k; } by_time;

static int cmp_time(const void *a, const void *b) {
    const by_time *x = a, *y = b;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    return x->k < y->k ? -1 : x->k > y->k;
}

size_t d9_window_segments(const d9_sel_run *run, long long from, long long to, bool *picked) {
    memset(picked, 0, run->count * sizeof *picked);
    by_time *order = calloc(run->count ? run->count : 1, sizeof *order);
    if (!order) return 0;
    size_t n = 0;
    for (size_t k = 0; k < run->count; k++)
        if (run->segs[k].start >= 0) order[n++] = (by_time){run->segs[k].start, k};
    qsort(order, n, sizeof *order, cmp_time);
    size_t taken = 0;
    for (size_t i = 0; i < n; i++) {
        if (order[i].start > to) continue;
        if (i + 1 < n ? order[i + 1].start < from : order[i].start < from - BEFORE_WINDOW) continue;
        picked[order[i].k] = true;
        taken++;
    }
    free(order);
    return taken;
}
