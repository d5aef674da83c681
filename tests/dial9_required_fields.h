/* The check that our traces carry what dial9 requires: for every event whose name is in
 * tests/vectors/dial9_required_fields.tsv (dial9's table of fields and types), each listed
 * field is in the event's schema with dial9's type, and each required one holds a value; and
 * the CPU times of parks and unparks are real (nonzero) and never go back on a thread. Inline,
 * so that the including test's CHECK counters (check.h) count it. */
#ifndef D9_TESTS_DIAL9_REQUIRED_FIELDS_H
#define D9_TESTS_DIAL9_REQUIRED_FIELDS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "format/decoder.h"
#include "format/wire.h"
#include "trace_files_util.h"

#define D9F_MAX_ROWS 96
#define D9F_MAX_TIDS 256

typedef struct d9f_row {
    char event[48], field[32];
    uint8_t type; /* dial9's wire type, D9_FT_OPTIONAL set for an optional one */
    bool required;
} d9f_row;

typedef struct d9f_tid_cpu {
    uint32_t tid;
    uint64_t cpu;
} d9f_tid_cpu;

typedef struct d9f_check {
    d9f_row rows[D9F_MAX_ROWS];
    int nrows;
    uint64_t events;        /* events whose name dial9 defines */
    uint64_t parks;         /* parks and unparks among them */
    uint64_t wrong;         /* a listed field missing, of another type, or a required one empty */
    uint64_t cpu_zero;      /* parks and unparks whose cpu_time_ns is 0 ("not measured") */
    uint64_t cpu_backwards; /* ... whose cpu_time_ns is below the thread's previous one */
    d9f_tid_cpu last[D9F_MAX_TIDS];
    int ntids;
    char first_problem[256];
} d9f_check;

/* The table's path: in the source tree next to this header (D9_SOURCE_DIR when set). */
static inline void d9f_table_path(char *out, size_t size) {
    const char *src = getenv("D9_SOURCE_DIR");
    if (src && *src) {
        snprintf(out, size, "%s/tests/vectors/dial9_required_fields.tsv", src);
        return;
    }
    const char *here = __FILE__, *slash = strrchr(here, '/');
    int dir = slash ? (int)(slash - here) : 1;
    snprintf(out, size, "%.*s/vectors/dial9_required_fields.tsv", dir, slash ? here : ".");
}

/* Load the table into c (zeroed). 0, or -1 with a message. */
static inline int d9f_init(d9f_check *c) {
    memset(c, 0, sizeof *c);
    char path[4096], line[256];
    d9f_table_path(path, sizeof path);
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "dial9_required_fields: cannot open %s\n", path);
        return -1;
    }
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == '\n') continue;
        d9f_row r;
        unsigned type;
        char req[8];
        if (c->nrows == D9F_MAX_ROWS || sscanf(line, "%47s %31s %u %7s", r.event, r.field, &type, req) != 4 ||
            type > 0xff) {
            fprintf(stderr, "dial9_required_fields: bad line in %s: %s", path, line);
            fclose(f);
            return -1;
        }
        r.type = (uint8_t)type;
        r.required = strcmp(req, "yes") == 0;
        c->rows[c->nrows++] = r;
    }
    fclose(f);
    return c->nrows > 0 ? 0 : -1;
}

static inline void d9f_problem(d9f_check *c, const d9_event *ev, const char *field, const char *what) {
    if (c->wrong++ == 0)
        snprintf(c->first_problem, sizeof c->first_problem, "%s.%s: %s", ev->schema->name, field, what);
}

static inline void d9f_on_event(const d9_event *ev, void *ctx) {
    d9f_check *c = ctx;
    bool named = false;
    for (int i = 0; i < c->nrows; i++) {
        const d9f_row *r = &c->rows[i];
        if (strcmp(r->event, ev->schema->name) != 0) continue;
        named = true;
        int at = d9_schema_field_index(ev->schema, r->field);
        if (at < 0) {
            if (r->required) d9f_problem(c, ev, r->field, "missing");
            continue;
        }
        const d9_dec_field *fd = &ev->schema->fields[at];
        uint8_t type = (uint8_t)(fd->type | (fd->optional ? D9_FT_OPTIONAL : 0));
        if (type != r->type) d9f_problem(c, ev, r->field, "not dial9's type");
        else if (r->required && !ev->values[at].present) d9f_problem(c, ev, r->field, "no value");
    }
    if (!named) return;
    c->events++;
    bool park = strcmp(ev->schema->name, "WorkerParkEvent") == 0;
    if (!park && strcmp(ev->schema->name, "WorkerUnparkEvent") != 0) return;
    c->parks++;
    uint64_t cpu = 0, tid = 0;
    if (!d9_value_uint(d9_event_field(ev, "cpu_time_ns"), &cpu) || cpu == 0) {
        c->cpu_zero++;
        return;
    }
    d9_value_uint(d9_event_field(ev, "tid"), &tid);
    int t = 0;
    while (t < c->ntids && c->last[t].tid != (uint32_t)tid) t++;
    if (t == c->ntids) {
        if (t == D9F_MAX_TIDS) return;
        c->ntids++;
        c->last[t] = (d9f_tid_cpu){(uint32_t)tid, 0};
    }
    if (cpu < c->last[t].cpu) c->cpu_backwards++;
    c->last[t].cpu = cpu;
}

/* Check every segment of a run directory; `what` names the run in the messages. Returns the
 * number of parks and unparks seen (the caller checks it is what it recorded). */
static inline uint64_t d9f_check_run(const char *run_dir, const char *what) {
    static d9f_check c; /* large; one check at a time */
    CHECK(d9f_init(&c) == 0);
    CHECK_EQ_U64(d9t_decode_run(run_dir, d9f_on_event, &c), 0);
    if (c.wrong || c.cpu_zero || c.cpu_backwards)
        fprintf(stderr, "%s (%s): %llu of %llu events without dial9's fields (first: %s); parks %llu, CPU time 0 %llu, "
                        "going back %llu\n",
                what, run_dir, (unsigned long long)c.wrong, (unsigned long long)c.events, c.first_problem,
                (unsigned long long)c.parks, (unsigned long long)c.cpu_zero, (unsigned long long)c.cpu_backwards);
    CHECK(c.events > 0);
    CHECK_EQ_U64(c.wrong, 0);
    CHECK_EQ_U64(c.cpu_zero, 0);
    CHECK_EQ_U64(c.cpu_backwards, 0);
    return c.parks;
}

#endif
