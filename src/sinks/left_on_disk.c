/* What a run's uploads left on disk (see left_on_disk.h). */
#include "sinks/left_on_disk.h"

#include <dirent.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/segment_name.h"

#define NAMED_MAX 32 /* names in the message; the count says the rest */

typedef struct left_file {
    uint64_t seq;
    d9_segment_kind kind;
} left_file;

static int by_seq(const void *a, const void *b) {
    uint64_t x = ((const left_file *)a)->seq, y = ((const left_file *)b)->seq;
    return x < y ? -1 : x > y;
}

unsigned long d9_say_left_on_disk(FILE *to, const char *who, const char *run_dir, const char *trace_dir) {
    DIR *d = run_dir ? opendir(run_dir) : NULL;
    if (!d) return 0;
    left_file *files = NULL;
    size_t n = 0, cap = 0;
    unsigned long total = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        uint64_t seq;
        d9_segment_kind kind;
        if (!d9_segment_name_parse(e->d_name, &seq, &kind) || kind == D9_SEGMENT_ACTIVE) continue;
        total++;
        if (n == cap) { /* kept to be sorted: the oldest are named */
            left_file *p = realloc(files, (cap = cap ? 2 * cap : 64) * sizeof *files);
            if (!p) continue; /* counted, not named */
            files = p;
        }
        files[n++] = (left_file){seq, kind}; /* its name again from these: d9_segment_name_format */
    }
    closedir(d);
    if (total > 0) {
        if (n) qsort(files, n, sizeof *files, by_seq);
        fprintf(to, "%s: S3 upload: %lu sealed segment%s of this run not uploaded stay%s on disk in %s:", who, total,
                total == 1 ? "" : "s", total == 1 ? "s" : "", run_dir);
        for (size_t i = 0; i < n && i < NAMED_MAX; i++) {
            char name[D9_SEGMENT_NAME_MAX];
            d9_segment_name_format(name, sizeof name, files[i].seq, files[i].kind);
            fprintf(to, "%s %s", i ? "," : "", name);
        }
        if (total > (n < NAMED_MAX ? n : NAMED_MAX))
            fprintf(to, " and %lu more", total - (unsigned long)(n < NAMED_MAX ? n : NAMED_MAX));
        fprintf(to, " (the next start with this trace directory or `dial9 upload %s` uploads them)\n",
                trace_dir ? trace_dir : run_dir);
    }
    free(files);
    return total;
}
