/* A dump run's manifest in the index (dump_info.h). */
#include "serve/dump_info.h"

#include <fcntl.h>
#include <unistd.h>

#include "common/dump_summary.h"
#include "serve/open_beneath.h"

static void string_or_null(d9_json *j, const char *key, const char *v) {
    d9_json_key(j, key);
    if (v[0]) d9_json_string(j, v);
    else d9_json_null(j);
}

void d9_serve_dump_json(d9_json *j, int root_fd, const char *run) {
    d9_json_key(j, "flight_dump");
    int fd = d9_open_beneath(root_fd, run, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    d9_dump_summary s;
    d9_dump_state st = fd >= 0 ? d9_dump_dir_read(fd, &s) : D9_DUMP_NOT_A_DUMP;
    if (fd >= 0) close(fd);
    if (st == D9_DUMP_NOT_A_DUMP) {
        d9_json_null(j);
        return;
    }
    d9_json_object_begin(j);
    d9_json_key(j, "complete");
    d9_json_bool(j, st == D9_DUMP_COMPLETE);
    if (st == D9_DUMP_COMPLETE) {
        string_or_null(j, "trigger", s.kind);
        string_or_null(j, "rule", s.rule);
        string_or_null(j, "event", s.event);
        string_or_null(j, "reason", s.reason);
        d9_json_key(j, "at_unix_ns");
        d9_json_i64(j, s.at_unix_ns);
        d9_json_key(j, "from_unix_ns");
        d9_json_i64(j, s.from_unix_ns);
        d9_json_key(j, "to_unix_ns");
        d9_json_i64(j, s.to_unix_ns);
        d9_json_key(j, "lookback_ms");
        d9_json_u64(j, s.lookback_ms);
        d9_json_key(j, "lookforward_ms");
        d9_json_u64(j, s.lookforward_ms);
        char line[1024];
        d9_dump_summary_line(&s, line, sizeof line);
        d9_json_key(j, "summary");
        d9_json_string(j, line);
    } else if (st == D9_DUMP_UNREADABLE) {
        d9_json_key(j, "summary");
        d9_json_string(j, "its manifest.json is not a dump manifest");
    } else {
        d9_json_key(j, "summary");
        d9_json_string(j, "incomplete: no manifest.json (the dump was interrupted)");
    }
    d9_json_object_end(j);
}
