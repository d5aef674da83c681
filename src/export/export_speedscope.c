/* speedscope's JSON file format (https://www.speedscope.app/file-format-schema.json):
 *
 *  - sampled (default): one profile per thread, each stack sample a sample of weight 1, frames
 *    root first; with --by-location each stack is rooted at the spawn location of the poll it
 *    hit, with --stacks all at "[cpu]" / "[off-cpu]";
 *  - evented (--speedscope polls): one profile per worker whose frames are the polls (named by
 *    spawn location) and parks, opened and closed at their times (ns from the window start),
 *    never overlapping, so they nest as speedscope requires.
 *
 * shared.frames holds the model's frames first (same indexes), then the synthetic ones. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/json_writer.h"
#include "export/export.h"

static void put_string(FILE *out, const char *s) {
    putc('"', out);
    d9_json_escape(out, s, strlen(s));
    putc('"', out);
}

/* Synthetic frames (roots and poll names), numbered after the model's frames. */
typedef struct extra_frames {
    d9_xstrings names; /* index 0 ("") unused */
    uint32_t base;     /* m->frame_count - 1: frame of names index i is base + i */
} extra_frames;

static uint32_t extra(extra_frames *x, const char *name, bool *oom) {
    uint32_t i = d9_xstr_intern(&x->names, name, strlen(name));
    if (i == D9_XSTR_FAILED) {
        *oom = true;
        return 0;
    }
    return x->base + i;
}

static void write_frames(FILE *out, const d9_xmodel *m, const extra_frames *x) {
    fputs("\"shared\":{\"frames\":[", out);
    for (size_t f = 0; f < m->frame_count; f++) {
        const d9_xframe *fr = &m->frames[f];
        fputs(f ? ",\n{\"name\":" : "\n{\"name\":", out);
        put_string(out, d9_xm_str(m, fr->name));
        if (fr->file) {
            fputs(",\"file\":", out);
            put_string(out, d9_xm_str(m, fr->file));
            if (fr->line) fprintf(out, ",\"line\":%" PRIu32, fr->line);
        }
        putc('}', out);
    }
    for (size_t i = 1; i < x->names.count; i++) {
        fputs(m->frame_count || i > 1 ? ",\n{\"name\":" : "\n{\"name\":", out);
        put_string(out, d9_xstr_get(&x->names, (uint32_t)i));
        putc('}', out);
    }
    fputs("]},\n", out);
}

/* Threads of the sampled profiles: workers by index, then other tids. */
typedef struct thread_key {
    uint32_t worker, tid;
    uint32_t name; /* thread name string, 0 none */
} thread_key;

static int cmp_thread(const void *a, const void *b) {
    const thread_key *x = a, *y = b;
    if (x->worker != y->worker) return x->worker < y->worker ? -1 : 1;
    return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static bool same_thread(const thread_key *k, const d9_xsample *s) {
    return s->worker == k->worker && (s->worker != D9_XNONE || s->tid == k->tid);
}

static int write_sampled(FILE *out, const d9_xmodel *m, const d9_xopts *o, extra_frames *x,
                         size_t *profiles) {
    unsigned stacks = o && o->stacks ? o->stacks : D9_XSTACKS_CPU;
    bool oom = false;
    /* synthetic roots get their frame numbers before the frames are written: make them now */
    uint32_t root_cpu = extra(x, "[cpu]", &oom), root_off = extra(x, "[off-cpu]", &oom);
    uint32_t *roots = calloc(m->sample_count + 1, sizeof *roots);
    thread_key *threads = malloc((m->sample_count + 1) * sizeof *threads);
    uint32_t *frames = NULL;
    size_t cap = 0, nthreads = 0;
    char where[64];
    if (!roots || !threads) goto oom;
    for (size_t i = 0; i < m->sample_count; i++) {
        const d9_xsample *s = &m->samples[i];
        if (!d9_xsample_selected(s, stacks)) continue;
        if (o && o->by_location) roots[i] = extra(x, d9_xsample_where(m, s, where, sizeof where), &oom);
        threads[nthreads++] = (thread_key){s->worker, s->worker == D9_XNONE ? s->tid : 0,
                                           s->thread_name};
    }
    if (oom) goto oom;
    qsort(threads, nthreads, sizeof *threads, cmp_thread);
    size_t u = 0;
    for (size_t i = 0; i < nthreads; i++)
        if (u == 0 || cmp_thread(&threads[u - 1], &threads[i]) != 0) threads[u++] = threads[i];
    nthreads = u;

    write_frames(out, m, x);
    fputs("\"profiles\":[", out);
    for (size_t t = 0; t < nthreads; t++) {
        const thread_key *k = &threads[t];
        char name[600];
        if (k->worker != D9_XNONE) snprintf(name, sizeof name, "%s", d9_xm_str(m, m->workers[k->worker].name));
        else if (k->name) snprintf(name, sizeof name, "thread %" PRIu32 " (%s)", k->tid, d9_xm_str(m, k->name));
        else snprintf(name, sizeof name, "thread %" PRIu32, k->tid);
        fputs(t ? ",\n{\"type\":\"sampled\",\"name\":" : "\n{\"type\":\"sampled\",\"name\":", out);
        put_string(out, name);
        size_t count = 0;
        fputs(",\"unit\":\"none\",\"startValue\":0,\"samples\":[", out);
        for (size_t i = 0; i < m->sample_count; i++) {
            const d9_xsample *s = &m->samples[i];
            if (!d9_xsample_selected(s, stacks) || !same_thread(k, s)) continue;
            long n = d9_xsample_frames(m, s, &frames, &cap);
            if (n < 0) goto oom;
            fputs(count++ ? ",[" : "[", out);
            bool sep = false;
            if (o && o->by_location) {
                fprintf(out, "%" PRIu32, roots[i]);
                sep = true;
            }
            if (stacks == D9_XSTACKS_ALL) {
                fprintf(out, "%s%" PRIu32, sep ? "," : "", s->source == D9_XSAMPLE_OFFCPU ? root_off : root_cpu);
                sep = true;
            }
            for (long f = 0; f < n; f++) {
                fprintf(out, "%s%" PRIu32, sep ? "," : "", frames[f]);
                sep = true;
            }
            putc(']', out);
        }
        fputs("],\"weights\":[", out);
        for (size_t i = 0; i < count; i++) fputs(i ? ",1" : "1", out);
        fprintf(out, "],\"endValue\":%zu}", count);
    }
    fputs("]", out);
    *profiles = nthreads;
    free(roots);
    free(threads);
    free(frames);
    return 0;
oom:
    free(roots);
    free(threads);
    free(frames);
    return -1;
}

static int write_evented(FILE *out, const d9_xmodel *m, extra_frames *x, size_t *profiles) {
    bool oom = false;
    uint32_t park = extra(x, "park", &oom);
    uint32_t *poll_frame = malloc((m->poll_count + 1) * sizeof *poll_frame);
    if (!poll_frame) return -1;
    char name[600];
    for (size_t i = 0; i < m->poll_count; i++) {
        const d9_xpoll *p = &m->polls[i];
        if (p->loc) poll_frame[i] = extra(x, d9_xm_str(m, p->loc), &oom);
        else {
            snprintf(name, sizeof name, "poll (task %" PRIu64 ")", p->task);
            poll_frame[i] = extra(x, name, &oom);
        }
    }
    if (oom) {
        free(poll_frame);
        return -1;
    }
    write_frames(out, m, x);
    fputs("\"profiles\":[", out);
    size_t pk = 0, n = 0;
    for (uint32_t w = 0; w < m->worker_count; w++) {
        size_t i = m->worker_polls[w], iend = m->worker_polls[w + 1];
        while (pk < m->park_count && m->parks[pk].worker < w) pk++;
        size_t j = pk;
        if (i == iend && (j >= m->park_count || m->parks[j].worker != w)) continue;
        fputs(n++ ? ",\n{\"type\":\"evented\",\"name\":" : "\n{\"type\":\"evented\",\"name\":", out);
        put_string(out, d9_xm_str(m, m->workers[w].name));
        fprintf(out, ",\"unit\":\"nanoseconds\",\"startValue\":0,\"endValue\":%" PRIu64 ",\"events\":[",
                m->to - m->from);
        bool firstev = true;
        while (i < iend || (j < m->park_count && m->parks[j].worker == w)) {
            bool poll = j >= m->park_count || m->parks[j].worker != w ||
                        (i < iend && m->polls[i].start <= m->parks[j].start);
            uint64_t start, end;
            uint32_t frame;
            if (poll) {
                start = m->polls[i].start;
                end = m->polls[i].end;
                frame = poll_frame[i++];
            } else {
                start = m->parks[j].start;
                end = m->parks[j].end;
                frame = park;
                j++;
            }
            fprintf(out, "%s{\"type\":\"O\",\"frame\":%" PRIu32 ",\"at\":%" PRIu64 "},"
                         "{\"type\":\"C\",\"frame\":%" PRIu32 ",\"at\":%" PRIu64 "}",
                    firstev ? "\n" : ",\n", frame, start - m->from, frame, end - m->from);
            firstev = false;
        }
        fputs("]}", out);
        pk = j;
    }
    fputs("]", out);
    *profiles = n;
    free(poll_frame);
    return 0;
}

int d9_export_speedscope(const d9_xmodel *m, const d9_xopts *o, FILE *out, char *err,
                         size_t errlen) {
    extra_frames x = {.base = (uint32_t)m->frame_count - 1};
    if (!d9_xstr_init(&x.names)) {
        snprintf(err, errlen, "out of memory");
        return D9_XWRITE_ERROR;
    }
    fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\n", out);
    fputs("\"exporter\":\"dial9 export\",\"name\":", out);
    put_string(out, o && o->name ? o->name : "dial9 trace");
    fputs(",\"activeProfileIndex\":0,\n", out);
    size_t profiles = 0;
    int rc = o && o->speedscope_polls ? write_evented(out, m, &x, &profiles)
                                      : write_sampled(out, m, o, &x, &profiles);
    d9_xstr_free(&x.names);
    if (rc != 0) {
        snprintf(err, errlen, "out of memory while writing the speedscope profile");
        return D9_XWRITE_ERROR;
    }
    fputs("}\n", out);
    if (fflush(out) != 0 || ferror(out)) {
        snprintf(err, errlen, "write error");
        return D9_XWRITE_ERROR;
    }
    (void)profiles;
    return D9_XWRITE_OK;
}
