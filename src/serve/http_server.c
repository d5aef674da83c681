/* The HTTP side of `dial9 serve` on libmicrohttpd (see serve.h, docs/serve.md):
 *
 *   GET /                 the runs page (runs.html of the viewer: /api/index, newest first);
 *                         with ?trace=, and the viewer's other files: the viewer
 *   GET /runs             an HTML list of the runs, each linking to the viewer
 *   GET /window?instance=I&from=T&to=T  a window of one instance (--selection): to the viewer
 *   GET /api/index        JSON: runs, segments, sizes, time ranges (trace_index.h)
 *   GET /api/trace?run=R[&seg=N...][&file=NAME...]
 *                         the selected segments of run R (all when none is named),
 *                         concatenated into one trace (segment_concat.h); with a selection
 *                         from S3, segments not in the cache are fetched first: the request
 *                         is suspended until dial9's fetch step has them (fetch_jobs.h), and
 *                         kept in the cache while they are sent (cache_pin.h)
 *
 * Only GET and HEAD, no request bodies, bounded headers (libmicrohttpd's per-connection
 * memory limit) and query parameters, no %00, only Host names that DNS rebinding cannot
 * forge (host_check.h), connections bounded per client address and in time (conn_guard.h),
 * a log that escapes what clients send. Files are only ever served from the viewer
 * directory (safe_path.h) and, for traces, only the segments the index lists, each opened
 * beneath the trace directory's fd without following symlinks (open_beneath.h) and checked
 * to be the file indexed. One thread runs every request (run_loop), so the index needs
 * no lock. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* open_memstream */
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/exit_codes.h"
#include "serve/cache_pin.h"
#include "serve/conn_guard.h"
#include "serve/fetch_jobs.h"
#include "serve/host_check.h"
#include "serve/instance_window.h"
#include "serve/open_beneath.h"
#include "serve/safe_path.h"
#include "serve/segment_concat.h"
#include "serve/serve_selection.h"
#include "serve/serve.h"
#include "serve/trace_index.h"
#include "serve/url.h"

#define MEMORY_PER_CONNECTION (64 * 1024) /* request line + headers must fit */
#define MAX_QUERY_PARAMS 256  /* more get 431: libmicrohttpd would run out of its memory pool */
#define MAX_LOGGED_TARGET 512 /* bytes of a request target in the log */
#define MAX_SELECTED 100000 /* seg= / file= parameters in one request */
#define MAX_FETCHES 3       /* fetches one request waits for: its segments evicted again and again */
#define SUSPENDED 1         /* not an HTTP status: the request waits for a fetch */

typedef struct server {
    d9_trace_index index;
    d9_serve_selection selection; /* --selection: what `dial9 serve --bucket` chose */
    char *viewer_root; /* real path, or NULL */
    int viewer_fd;     /* the viewer directory: its files are opened beneath it */
    bool quiet;
    d9_guard guard;
    d9_host_check hosts;
    d9_fetch_jobs jobs; /* with a selection: its runs fetched when opened */
} server;

/* One request, from its request line to its end (libmicrohttpd's req_cls). */
typedef struct request {
    bool seen;    /* by on_request once: a GET is answered on the second call, as libmicrohttpd
                     keeps the connection alive only for an answer queued after the headers */
    bool has_nul; /* a %00 somewhere in the target: it would cut the decoded path or value */
    struct MHD_Connection *conn;
    bool suspended;     /* waiting for a fetch (fetch_jobs.h) */
    bool fetch_done;    /* the fetch it asked for ended */
    unsigned fetches;   /* how many it waited for */
    char *fetch_error;  /* the last one's failure, or NULL */
    char target[]; /* as received, for the log (at most MAX_LOGGED_TARGET + 1 bytes) */
} request;

/* ---- responses ---------------------------------------------------------------------------- */

static void common_headers(struct MHD_Response *r, const char *type, bool no_store) {
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, no_store ? "no-store" : "no-cache");
}

static enum MHD_Result send_response(struct MHD_Connection *c, unsigned status, struct MHD_Response *r) {
    if (!r) return MHD_NO;
    enum MHD_Result ok = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result send_buffer(struct MHD_Connection *c, unsigned status, const char *type,
                                   char *data, size_t len) {
    struct MHD_Response *r = MHD_create_response_from_buffer(len, data, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(data);
        return MHD_NO;
    }
    common_headers(r, type, true);
    return send_response(c, status, r);
}

static enum MHD_Result send_text(struct MHD_Connection *c, unsigned status, const char *text) {
    char *copy = strdup(text);
    if (!copy) return MHD_NO;
    return send_buffer(c, status, "text/plain; charset=utf-8", copy, strlen(copy));
}

/* A log line's start: the method and the request target as received (not decoded), both
 * escaped so that nothing in them can forge a line. The caller holds stderr's lock. */
static void log_request_start(const char *method, const char *target) {
    fputs("dial9 serve: ", stderr);
    d9_log_escape(stderr, method, 32);
    fputc(' ', stderr);
    d9_log_escape(stderr, target, MAX_LOGGED_TARGET);
}

/* One line per request, with the status answered. */
static void log_request(const server *s, const char *method, const char *target, unsigned status) {
    if (s->quiet) return;
    flockfile(stderr);
    log_request_start(method, target);
    fprintf(stderr, " %u\n", status);
    funlockfile(stderr);
}

/* A request suspended until the fetch of its run ends (logged when answered, too). */
static void log_waiting(const server *s, const char *method, const char *target, const char *run, bool joined) {
    if (s->quiet) return;
    flockfile(stderr);
    log_request_start(method, target);
    fputs(joined ? " waits for the fetch of run " : " waits: fetching run ", stderr);
    d9_log_escape(stderr, run, MAX_LOGGED_TARGET);
    fputs(joined ? " under way\n" : " from the bucket\n", stderr);
    funlockfile(stderr);
}

/* ---- the viewer's files --------------------------------------------------------------------- */

static const char *content_type(const char *path) {
    static const struct { const char *ext, *type; } types[] = {
        {".html", "text/html; charset=utf-8"}, {".js", "text/javascript; charset=utf-8"},
        {".mjs", "text/javascript; charset=utf-8"}, {".css", "text/css; charset=utf-8"},
        {".json", "application/json"}, {".svg", "image/svg+xml"}, {".png", "image/png"},
        {".ico", "image/x-icon"}, {".wasm", "application/wasm"}, {".txt", "text/plain; charset=utf-8"},
        {".md", "text/plain; charset=utf-8"}, {".map", "application/json"},
    };
    const char *dot = strrchr(path, '.');
    for (size_t i = 0; dot && i < sizeof types / sizeof types[0]; i++)
        if (!strcmp(dot, types[i].ext)) return types[i].type;
    return "application/octet-stream";
}

static unsigned serve_file(server *s, struct MHD_Connection *c, const char *url, enum MHD_Result *ok) {
    if (!s->viewer_root) {
        *ok = send_text(c, 404, "dial9 serve: no viewer directory (see --viewer-dir); the API is at /api/index\n");
        return 404;
    }
    int fd;
    struct stat st;
    bool is_index;
    int rc = D9_PATH_NOT_FOUND;
    /* the address `dial9 serve` prints opens on the directory's runs; a run opens in the
       viewer as /?trace=... (a viewer directory without runs.html: the viewer) */
    if (!strcmp(url, "/") && !MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "trace") &&
        (rc = d9_safe_open(s->viewer_fd, "/runs.html", &fd, &st, &is_index)) == D9_PATH_OK)
        url = "/runs.html";
    if (rc != D9_PATH_OK) rc = d9_safe_open(s->viewer_fd, url, &fd, &st, &is_index);
    if (rc != D9_PATH_OK) {
        *ok = send_text(c, (unsigned)rc, rc == D9_PATH_FORBIDDEN ? "forbidden\n" : "not found\n");
        return (unsigned)rc;
    }
    struct MHD_Response *r = MHD_create_response_from_fd((uint64_t)st.st_size, fd); /* owns fd */
    if (!r) {
        close(fd);
        *ok = MHD_NO;
        return 500;
    }
    common_headers(r, content_type(is_index ? "index.html" : url), false);
    *ok = send_response(c, 200, r);
    return 200;
}

/* ---- /api/index and /runs ------------------------------------------------------------------- */

static unsigned serve_index(server *s, struct MHD_Connection *c, enum MHD_Result *ok) {
    char err[256];
    if (d9_trace_index_refresh(&s->index, err, sizeof err) != 0) {
        *ok = send_text(c, 500, err);
        return 500;
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) {
        *ok = MHD_NO;
        return 500;
    }
    d9_trace_index_json(&s->index, f);
    fclose(f);
    *ok = send_buffer(c, 200, "application/json", buf, len);
    return 200;
}

static void html_time_range(FILE *f, const d9_run *r) {
    uint64_t first = 0, last = 0, bytes = 0;
    bool have = false;
    size_t cached = 0;
    for (size_t k = 0; k < r->count; k++) {
        bytes += r->segs[k]->size;
        cached += !r->segs[k]->remote;
        if (!r->segs[k]->have_ts) continue;
        if (!have || r->segs[k]->first_ns < first) first = r->segs[k]->first_ns;
        if (!have || r->segs[k]->last_ns > last) last = r->segs[k]->last_ns;
        have = true;
    }
    fprintf(f, "<td>%zu</td><td>%.1f MB</td><td class=\"cached\">%zu of %zu</td>", r->count, bytes / 1e6, cached,
            r->count);
    if (have) fprintf(f, "<td>%.3f s</td>", (last - first) / 1e9);
    else fputs("<td>-</td>", f);
}

/* The wall-clock range a selection's keys give (first and last segment start), or "-". */
static void html_wall_clock(FILE *f, const d9_run *r) {
    const d9_sel_run *sel = r->selected;
    if (!sel || sel->first < 0) {
        fputs("<td>-</td>", f);
        return;
    }
    char a[32], b[32];
    struct tm tm;
    time_t t = (time_t)sel->first;
    gmtime_r(&t, &tm);
    strftime(a, sizeof a, "%Y-%m-%d %H:%M:%S", &tm);
    t = (time_t)sel->last;
    gmtime_r(&t, &tm);
    /* the last start without its date when it is the same day */
    strftime(b, sizeof b, sel->last / 86400 == sel->first / 86400 ? "%H:%M:%S" : "%Y-%m-%d %H:%M:%S", &tm);
    fprintf(f, "<td class=\"wall\" data-first=\"%lld\" data-last=\"%lld\">%s &ndash; %s UTC</td>", sel->first,
            sel->last, a, b);
}

static void html_utc_value(FILE *f, long long t) {
    char v[32];
    struct tm tm;
    time_t tt = (time_t)t;
    gmtime_r(&tt, &tm);
    strftime(v, sizeof v, "%Y-%m-%dT%H:%M:%S", &tm);
    fputs(v, f);
}

/* One form per instance of a selection (runs sorted by name keep an instance's runs together):
 * a window of it, from and to in UTC, prefilled with its first and last segment start. */
static void html_window_forms(FILE *f, const d9_trace_index *ix) {
    bool any = false;
    for (size_t i = 0; i < ix->run_count;) {
        char inst[1024], next[1024];
        const d9_run *r = &ix->runs[i];
        if (!r->selected || r->selected->first < 0 || !d9_run_instance(r->name, inst, sizeof inst)) {
            i++;
            continue;
        }
        long long first = r->selected->first, last = r->selected->last;
        size_t end = i + 1;
        for (; end < ix->run_count && ix->runs[end].selected && ix->runs[end].selected->first >= 0 &&
               d9_run_instance(ix->runs[end].name, next, sizeof next) && !strcmp(next, inst);
             end++) {
            if (ix->runs[end].selected->first < first) first = ix->runs[end].selected->first;
            if (ix->runs[end].selected->last > last) last = ix->runs[end].selected->last;
        }
        if (!any)
            fputs("<h2>A time window of one instance</h2><p>Its segments that start before the window ends and "
                  "run into it (times in UTC):</p><table>\n", f);
        any = true;
        fputs("<tr><td>", f);
        d9_html_escape(f, inst);
        fputs("</td><td><form class=\"window\" method=\"get\" action=\"/window\"><input type=\"hidden\" "
              "name=\"instance\" value=\"", f);
        d9_html_escape(f, inst);
        fputs("\">from <input type=\"datetime-local\" step=\"1\" name=\"from\" value=\"", f);
        html_utc_value(f, first);
        fputs("\"> to <input type=\"datetime-local\" step=\"1\" name=\"to\" value=\"", f);
        html_utc_value(f, last);
        fputs("\"> <button type=\"submit\">open window</button></form></td></tr>\n", f);
        i = end;
    }
    if (any) fputs("</table>\n", f);
}

static unsigned serve_runs_page(server *s, struct MHD_Connection *c, enum MHD_Result *ok) {
    char err[256];
    if (d9_trace_index_refresh(&s->index, err, sizeof err) != 0) {
        *ok = send_text(c, 500, err);
        return 500;
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) {
        *ok = MHD_NO;
        return 500;
    }
    fputs("<!doctype html><html><head><meta charset=\"utf-8\"><title>dial9 traces</title>"
          "<link rel=\"icon\" href=\"data:,\">" /* no request for /favicon.ico (a 404 in the console) */
          /* the viewer's colours (viewer/styles.css); the styled list with a filter is / */
          "<style>body{font:13px/1.45 system-ui,sans-serif;margin:0;padding:1em 2em;background:#12151c;"
          "color:#dbe3ee}a{color:#58c4a8}table{border-collapse:collapse;background:#171b23;"
          "border:1px solid #2a3140}td,th{padding:.35em .8em;text-align:left;border-bottom:1px solid #222937}"
          "th{font-size:11px;text-transform:uppercase;color:#aab6c8;background:#0f1217}p{color:#8591a5}"
          "input,button{background:#1c212b;color:#dbe3ee;border:1px solid #333c4d;border-radius:5px}</style>"
          "</head><body><h1>dial9 traces</h1><p><a href=\"/\">the runs, newest first, with a filter</a> &middot; ",
          f);
    if (s->selection.source) { /* dial9 serve --bucket: where from, and the cache */
        d9_html_escape(f, s->selection.source);
        fputs(" (cached in ", f);
        d9_html_escape(f, s->index.root);
        fputs(")", f);
    } else {
        d9_html_escape(f, s->index.root);
    }
    fputs("</p><table><tr><th>run</th><th>segments</th><th>size</th><th>in the cache</th><th>span</th>"
          "<th>wall clock (segment starts, from the keys)</th><th>segments to open</th></tr>\n", f);
    for (size_t i = 0; i < s->index.run_count; i++) {
        const d9_run *r = &s->index.runs[i];
        char *v = d9_viewer_url(r->name, NULL);
        fputs("<tr><td><a href=\"", f);
        d9_html_escape(f, v ? v : "#");
        fputs("\">", f);
        d9_html_escape(f, r->name);
        fputs("</a></td>", f);
        free(v);
        html_time_range(f, r);
        html_wall_clock(f, r);
        fputs("<td>", f);
        for (size_t k = 0; k < r->count; k++) {
            char *sv = d9_viewer_url(r->name, r->segs[k]);
            fputs("<a href=\"", f);
            d9_html_escape(f, sv ? sv : "#");
            fputs("\">", f);
            d9_html_escape(f, r->segs[k]->name);
            fputs("</a> ", f);
            free(sv);
        }
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n", f);
    html_window_forms(f, &s->index);
    fputs("<p><a href=\"/api/index\">/api/index</a> (JSON)</p></body></html>\n", f);
    fclose(f);
    *ok = send_buffer(c, 200, "text/html; charset=utf-8", buf, len);
    return 200;
}

/* ---- /window: a time window of one instance (instance_window.h) ----------------------------- */

static enum MHD_Result send_html(struct MHD_Connection *c, unsigned status, char *buf, size_t len) {
    return send_buffer(c, status, "text/html; charset=utf-8", buf, len);
}

/* The trace URL of the picked segments of run r (its segments the selection names). */
static char *window_trace_url(const d9_run *r, const bool *picked) {
    char *buf = NULL, *enc = d9_percent_encode(r->name);
    size_t len = 0;
    FILE *f = enc ? open_memstream(&buf, &len) : NULL;
    if (!f) {
        free(enc);
        return NULL;
    }
    fprintf(f, "/api/trace?run=%s", enc);
    free(enc);
    for (size_t k = 0; k < r->count; k++) {
        const d9_segment *seg = r->segs[k];
        const d9_sel_seg *ss = d9_serve_selection_seg(r->selected, seg->name);
        if (!ss || !picked[ss - r->selected->segs]) continue;
        if (seg->number >= 0) {
            fprintf(f, "&seg=%lld", seg->number);
        } else {
            char *name = d9_percent_encode(seg->name);
            fprintf(f, "&file=%s", name ? name : "");
            free(name);
        }
    }
    fclose(f);
    return buf;
}

static unsigned serve_window(server *s, struct MHD_Connection *c, enum MHD_Result *ok) {
    const char *inst = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "instance");
    const char *from_s = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "from");
    const char *to_s = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "to");
    long long from, to;
    if (!s->index.selection) {
        *ok = send_text(c, 404, "dial9 serve: windows of an instance come from the S3 keys' times: serve a "
                                "bucket (dial9 serve --bucket B)\n");
        return 404;
    }
    if (!inst || !from_s || !to_s || d9_parse_utc(from_s, &from) != 0 || d9_parse_utc(to_s, &to) != 0 || from > to) {
        *ok = send_text(c, 400, "usage: /window?instance=service=S/instance=I&from=YYYY-MM-DDTHH:MM[:SS]&to=... "
                                "(UTC, from not after to)\n");
        return 400;
    }
    char err[256];
    if (d9_trace_index_refresh(&s->index, err, sizeof err) != 0) {
        *ok = send_text(c, 500, err);
        return 500;
    }
    char *buf = NULL, *only = NULL;
    size_t len = 0, found = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) {
        *ok = MHD_NO;
        return 500;
    }
    fputs("<!doctype html><html><head><meta charset=\"utf-8\"><title>dial9: a window</title></head><body><h1>", f);
    d9_html_escape(f, inst);
    fputs("</h1><p>from ", f);
    html_utc_value(f, from);
    fputs(" to ", f);
    html_utc_value(f, to);
    fputs(" UTC</p><ul>\n", f);
    bool oom = false;
    for (size_t i = 0; i < s->index.run_count && !oom; i++) {
        const d9_run *r = &s->index.runs[i];
        char ri[1024];
        if (!r->selected || !d9_run_instance(r->name, ri, sizeof ri) || strcmp(ri, inst) != 0) continue;
        bool *picked = calloc(r->selected->count ? r->selected->count : 1, sizeof *picked);
        char *t = NULL, *v = NULL;
        if (!picked) {
            oom = true;
            break;
        }
        if (d9_window_segments(r->selected, from, to, picked) > 0) {
            t = window_trace_url(r, picked);
            char *e = t ? d9_percent_encode(t) : NULL;
            if (!e || asprintf(&v, "/?trace=%s", e) < 0) v = NULL;
            free(e);
            oom = !v;
        }
        free(picked);
        free(t);
        if (!v) continue;
        fputs("<li><a href=\"", f);
        d9_html_escape(f, v);
        fputs("\">", f);
        d9_html_escape(f, r->name);
        fputs("</a></li>\n", f);
        if (found++ == 0) only = v;
        else free(v);
    }
    fputs("</ul><p><a href=\"/runs\">all runs</a></p></body></html>\n", f);
    fclose(f);
    if (oom) {
        free(buf);
        free(only);
        *ok = MHD_NO;
        return 500;
    }
    if (found == 0) {
        free(buf);
        char msg[1400];
        snprintf(msg, sizeof msg, "dial9 serve: no segment of %s runs into this window (see /runs for its range)\n",
                 inst);
        *ok = send_text(c, 404, msg);
        return 404;
    }
    if (found == 1) { /* one run: straight to the viewer */
        free(buf);
        struct MHD_Response *r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
        if (r) {
            common_headers(r, "text/plain; charset=utf-8", true);
            MHD_add_response_header(r, MHD_HTTP_HEADER_LOCATION, only);
        }
        free(only);
        *ok = send_response(c, 303, r);
        return 303;
    }
    free(only);
    *ok = send_html(c, 200, buf, len); /* several runs (boots) of the instance: one link each */
    return 200;
}

/* ---- /api/trace ----------------------------------------------------------------------------- */

typedef struct trace_query {
    const char *run;
    int runs;               /* how many run= were given */
    long long *segs;        /* seg= numbers */
    const char **files;     /* file= names */
    size_t nsegs, nfiles;
    bool bad;               /* malformed or too many parameters */
} trace_query;

static enum MHD_Result on_argument(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
    trace_query *q = cls;
    (void)kind;
    if (!value) value = "";
    if (!strcmp(key, "run")) {
        q->run = value;
        q->runs++;
    } else if (!strcmp(key, "seg")) {
        char *end;
        long long n = strtoll(value, &end, 10);
        if (!*value || *end || n < 0 || q->nsegs >= MAX_SELECTED) {
            q->bad = true;
            return MHD_NO;
        }
        long long *p = realloc(q->segs, (q->nsegs + 1) * sizeof *p);
        if (!p) {
            q->bad = true;
            return MHD_NO;
        }
        q->segs = p;
        q->segs[q->nsegs++] = n;
    } else if (!strcmp(key, "file")) {
        const char **p = q->nfiles < MAX_SELECTED ? realloc(q->files, (q->nfiles + 1) * sizeof *p) : NULL;
        if (!p) {
            q->bad = true;
            return MHD_NO;
        }
        q->files = p;
        q->files[q->nfiles++] = value;
    }
    return MHD_YES; /* other parameters are ignored */
}

/* An answer being sent: the concatenation, and its segments kept in the cache (or NULL). */
typedef struct sending {
    d9_concat *cat;
    d9_pins *pins;
} sending;

static ssize_t read_concat(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos; /* called in order */
    ssize_t n = d9_concat_read(((sending *)cls)->cat, buf, max);
    if (n < 0) return MHD_CONTENT_READER_END_WITH_ERROR;
    if (n == 0) return MHD_CONTENT_READER_END_OF_STREAM;
    return n;
}

static void free_concat(void *cls) {
    sending *o = cls;
    d9_concat_free(o->cat);
    d9_unpin_files(o->pins);
    free(o);
}

static bool selected(const trace_query *q, const d9_segment *s) {
    if (!q->nsegs && !q->nfiles) return true;
    for (size_t i = 0; i < q->nsegs; i++)
        if (s->number >= 0 && q->segs[i] == s->number) return true;
    for (size_t i = 0; i < q->nfiles; i++)
        if (!strcmp(q->files[i], s->name)) return true;
    return false;
}

/* 422 with each bad segment's message when the selected segments hold no decoded byte and at
 * least one of them failed to decode; 0 otherwise (an empty or just started run is served). */
static unsigned unreadable_selection(struct MHD_Connection *c, const d9_run *run, const trace_query *q,
                                     enum MHD_Result *ok) {
    uint64_t bytes = 0;
    size_t bad = 0;
    for (size_t k = 0; k < run->count; k++)
        if (selected(q, run->segs[k])) {
            bytes += run->segs[k]->clean_bytes;
            bad += run->segs[k]->status == D9_DEC_ERROR;
        }
    if (bytes || !bad) return 0;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) {
        *ok = MHD_NO;
        return 500;
    }
    fprintf(f, "run %s: no segment asked for is a readable dial9 trace\n", run->name);
    for (size_t k = 0; k < run->count; k++)
        if (selected(q, run->segs[k]) && run->segs[k]->status == D9_DEC_ERROR)
            fprintf(f, "%s: %s\n", run->segs[k]->name, run->segs[k]->message);
    if (fclose(f) != 0) {
        free(text);
        *ok = MHD_NO;
        return 500;
    }
    *ok = send_buffer(c, 422, "text/plain; charset=utf-8", text, len);
    return 422;
}

/* A fetch ended (fetch_jobs.h): the request it suspended is answered now. */
static void on_fetch_done(void *waiter, const char *error, void *cls) {
    (void)cls;
    request *rq = waiter;
    rq->fetch_done = true;
    free(rq->fetch_error);
    rq->fetch_error = error ? strdup(error) : NULL;
    if (!rq->fetch_error && error) rq->fetch_error = strdup("out of memory");
    if (rq->suspended) {
        rq->suspended = false;
        MHD_resume_connection(rq->conn);
    }
}

static unsigned fetch_failed(const server *s, struct MHD_Connection *c, const d9_run *run, const char *why,
                             enum MHD_Result *ok) {
    char *text = NULL;
    if (asprintf(&text, "dial9 serve: fetching run %s from %s failed: %s\n", run->name,
                 s->selection.source ? s->selection.source : "S3", why) < 0) {
        *ok = MHD_NO;
        return 500;
    }
    *ok = send_buffer(c, 502, "text/plain; charset=utf-8", text, strlen(text));
    return 502;
}

/* With a selection, the segments of run asked for must be in the cache: kept there (*pins) and
 * 0 when they are; else the request waits for their fetch (SUSPENDED), or is answered (its
 * status: 502 when the fetch failed). */
static unsigned ensure_cached(server *s, struct MHD_Connection *c, const char *method, request *rq, const d9_run *run,
                              const trace_query *q, d9_pins **pins, enum MHD_Result *ok) {
    if (rq && rq->fetch_error) return fetch_failed(s, c, run, rq->fetch_error, ok);
    const char **rel = calloc(run->count ? run->count : 1, sizeof *rel);
    bool *want = calloc(run->selected->count ? run->selected->count : 1, sizeof *want);
    if (!rel || !want) {
        free(rel);
        free(want);
        *ok = MHD_NO;
        return 500;
    }
    size_t n = 0;
    bool remote = false;
    for (size_t k = 0; k < run->count; k++) {
        if (!selected(q, run->segs[k])) continue;
        const d9_sel_seg *ss = d9_serve_selection_seg(run->selected, run->segs[k]->name);
        if (ss) want[ss - run->selected->segs] = true;
        remote |= run->segs[k]->remote;
        rel[n++] = run->segs[k]->rel;
    }
    /* in the cache: kept there while sent (else evicted since the refresh: fetched again) */
    *pins = remote ? NULL : d9_pin_files(s->index.root_fd, rel, n);
    free(rel);
    if (*pins) {
        free(want);
        return 0;
    }
    if (!rq || rq->fetches >= MAX_FETCHES) {
        free(want);
        return fetch_failed(s, c, run, rq ? "its segments were fetched but left the cache again (evicted by "
                                            "another dial9 that uses it?)" : "out of memory", ok);
    }
    rq->fetches++;
    rq->conn = c;
    rq->fetch_done = false;
    int joined = d9_fetch_jobs_want(&s->jobs, run->selected, want, rq);
    free(want);
    if (joined < 0) {
        *ok = MHD_NO;
        return 500;
    }
    if (rq->fetch_done) /* it could not even start: said at once */
        return fetch_failed(s, c, run, rq->fetch_error ? rq->fetch_error : "out of memory", ok);
    MHD_suspend_connection(c);
    rq->suspended = true;
    log_waiting(s, method, rq->target, run->name, joined == 1);
    return SUSPENDED;
}

static unsigned serve_trace(server *s, struct MHD_Connection *c, const char *method, request *rq,
                            enum MHD_Result *ok) {
    trace_query q = {0};
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, on_argument, &q);
    unsigned status = 200;
    d9_concat_part *parts = NULL;
    d9_pins *pins = NULL;
    char err[256];
    const d9_run *run = NULL;
    if (q.bad || q.runs != 1) {
        status = 400;
        *ok = send_text(c, status, "usage: /api/trace?run=RUN[&seg=N...][&file=NAME...] (one run)\n");
        goto done;
    }
    if (d9_trace_index_refresh(&s->index, err, sizeof err) != 0 || !(run = d9_trace_index_run(&s->index, q.run))) {
        status = 404;
        *ok = send_text(c, status, "no such run (see /api/index)\n");
        goto done;
    }
    parts = calloc(run->count + 1, sizeof *parts);
    if (!parts) {
        *ok = MHD_NO;
        status = 500;
        goto done;
    }
    /* every segment asked for must exist */
    bool missing = false;
    for (size_t i = 0; i < q.nsegs && !missing; i++) {
        bool found = false;
        for (size_t k = 0; k < run->count && !found; k++) found = run->segs[k]->number == q.segs[i];
        missing = !found;
    }
    for (size_t i = 0; i < q.nfiles && !missing; i++) {
        bool found = false;
        for (size_t k = 0; k < run->count && !found; k++) found = !strcmp(run->segs[k]->name, q.files[i]);
        missing = !found;
    }
    if (!missing && run->selected && (status = ensure_cached(s, c, method, rq, run, &q, &pins, ok)) != 0)
        goto done;
    status = 200;
    size_t n = 0;
    for (size_t k = 0; k < run->count && !missing; k++) {
        d9_segment *seg = run->segs[k];
        if (!selected(&q, seg)) continue;
        if (!d9_segment_revalidate(&s->index, seg)) continue; /* gone since the refresh */
        parts[n++] = (d9_concat_part){.rel = seg->rel, .dev = seg->dev, .ino = seg->ino,
                                      .bytes = seg->clean_bytes};
    }
    if (missing || n == 0) {
        status = 404;
        *ok = send_text(c, status, "no such segment in this run (see /api/index)\n");
        goto done;
    }
    /* Nothing readable in what was asked for, and a segment that is not a trace: an empty body
     * would open as a run with no events, so the answer says why instead. */
    status = unreadable_selection(c, run, &q, ok);
    if (status) goto done;
    status = 200;
    sending *out = malloc(sizeof *out);
    d9_concat *cat = out ? d9_concat_new(s->index.root_fd, parts, n) : NULL;
    struct MHD_Response *r = cat ? MHD_create_response_from_callback(d9_concat_total(cat), 256 * 1024,
                                                                   read_concat, out, free_concat)
                                 : NULL;
    if (!r) {
        d9_concat_free(cat);
        free(out);
        *ok = MHD_NO;
        status = 500;
        goto done;
    }
    *out = (sending){.cat = cat, .pins = pins};
    pins = NULL; /* the answer's now: unpinned when it is freed */
    common_headers(r, "application/octet-stream", true);
    *ok = send_response(c, 200, r);
done:
    d9_unpin_files(pins);
    free(parts);
    free(q.segs);
    free(q.files);
    return status;
}

/* ---- connections and requests (conn_guard.h) ---------------------------------------------- */

static uint64_t now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

static socklen_t sockaddr_len(const struct sockaddr *a) {
    return a && a->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

static enum MHD_Result on_accept(void *cls, const struct sockaddr *addr, socklen_t len) {
    server *s = cls;
    return d9_guard_admit(&s->guard, addr, len) ? MHD_YES : MHD_NO;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code) {
    server *s = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *fd = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        const union MHD_ConnectionInfo *ad = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        const struct sockaddr *addr = ad ? ad->client_addr : NULL;
        /* NULL (out of memory): the connection is only under libmicrohttpd's own limits */
        *socket_context = fd ? d9_guard_started(&s->guard, fd->connect_fd, c, addr, sockaddr_len(addr), now_ms())
                             : NULL;
    } else {
        d9_guard_closed(&s->guard, *socket_context);
        *socket_context = NULL;
    }
}

static d9_conn *guarded(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *i = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return i ? i->socket_context : NULL;
}


/* Query parameters in a raw target (pieces between '&' after the '?'). */
static size_t query_params(const char *target) {
    const char *q = strchr(target, '?');
    if (!q) return 0;
    size_t n = 1;
    for (const char *p = q + 1; *p; p++) n += *p == '&';
    return n;
}

/* The request line has arrived (libmicrohttpd's URI log callback, given the target before
 * any decoding): the headers come next. */
static void *on_request_line(void *cls, const char *uri, struct MHD_Connection *c) {
    server *s = cls;
    d9_conn *g = guarded(c);
    d9_guard_request_line(g);
    size_t len = strnlen(uri, MAX_LOGGED_TARGET + 1);
    request *rq = calloc(1, sizeof *rq + len + 1); /* NULL: answered at the first call, then closed */
    if (rq) {
        memcpy(rq->target, uri, len);
        rq->target[len] = '\0';
        rq->has_nul = strstr(uri, "%00") != NULL;
    }
    /* libmicrohttpd 0.9.75 parses the parameters next, and when they do not fit in its pool
       it queues a 431 that it never sends (the client waits for the idle timeout): answer
       here, before it tries */
    if (g && query_params(uri) > MAX_QUERY_PARAMS) {
        d9_guard_reject(g, 431, "dial9 serve: too many query parameters\n");
        log_request(s, "-", rq ? rq->target : "(request)", 431);
    }
    return rq;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **req_cls,
                         enum MHD_RequestTerminationCode toe) {
    (void)cls;
    (void)toe;
    request *rq = *req_cls;
    if (rq) free(rq->fetch_error);
    free(rq);
    *req_cls = NULL;
    d9_guard_request_done(guarded(c), now_ms());
}

/* ---- dispatch --------------------------------------------------------------------------- */

static enum MHD_Result count_host(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
    (void)kind;
    (void)value;
    *(unsigned *)cls += !strcasecmp(key, MHD_HTTP_HEADER_HOST);
    return MHD_YES;
}

/* How many Host headers the request has: libmicrohttpd keeps them all and its lookup returns
 * the first, so a second one would go unchecked. */
static unsigned host_headers(struct MHD_Connection *c) {
    unsigned n = 0;
    MHD_get_connection_values(c, MHD_HEADER_KIND, count_host, &n);
    return n;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **req_cls) {
    server *s = cls;
    (void)version;
    (void)upload_data;
    request *rq = *req_cls;
    d9_conn *g = guarded(c);
    if (g && g->state == D9_CONN_REJECTED) return MHD_NO; /* answered by the guard already */
    d9_guard_request_received(g);
    enum MHD_Result ok;
    unsigned status;
    const char *target = rq ? rq->target : url;
    if (rq && rq->has_nul) {
        log_request(s, method, target, 400);
        return send_text(c, 400, "dial9 serve: a NUL (%00) in the request target\n");
    }
    if (host_headers(c) > 1) { /* RFC 7230 5.4: which one names the site is ambiguous */
        log_request(s, method, target, 400);
        return send_text(c, 400, "dial9 serve: more than one Host header\n");
    }
    const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
    if (!d9_host_allowed(&s->hosts, host)) {
        log_request(s, method, target, 421);
        return send_text(c, 421, "dial9 serve: this server does not answer for that Host name (a page of "
                                 "another site, through DNS rebinding?). Use localhost or the address, or "
                                 "start it with --allow-host NAME.\n");
    }
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
        struct MHD_Response *r = MHD_create_response_from_buffer(
            strlen("only GET and HEAD\n"), (void *)"only GET and HEAD\n", MHD_RESPMEM_PERSISTENT);
        if (r) {
            common_headers(r, "text/plain; charset=utf-8", true);
            MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
        }
        log_request(s, method, target, 405);
        return send_response(c, 405, r);
    }
    const char *length = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    const char *chunked = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
    if ((length && strcmp(length, "0") != 0) || chunked || *upload_data_size) {
        *upload_data_size = 0;
        log_request(s, method, target, 413);
        return send_text(c, 413, "no request bodies here\n");
    }
    if (rq && !rq->seen) {
        rq->seen = true;
        return MHD_YES; /* the answer comes with the next call */
    }
    if (!strcmp(url, "/api/index") || !strcmp(url, "/api/index.json")) status = serve_index(s, c, &ok);
    else if (!strcmp(url, "/api/trace")) status = serve_trace(s, c, method, rq, &ok);
    else if (!strcmp(url, "/runs") || (!s->viewer_root && !strcmp(url, "/")))
        status = serve_runs_page(s, c, &ok); /* without a viewer, / is the plain list */
    else if (!strcmp(url, "/window")) status = serve_window(s, c, &ok);
    else if (!strncmp(url, "/api/", 5)) {
        status = 404;
        ok = send_text(c, 404, "unknown API (see docs/serve.md)\n");
    } else status = serve_file(s, c, url, &ok);
    if (status == SUSPENDED) return MHD_YES; /* answered when its fetch ends */
    log_request(s, method, target, status);
    return ok;
}

/* ---- starting and stopping ------------------------------------------------------------------ */

/* libmicrohttpd's messages may quote what a client sent: escaped like the request log. */
static void mhd_log(void *cls, const char *fmt, va_list ap) {
    (void)cls;
    char *msg = NULL;
    if (vasprintf(&msg, fmt, ap) < 0) return;
    size_t n = strlen(msg);
    bool newline = n && msg[n - 1] == '\n';
    if (newline) msg[n - 1] = '\0';
    flockfile(stderr);
    fputs("dial9 serve: libmicrohttpd: ", stderr);
    d9_log_escape(stderr, msg, 1024);
    fputc('\n', stderr);
    funlockfile(stderr);
    free(msg);
}

static unsigned connection_count(struct MHD_Daemon *d) {
    const union MHD_DaemonInfo *i = MHD_get_daemon_info(d, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    return i ? i->num_connections : 0;
}

/* The event loop: libmicrohttpd in external mode on its epoll fd, so that the guard's
 * deadlines run on this same thread between libmicrohttpd's rounds. SIGINT and SIGTERM stay
 * blocked and arrive on a signalfd polled beside libmicrohttpd's fd: with a signal mask in
 * ppoll instead, a pending signal is never delivered while the other fd is ready, so a server
 * whose epoll fd stayed ready would not stop. Returns the signal that stopped it (0: an error). */
static int run_loop(server *s, struct MHD_Daemon *d, int signal_fd) {
    const union MHD_DaemonInfo *ep = MHD_get_daemon_info(d, MHD_DAEMON_INFO_EPOLL_FD);
    struct pollfd pfd[2] = {{.fd = signal_fd, .events = POLLIN}, {.fd = ep ? ep->epoll_fd : -1, .events = POLLIN}};
    for (;;) {
        struct signalfd_siginfo si;
        while (pfd[0].revents & POLLIN && read(signal_fd, &si, sizeof si) == (ssize_t)sizeof si) {
            if (si.ssi_signo != SIGCHLD) return (int)si.ssi_signo;
            d9_fetch_jobs_reap(&s->jobs); /* a fetch step ended: its requests are resumed */
        }
        /* libmicrohttpd takes its listening socket out of this epoll set at the connection
           limit and puts it back at the start of a round, once below it. A round that closed
           connections of a full server may leave nothing to wake this loop for that next
           round (no connection, no deadline): every later client would wait in the accept
           queue for good. So a round that closed some is followed by another at once. */
        unsigned before = connection_count(d);
        MHD_run(d);
        if (connection_count(d) < before) MHD_run(d);
        uint64_t now = now_ms();
        int64_t next_ms;
        unsigned expired = d9_guard_expire(&s->guard, now, &next_ms);
        if (expired && !s->quiet)
            fprintf(stderr, "dial9 serve: closed %u connection%s whose request did not arrive within %" PRIu64
                            " s (--request-timeout)\n",
                    expired, expired == 1 ? "" : "s", s->guard.lim.request_timeout_ms / 1000);
        uint64_t refused;
        if (!s->quiet && d9_guard_refusals_to_report(&s->guard, now, &refused))
            fprintf(stderr, "dial9 serve: refused %" PRIu64 " connection%s (limit per client address or "
                            "in all, see --max-per-client, --max-connections)\n",
                    refused, refused == 1 ? "" : "s");
        if (!s->quiet && d9_guard_taken_to_report(&s->guard, now, &refused))
            fprintf(stderr, "dial9 serve: closed %" PRIu64 " connection%s still waiting for its request, for new "
                            "clients (all --max-connections slots taken)\n",
                    refused, refused == 1 ? "" : "s");
        if ((s->guard.refused != s->guard.refused_reported || s->guard.taken != s->guard.taken_reported) &&
            (next_ms < 0 || next_ms > 1000))
            next_ms = 1000;
        MHD_UNSIGNED_LONG_LONG mhd_ms;
        if (MHD_get_timeout(d, &mhd_ms) == MHD_YES && (next_ms < 0 || mhd_ms < (uint64_t)next_ms))
            next_ms = (int64_t)(mhd_ms > INT32_MAX ? INT32_MAX : mhd_ms);
        if (poll(pfd, 2, next_ms < 0 ? -1 : (int)next_ms) < 0 && errno != EINTR) {
            fprintf(stderr, "dial9 serve: poll: %s\n", strerror(errno));
            return 0;
        }
    }
}

/* The dial9 next to this server (a build directory), for a --selection given by hand; NULL. */
static const char *dial9_beside(char *buf, size_t len) {
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return NULL;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash) return NULL;
    *slash = '\0';
    return snprintf(buf, len, "%s/dial9", exe) < (int)len && access(buf, X_OK) == 0 ? buf : NULL;
}

int d9_serve_run(const d9_serve_opts *o) {
    server s = {.quiet = o->quiet, .viewer_fd = -1};
    d9_guard_init(&s.guard, o->max_connections, o->max_per_client, (uint64_t)o->request_timeout_s * 1000);
    char err[600];
    if (d9_trace_index_init(&s.index, o->dir, err, sizeof err) != 0) {
        fprintf(stderr, "dial9 serve: %s\n", err);
        return D9_EXIT_USAGE;
    }
    s.index.max_decoded_bytes = (uint64_t)o->max_decoded_mb << 20;
    if (o->selection) {
        if (d9_serve_selection_read(&s.selection, o->selection, err, sizeof err) != 0) {
            fprintf(stderr, "dial9 serve: %s\n", err);
            d9_trace_index_free(&s.index);
            d9_serve_selection_free(&s.selection);
            return D9_EXIT_USAGE;
        }
        s.index.selection = &s.selection;
    }
    char fetcher[PATH_MAX];
    d9_fetch_jobs_init(&s.jobs, o->fetcher ? o->fetcher : dial9_beside(fetcher, sizeof fetcher), s.index.root,
                       s.selection.source ? s.selection.source : "", on_fetch_done, &s);
    if (o->viewer_dir && (!(s.viewer_root = realpath(o->viewer_dir, NULL)) ||
                          (s.viewer_fd = open(s.viewer_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)) {
        fprintf(stderr, "dial9 serve: %s: %s\n", o->viewer_dir, strerror(errno));
        free(s.viewer_root);
        if (s.viewer_fd >= 0) close(s.viewer_fd);
        d9_trace_index_free(&s.index);
        d9_serve_selection_free(&s.selection);
        return D9_EXIT_USAGE;
    }
    const char *bind = o->bind ? o->bind : "127.0.0.1";
    struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_port = htons((uint16_t)o->port)};
    struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)o->port)};
    struct sockaddr *addr;
    /* external mode (run_loop); requests wait for fetches suspended */
    unsigned flags = MHD_USE_EPOLL | MHD_USE_ERROR_LOG | MHD_ALLOW_SUSPEND_RESUME;
    if (inet_pton(AF_INET, bind, &a4.sin_addr) == 1) {
        addr = (struct sockaddr *)&a4;
    } else if (inet_pton(AF_INET6, bind, &a6.sin6_addr) == 1) {
        addr = (struct sockaddr *)&a6;
        flags |= MHD_USE_IPv6;
    } else {
        fprintf(stderr, "dial9 serve: --bind takes a numeric IPv4 or IPv6 address, not '%s'\n", bind);
        free(s.viewer_root);
        if (s.viewer_fd >= 0) close(s.viewer_fd);
        d9_trace_index_free(&s.index);
        d9_serve_selection_free(&s.selection);
        return D9_EXIT_USAGE;
    }
    d9_host_check_init(&s.hosts, bind, o->allow_hosts, o->allow_host_count); /* bind is numeric: checked above */
    if (!d9_address_is_loopback(bind))
        fprintf(stderr, "dial9 serve: warning: %s is not a loopback address: anyone who can reach it on the "
                        "network can read every trace under %s (there is no login)\n", bind, s.index.root);
    /* the index first: a bad directory shows before the server runs */
    if (d9_trace_index_refresh(&s.index, err, sizeof err) != 0) {
        fprintf(stderr, "dial9 serve: %s\n", err);
        free(s.viewer_root);
        if (s.viewer_fd >= 0) close(s.viewer_fd);
        d9_trace_index_free(&s.index);
        d9_serve_selection_free(&s.selection);
        return D9_EXIT_DATA;
    }
    /* SIGINT and SIGTERM: blocked, read from a signalfd by run_loop; SIGCHLD too: a fetch step
       ended */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGCHLD);
    sigprocmask(SIG_BLOCK, &stop, NULL);
    int signal_fd = signalfd(-1, &stop, SFD_CLOEXEC | SFD_NONBLOCK);
    if (signal_fd < 0) {
        fprintf(stderr, "dial9 serve: signalfd: %s\n", strerror(errno));
        sigprocmask(SIG_UNBLOCK, &stop, NULL);
        free(s.viewer_root);
        if (s.viewer_fd >= 0) close(s.viewer_fd);
        d9_trace_index_free(&s.index);
        d9_serve_selection_free(&s.selection);
        return D9_EXIT_DATA;
    }
    signal(SIGPIPE, SIG_IGN);
    struct MHD_Daemon *d = MHD_start_daemon(
        flags, (uint16_t)o->port, on_accept, &s, on_request, &s,
        MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, /* first, so that it takes every message */
        MHD_OPTION_SOCK_ADDR, addr,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)MEMORY_PER_CONNECTION,
        /* the guard keeps to max_connections (conn_guard.h): above it, libmicrohttpd still
           accepts the connections that take a slow one's slot */
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)o->max_connections + D9_GUARD_HEADROOM,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)o->idle_timeout_s,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, &s,
        MHD_OPTION_URI_LOG_CALLBACK, on_request_line, &s,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, &s,
        MHD_OPTION_STRICT_FOR_CLIENT, 1, /* no spaces in the target, HTTP/1.1 needs a Host */
        MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "dial9 serve: cannot listen on %s port %u: %s\n", bind, o->port, strerror(errno));
        close(signal_fd);
        sigprocmask(SIG_UNBLOCK, &stop, NULL);
        free(s.viewer_root);
        if (s.viewer_fd >= 0) close(s.viewer_fd);
        d9_trace_index_free(&s.index);
        d9_serve_selection_free(&s.selection);
        return D9_EXIT_DATA;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    unsigned port = info ? info->port : o->port;
    size_t segs = 0;
    for (size_t i = 0; i < s.index.run_count; i++) segs += s.index.runs[i].count;
    bool v6 = flags & MHD_USE_IPv6;
    printf("dial9 serve: %s: %zu runs, %zu segments; viewer: %s\n", s.index.root, s.index.run_count,
           segs, s.viewer_root ? s.viewer_root : "none");
    printf("dial9 serve: paths resolved with %s beneath the trace and viewer directories\n",
           d9_open_beneath_method());
    printf("dial9 serve: listening on http://%s%s%s:%u/ (the runs; index: /api/index)\n",
           v6 ? "[" : "", bind, v6 ? "]" : "", port);
    fflush(stdout);
    int stopped_by = run_loop(&s, d, signal_fd);
    if (!o->quiet && stopped_by) fprintf(stderr, "dial9 serve: stopping (%s)\n", strsignal(stopped_by));
    /* no connection may stay suspended when libmicrohttpd stops: the waiting ones are resumed
       and told, and a running fetch step is stopped */
    d9_fetch_jobs_stop(&s.jobs, "dial9 serve is stopping");
    MHD_run(d);
    MHD_stop_daemon(d);
    /* SIGINT and SIGTERM stay blocked until the process ends: supervisors send a stop more than
     * once (timeout(1) and systemd signal the server and then its process group), and a copy that
     * arrived after run_loop read the first would kill it once unblocked (status 143, not 0).
     * Nothing here waits: libmicrohttpd runs no thread of its own in external mode. */
    close(signal_fd);
    free(s.viewer_root);
    if (s.viewer_fd >= 0) close(s.viewer_fd);
    d9_trace_index_free(&s.index);
    d9_serve_selection_free(&s.selection);
    return stopped_by ? D9_EXIT_OK : D9_EXIT_DATA; /* 0: the event loop failed (said why) */
}
