/* Where `dial9 analyze` of a dump starts (dump_window.h). */
#include "cli/dump_window.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "common/dump_summary.h"

void d9_dump_analyze_window(int n, char **paths, d9_time_arg *from, FILE *say) {
    bool given = from->set;
    uint64_t earliest = 0;
    for (int i = 0; i < n; i++) {
        int fd = open(paths[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) continue;
        d9_dump_summary s;
        d9_dump_state st = d9_dump_dir_read(fd, &s);
        close(fd);
        if (st == D9_DUMP_NOT_A_DUMP) continue;
        if (st != D9_DUMP_COMPLETE) {
            fprintf(say, "dump %s: %s: the report covers what its segments hold\n", paths[i],
                    st == D9_DUMP_INCOMPLETE ? "INCOMPLETE, no manifest.json (the dump was interrupted)"
                                             : "its manifest.json is not a dump manifest");
            continue;
        }
        char line[1024];
        d9_dump_summary_line(&s, line, sizeof line);
        fprintf(say, "dump %s: trigger %s (@%" PRIu64 " ns in the trace's clock)\n", paths[i], line, s.at_mono_ns);
        if (!strcmp(s.kind, "crash")) { /* its window is all the recorder held: the report covers it all */
            fprintf(say, "a crash dump holds everything the recorder held: the report covers it all\n");
            continue;
        }
        if (!earliest || s.from_mono_ns < earliest) earliest = s.from_mono_ns;
    }
    if (!earliest) return;
    if (given) {
        fprintf(say, "the report starts at --from, not at the dump's look-back\n");
        return;
    }
    *from = (d9_time_arg){.set = true, .base = D9_TIME_ABSOLUTE, .ns = earliest};
    fprintf(say, "the report starts at the trigger's look-back: @%" PRIu64 " ns\n\n", earliest);
}
