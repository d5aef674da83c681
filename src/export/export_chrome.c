/* Chrome JSON trace events (the "JSON Object Format" of the Trace Event Format), for the
 * Perfetto UI, chrome://tracing, speedscope and others:
 *
 *   {"displayTimeUnit":"ns","otherData":{...},"traceEvents":[...]}
 *
 * One process, one thread per worker (named by metadata events). Polls and parks are
 * complete events ("X", ts + dur), which never overlap on a thread (the model cuts them), so
 * they nest trivially; wakes are zero-length "X" events on the waking worker with a flow
 * ("s" -> "f", binding to the poll that the wake caused); queue depths and scheduling delays
 * are counters ("C"). Times are microseconds with three decimals (exact ns) counted from the
 * start of the window, which otherData.t0_monotonic_ns gives. JSON costs ~100 bytes per
 * event, so a writer refuses more than opts.max_events events: export a window instead. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/json_writer.h"
#include "export/export.h"

typedef struct cw {
    const d9_xmodel *m;
    FILE *out;
    uint32_t pid;
    bool first; /* no comma before the first trace event */
} cw;

/* A microsecond time with ns precision from a ns offset: "12000.000" */
static void put_us(FILE *out, uint64_t ns) {
    fprintf(out, "%" PRIu64 ".%03u", ns / 1000, (unsigned)(ns % 1000));
}

static void put_string(FILE *out, const char *s) {
    putc('"', out);
    d9_json_escape(out, s, strlen(s));
    putc('"', out);
}

static void event_start(cw *c, const char *ph) {
    fputs(c->first ? "\n" : ",\n", c->out);
    c->first = false;
    fprintf(c->out, "{\"ph\":\"%s\",\"pid\":%" PRIu32, ph, c->pid);
}

static uint32_t worker_tid(const d9_xmodel *m, uint32_t w) {
    return m->workers[w].tid_known ? m->workers[w].tid : 0x10000000u + w;
}
#define TID_OUTSIDE 0x0fffffffu /* wakes that come from outside the workers */

static void metadata(cw *c, const char *what, uint32_t tid, const char *name) {
    event_start(c, "M");
    fprintf(c->out, ",\"tid\":%" PRIu32 ",\"name\":\"%s\",\"args\":{\"name\":", tid, what);
    put_string(c->out, name);
    fputs("}}", c->out);
}

static void complete(cw *c, uint32_t tid, const char *cat, const char *name, uint64_t start,
                     uint64_t end) {
    const d9_xmodel *m = c->m;
    event_start(c, "X");
    fprintf(c->out, ",\"tid\":%" PRIu32 ",\"cat\":\"%s\",\"name\":", tid, cat);
    put_string(c->out, name);
    fputs(",\"ts\":", c->out);
    put_us(c->out, start - m->from);
    fputs(",\"dur\":", c->out);
    put_us(c->out, end - start);
}

static void flow(cw *c, const char *ph, uint32_t tid, uint64_t id, uint64_t ts) {
    event_start(c, ph);
    fprintf(c->out, ",\"tid\":%" PRIu32 ",\"cat\":\"wake\",\"name\":\"wake\",\"id\":%" PRIu64 ",\"ts\":",
            tid, id);
    put_us(c->out, ts - c->m->from);
    if (ph[0] == 'f') fputs(",\"bp\":\"e\"", c->out); /* bind to the poll that starts here */
    fputs("}", c->out);
}

static void counter(cw *c, const char *name, const char *arg, const d9_xcounter *k) {
    event_start(c, "C");
    fputs(",\"tid\":0,\"name\":", c->out);
    put_string(c->out, name);
    fputs(",\"ts\":", c->out);
    put_us(c->out, k->ts - c->m->from);
    fprintf(c->out, ",\"args\":{\"%s\":%" PRIu64 "}}", arg, k->value);
}

/* Events are written by kind (slices per thread, wakes, counters), each kind in time order:
 * readers sort by ts, and nesting only concerns the slices of one thread. */
static uint64_t count_events(const d9_xmodel *m) {
    uint64_t n = 2 + m->worker_count + m->poll_count + m->park_count + m->wake_count +
                 m->local_queue_count + m->sched_delay_count + m->global_queue_count;
    for (size_t i = 0; i < m->wake_count; i++)
        if (m->wakes[i].target != D9_XNONE) n += 2;
    return n;
}

static void write_slices(cw *c) {
    const d9_xmodel *m = c->m;
    size_t pk = 0;
    for (uint32_t w = 0; w < m->worker_count; w++) {
        uint32_t tid = worker_tid(m, w);
        size_t i = m->worker_polls[w], iend = m->worker_polls[w + 1];
        while (pk < m->park_count && m->parks[pk].worker < w) pk++;
        size_t j = pk;
        while (i < iend || (j < m->park_count && m->parks[j].worker == w)) {
            bool poll = j >= m->park_count || m->parks[j].worker != w ||
                        (i < iend && m->polls[i].start <= m->parks[j].start);
            if (poll) {
                const d9_xpoll *p = &m->polls[i++];
                const char *name = p->loc ? d9_xm_str(m, p->loc) : "poll";
                complete(c, tid, "poll", name, p->start, p->end);
                fprintf(c->out, ",\"args\":{\"task_id\":%" PRIu64 ",\"local_queue\":%" PRIu32 "}}",
                        p->task, p->queue);
            } else {
                const d9_xpark *k = &m->parks[j++];
                complete(c, tid, "park", "park", k->start, k->end);
                /* only what was measured: an unread park has no CPU time, no delay */
                const char *sep = "";
                fputs(",\"args\":{", c->out);
                if (k->has_cpu) {
                    fprintf(c->out, "\"cpu_time_ns\":%" PRIu64, k->cpu_ns);
                    sep = ",";
                }
                if (k->has_sched_wait) fprintf(c->out, "%s\"sched_wait_ns\":%" PRIu64, sep, k->sched_wait_ns);
                fputs("}}", c->out);
            }
        }
        pk = j;
    }
}

static void write_wakes(cw *c) {
    const d9_xmodel *m = c->m;
    for (size_t i = 0; i < m->wake_count; i++) {
        const d9_xwake *wk = &m->wakes[i];
        uint32_t tid = wk->from_worker == D9_XNONE ? TID_OUTSIDE : worker_tid(m, wk->from_worker);
        complete(c, tid, "wake", "wake", wk->ts, wk->ts);
        fprintf(c->out, ",\"args\":{\"woken_task_id\":%" PRIu64 ",\"waker_task_id\":%" PRIu64 "}}",
                wk->woken_task, wk->waker_task);
        if (wk->target == D9_XNONE) continue;
        const d9_xpoll *p = &m->polls[wk->target];
        flow(c, "s", tid, i + 1, wk->ts);
        flow(c, "f", worker_tid(m, p->worker), i + 1, p->start);
    }
}

static void write_counters(cw *c) {
    const d9_xmodel *m = c->m;
    char name[600];
    for (size_t i = 0; i < m->local_queue_count; i++) {
        const d9_xcounter *k = &m->local_queue[i];
        snprintf(name, sizeof name, "%s: local queue", d9_xm_str(m, m->workers[k->worker].name));
        counter(c, name, "depth", k);
    }
    for (size_t i = 0; i < m->sched_delay_count; i++) {
        const d9_xcounter *k = &m->sched_delay[i];
        snprintf(name, sizeof name, "%s: scheduling delay", d9_xm_str(m, m->workers[k->worker].name));
        counter(c, name, "ns", k);
    }
    for (size_t i = 0; i < m->global_queue_count; i++)
        counter(c, "global queue", "depth", &m->global_queue[i]);
}

int d9_export_chrome(const d9_xmodel *m, const d9_xopts *o, FILE *out, char *err, size_t errlen) {
    uint64_t n = count_events(m);
    if (o && o->max_events && n > o->max_events) {
        snprintf(err, errlen,
                 "%" PRIu64 " trace events (~%" PRIu64 " MB of JSON) is more than the limit of %" PRIu64
                 ": export a window with --from/--to, use --format perfetto, or raise --max-events",
                 n, n * 100 / 1000000, o->max_events);
        return D9_XWRITE_REFUSED;
    }
    cw c = {.m = m, .out = out, .pid = m->pid ? m->pid : 1, .first = true};
    /* t0 as strings: JSON readers hold numbers in doubles, exact only up to 2^53 */
    fprintf(out, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"exporter\":\"dial9\","
                 "\"t0_monotonic_ns\":\"%" PRIu64 "\"", m->from);
    if (m->have_realtime) fprintf(out, ",\"t0_realtime_ns\":\"%" PRIu64 "\"", m->realtime_at_from);
    fputs("},\"traceEvents\":[", out);
    metadata(&c, "process_name", 0, m->service ? d9_xm_str(m, m->service) : "dial9 trace");
    for (uint32_t w = 0; w < m->worker_count; w++)
        metadata(&c, "thread_name", worker_tid(m, w), d9_xm_str(m, m->workers[w].name));
    metadata(&c, "thread_name", TID_OUTSIDE, "wakes from outside the workers");
    write_slices(&c);
    write_wakes(&c);
    write_counters(&c);
    fputs("\n]}\n", out);
    if (fflush(out) != 0 || ferror(out)) {
        snprintf(err, errlen, "write error");
        return D9_XWRITE_ERROR;
    }
    return D9_XWRITE_OK;
}
