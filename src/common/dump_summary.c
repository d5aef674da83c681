/* A dump manifest's trigger and window (dump_summary.h). The manifest is our own writer's
 * JSON (core/flight_recorder.c); this reads the few members the listings need, skipping
 * anything else, nested or not. */
#include "common/dump_summary.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Past the JSON string starting at p ('"'), or end. */
static const char *skip_string(const char *p, const char *end) {
    for (p++; p < end; p++) {
        if (*p == '\\') p++;
        else if (*p == '"') return p + 1;
    }
    return end;
}

static const char *skip_ws(const char *p, const char *end) {
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')) p++;
    return p;
}

/* The value of member `key` of the object starting at obj ('{'), or NULL. */
static const char *member(const char *obj, const char *end, const char *key) {
    if (!obj || obj >= end || *obj != '{') return NULL;
    size_t kl = strlen(key);
    int depth = 0;
    for (const char *p = obj; p < end;) {
        char c = *p;
        if (c == '"') {
            const char *s = p;
            p = skip_string(p, end);
            if (depth != 1) continue;
            const char *q = skip_ws(p, end);
            if (q < end && *q == ':' && (size_t)(p - s) == kl + 2 && !memcmp(s + 1, key, kl))
                return skip_ws(q + 1, end);
            continue;
        }
        if (c == '{' || c == '[') depth++;
        else if (c == '}' || c == ']') {
            if (--depth == 0) return NULL;
        }
        p++;
    }
    return NULL;
}

static void read_string(const char *v, const char *end, char *out, size_t len) {
    size_t n = 0;
    if (len) out[0] = 0;
    if (!v || v >= end || *v != '"' || !len) return;
    for (const char *p = v + 1; p < end && *p != '"' && n + 1 < len; p++) {
        char c = *p;
        if (c == '\\' && p + 1 < end) {
            c = *++p;
            if (c == 'n') c = ' ';
            else if (c == 't') c = ' ';
            else if (c == 'u') { /* not our manifests' case: kept visible, not decoded */
                c = '?';
                p += p + 4 < end ? 4 : 0;
            }
        }
        out[n++] = c;
    }
    out[n] = 0;
}

/* A number's text copied out first: the manifest is len bytes, not a C string, and strtoll
 * would read on past its end (found by fuzz_dump_summary). */
static const char *number_text(const char *v, const char *end, char buf[32]) {
    size_t n = 0;
    while (v && v + n < end && n < 31 && v[n] && strchr("+-0123456789", v[n])) buf[n] = v[n], n++;
    buf[n] = 0;
    return buf;
}
static int64_t read_i64(const char *v, const char *end) {
    char b[32];
    return strtoll(number_text(v, end, b), NULL, 10);
}
static uint64_t read_u64(const char *v, const char *end) {
    char b[32];
    number_text(v, end, b);
    return b[0] != '-' ? strtoull(b, NULL, 10) : 0;
}

bool d9_dump_summary_parse(const char *json, size_t len, d9_dump_summary *out) {
    memset(out, 0, sizeof *out);
    const char *end = json + len;
    const char *top = skip_ws(json, end);
    char format[32];
    read_string(member(top, end, "format"), end, format, sizeof format);
    if (strcmp(format, "dial9-dump")) return false;
    const char *trigger = member(top, end, "trigger"), *window = member(top, end, "window");
    const char *holds = member(top, end, "holds");
    if (!trigger || !window || trigger >= end || window >= end || *trigger != '{' || *window != '{') return false;
    read_string(member(trigger, end, "kind"), end, out->kind, sizeof out->kind);
    read_string(member(trigger, end, "rule"), end, out->rule, sizeof out->rule);
    read_string(member(trigger, end, "event"), end, out->event, sizeof out->event);
    read_string(member(trigger, end, "reason"), end, out->reason, sizeof out->reason);
    out->at_unix_ns = read_i64(member(trigger, end, "at_unix_ns"), end);
    out->at_mono_ns = read_u64(member(trigger, end, "at_mono_ns"), end);
    out->merged_triggers = read_u64(member(trigger, end, "merged_triggers"), end);
    out->lookback_ms = read_u64(member(window, end, "lookback_ms"), end);
    out->lookforward_ms = read_u64(member(window, end, "lookforward_ms"), end);
    out->from_unix_ns = read_i64(member(window, end, "from_unix_ns"), end);
    out->to_unix_ns = read_i64(member(window, end, "to_unix_ns"), end);
    out->from_mono_ns = read_u64(member(window, end, "from_mono_ns"), end);
    out->to_mono_ns = read_u64(member(window, end, "to_mono_ns"), end);
    if (holds && holds < end && *holds == '{') {
        out->segments = read_u64(member(holds, end, "segments"), end);
        out->bytes = read_u64(member(holds, end, "bytes"), end);
    }
    return out->kind[0] && member(window, end, "from_mono_ns") && member(window, end, "to_mono_ns");
}

d9_dump_state d9_dump_dir_read(int dir_fd, d9_dump_summary *out) {
    struct stat st;
    if (fstatat(dir_fd, D9_DUMP_MARKER_FILE, &st, AT_SYMLINK_NOFOLLOW) != 0) return D9_DUMP_NOT_A_DUMP;
    int fd = openat(dir_fd, D9_DUMP_MANIFEST_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return D9_DUMP_INCOMPLETE;
    char buf[65536]; /* a manifest is a few KiB: one line per segment */
    size_t len = 0;
    ssize_t n;
    while (len < sizeof buf && (n = read(fd, buf + len, sizeof buf - len)) > 0) len += (size_t)n;
    close(fd);
    return d9_dump_summary_parse(buf, len, out) ? D9_DUMP_COMPLETE : D9_DUMP_UNREADABLE;
}

static void utc(int64_t unix_ns, char *out, size_t len) {
    time_t secs = (time_t)(unix_ns / 1000000000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    char day[32];
    strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, len, "%s.%03dZ", day, (int)(unix_ns % 1000000000 / 1000000));
}

void d9_dump_summary_line(const d9_dump_summary *s, char *out, size_t len) {
    char at[48];
    utc(s->at_unix_ns, at, sizeof at);
    snprintf(out, len, "%s%s%s%s%s%s at %s, window %llu ms before to %llu ms after, %llu segments", s->kind,
             s->rule[0] ? " " : "", s->rule, s->event[0] ? " (" : "", s->event, s->event[0] ? ")" : "", at, (unsigned long long)s->lookback_ms,
             (unsigned long long)s->lookforward_ms, (unsigned long long)s->segments);
    if (s->reason[0]) {
        size_t l = strlen(out);
        if (l < len) snprintf(out + l, len - l, ", reason \"%s\"", s->reason);
    }
}
