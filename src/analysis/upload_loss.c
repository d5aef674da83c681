/* Segments deleted before upload, from UploadLossEvent records (see upload_loss.h). */
#include "analysis/upload_loss.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "format/schemas.h"

static bool field_uint(const d9_event *ev, const char *name, uint64_t *out) {
    int i = d9_schema_field_index(ev->schema, name);
    return i >= 0 && d9_value_uint(&ev->values[i], out);
}

int d9a_upload_loss_note(d9a_upload_loss *l, const d9_event *ev) {
    if (ev->schema->bind.role != D9_SCH_UPLOAD_LOSS) return 0; /* bound by name: any writer's */
    uint64_t segments = 0, bytes = 0, first = 0, last = 0;
    if (!field_uint(ev, "segments", &segments) || segments == 0) return 0;
    field_uint(ev, "bytes", &bytes);
    field_uint(ev, "first_start_unix_ns", &first);
    field_uint(ev, "last_end_unix_ns", &last);
    d9_dec_str run = {"", 0};
    int ri = d9_schema_field_index(ev->schema, "run_id");
    if (ri >= 0) d9_value_str(&ev->values[ri], &run);
    d9a_upload_loss_run *r = NULL;
    for (size_t i = 0; i < l->n && !r; i++)
        if (strlen(l->runs[i].run) == run.len && memcmp(l->runs[i].run, run.ptr, run.len) == 0) r = &l->runs[i];
    if (!r) {
        if (l->n == l->cap) {
            size_t cap = l->cap ? l->cap * 2 : 4;
            d9a_upload_loss_run *p = realloc(l->runs, cap * sizeof *p);
            if (!p) return -1;
            l->runs = p;
            l->cap = cap;
        }
        char *name = malloc(run.len + 1);
        if (!name) return -1;
        memcpy(name, run.ptr, run.len);
        name[run.len] = 0;
        r = &l->runs[l->n++];
        *r = (d9a_upload_loss_run){.run = name};
    }
    if (segments > r->segments) { /* running totals: the latest record of the run knows most */
        r->segments = segments;
        r->bytes = bytes;
    }
    if (first && (!r->first_start_unix_ns || first < r->first_start_unix_ns)) r->first_start_unix_ns = first;
    if (last > r->last_end_unix_ns) r->last_end_unix_ns = last;
    return 0;
}

bool d9a_upload_loss_total(const d9a_upload_loss *l, d9a_upload_loss_run *t) {
    *t = (d9a_upload_loss_run){.run = NULL};
    for (size_t i = 0; i < l->n; i++) {
        const d9a_upload_loss_run *r = &l->runs[i];
        t->segments += r->segments;
        t->bytes += r->bytes;
        if (r->first_start_unix_ns && (!t->first_start_unix_ns || r->first_start_unix_ns < t->first_start_unix_ns))
            t->first_start_unix_ns = r->first_start_unix_ns;
        if (r->last_end_unix_ns > t->last_end_unix_ns) t->last_end_unix_ns = r->last_end_unix_ns;
    }
    return t->segments > 0;
}

static void utc(uint64_t unix_ns, const char *fmt, char *out, size_t len) {
    time_t s = (time_t)(unix_ns / 1000000000u);
    struct tm tm;
    if (!gmtime_r(&s, &tm) || !strftime(out, len, fmt, &tm)) snprintf(out, len, "?");
}

void d9a_upload_loss_describe(const d9a_upload_loss_run *t, char *buf, size_t len) {
    char from[40] = "?", to[40] = "?";
    if (t->first_start_unix_ns) utc(t->first_start_unix_ns, "%Y-%m-%d %H:%M:%S", from, sizeof from);
    if (t->last_end_unix_ns) {
        bool same_day = t->first_start_unix_ns / 86400000000000ull == t->last_end_unix_ns / 86400000000000ull;
        utc(t->last_end_unix_ns, same_day ? "%H:%M:%S" : "%Y-%m-%d %H:%M:%S", to, sizeof to);
    }
    snprintf(buf, len, "%" PRIu64 " segment%s (%.1f MB, %s to %s UTC) deleted before upload", t->segments,
             t->segments == 1 ? "" : "s", (double)t->bytes / 1e6, from, to);
}

void d9a_upload_loss_free(d9a_upload_loss *l) {
    for (size_t i = 0; i < l->n; i++) free(l->runs[i].run);
    free(l->runs);
    *l = (d9a_upload_loss){0};
}
