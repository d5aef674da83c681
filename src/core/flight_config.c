/* The flight recorder's environment variables (flight_config.h). */
#include "core/flight_config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An integer in [lo, hi], or the default with the variable named on stderr. */
static uint64_t env_u64(const char *name, uint64_t lo, uint64_t hi, uint64_t dflt) {
    const char *v = getenv(name);
    if (!v) return dflt;
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (!*v || *end || errno || *v == '-' || n < lo || n > hi) {
        fprintf(stderr, "dial9: %s=\"%s\": expected a whole number from %llu to %llu; using %llu\n", name, v,
                (unsigned long long)lo, (unsigned long long)hi, (unsigned long long)dflt);
        return dflt;
    }
    return n;
}

static bool env_flag(const char *name) {
    const char *v = getenv(name);
    if (!v) return false;
    if (!strcmp(v, "1") || !strcmp(v, "true") || !strcmp(v, "on") || !strcmp(v, "yes")) return true;
    if (strcmp(v, "0") && strcmp(v, "false") && strcmp(v, "off") && strcmp(v, "no"))
        fprintf(stderr, "dial9: %s=\"%s\": expected 1 or 0; using 0\n", name, v);
    return false;
}

bool d9_flight_dump_dir(const char *trace_dir, char *out, size_t len) {
    const char *dir = getenv("DIAL9_DUMP_DIR");
    if (dir && *dir && strlen(dir) + 64 < len) {
        snprintf(out, len, "%s", dir);
        return true;
    }
    /* beside the trace directory, not in it: readers walk it whole, and its budget deletes */
    size_t n = strlen(trace_dir);
    while (n > 1 && trace_dir[n - 1] == '/') n--;
    if (n + 80 > len) n = len > 80 ? len - 80 : 0;
    snprintf(out, len, "%.*s-dumps", (int)n, trace_dir);
    return !dir;
}

void d9_flight_config_from_env(d9_flight_config *fc, const char *trace_dir) {
    memset(fc, 0, sizeof *fc);
    const char *mode = getenv("DIAL9_MODE");
    if (mode && !strcmp(mode, "memory")) fc->memory = true;
    else if (mode && strcmp(mode, "disk"))
        fprintf(stderr, "dial9: DIAL9_MODE=\"%s\": expected disk or memory; recording to disk\n", mode);
    fc->memory_bytes = env_u64("DIAL9_FLIGHT_MEMORY_MB", 1, 1u << 20, 64) << 20;
    fc->keep_ns = env_u64("DIAL9_FLIGHT_KEEP_SECS", 1, 86400, 300) * 1000000000ull;
    fc->segment_ns = env_u64("DIAL9_FLIGHT_SEGMENT_MS", 10, 3600000, 1000) * 1000000ull;
    fc->lookback_ns = env_u64("DIAL9_DUMP_LOOKBACK_SECS", 0, 86400, 30) * 1000000000ull;
    fc->lookforward_ns = env_u64("DIAL9_DUMP_LOOKFORWARD_SECS", 0, 3600, 5) * 1000000000ull;
    fc->debounce_ns = env_u64("DIAL9_DUMP_DEBOUNCE_SECS", 0, 86400, 10) * 1000000000ull;
    fc->max_per_hour = (uint32_t)env_u64("DIAL9_DUMP_MAX_PER_HOUR", 0, 100000, 6);
    fc->give_up_ns = env_u64("DIAL9_DUMP_GIVE_UP_MS", 0, 3600000, 10000) * 1000000ull;
    if (!d9_flight_dump_dir(trace_dir, fc->dump_dir, sizeof fc->dump_dir))
        fprintf(stderr, "dial9: DIAL9_DUMP_DIR: empty or too long; using {trace_dir}-dumps\n");
    char err[1024];
    const char *spec = getenv("DIAL9_TRIGGERS");
    if (d9_flight_rules_parse(spec, &fc->rules, err, sizeof err) > 0)
        fprintf(stderr, "dial9: DIAL9_TRIGGERS: %s (recording goes on with the %zu good rule%s)\n", err,
                fc->rules.count, fc->rules.count == 1 ? "" : "s");
    fc->active = fc->memory || fc->rules.count > 0 || env_flag("DIAL9_DUMPS");
}
