/* Statistics -> report: distributions from histograms, top lists in order, stacks expanded
 * into symbolized frames (symbols usually arrive at the end of a file, so this happens only
 * now), samples grouped by blocking / leaf function, the live-task series, data sources. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/frame_class.h"
#include "analysis/internal.h"

#define MAX_FRAMES 512 /* frames per expanded stack */

void d9a_dist_from(d9a_dist *d, const d9a_hist *h) {
    d->count = h->count;
    d->total = h->sum;
    d->min = h->min;
    d->max = h->max;
    d->p50 = d9a_hist_quantile(h, 0.50);
    d->p90 = d9a_hist_quantile(h, 0.90);
    d->p99 = d9a_hist_quantile(h, 0.99);
}

static void *alloc_array(d9a_analysis *a, size_t n, size_t size) {
    if (n == 0) n = 1;
    void *p = d9_arena_alloc(&a->report_arena, n * size, 16);
    if (!p) {
        a->failed = true;
        return NULL;
    }
    memset(p, 0, n * size);
    return p;
}

static const char *str(const d9a_analysis *a, uint32_t id) {
    const char *s = d9a_strings_get(&a->strings, id);
    return s ? s : "<unknown>";
}

static const char *hex_label(d9a_analysis *a, uint64_t addr) {
    char buf[32];
    int n = snprintf(buf, sizeof buf, "0x%" PRIx64, addr);
    uint32_t id = d9a_strings_intern(&a->strings, buf, (size_t)n);
    if (id == D9A_NO_ID) {
        a->failed = true;
        return "?";
    }
    return str(a, id);
}

static const char *frame_label(d9a_analysis *a, const d9a_frame *f) {
    return f->symbol ? f->symbol : hex_label(a, f->addr);
}

/* What an off-CPU stack says: the function the thread waited in, past the scheduler's own
 * frames; when it was preempted, where it was running (the first user-space frame). */
static void read_offcpu(d9a_analysis *a, d9a_stack_view *v) {
    uint32_t i = 0;
    while (i < v->nframes && d9a_is_scheduler_frame(v->frames[i].symbol)) {
        if (d9a_is_preemption_frame(v->frames[i].symbol)) v->preempted = true;
        i++;
    }
    if (i < v->nframes && d9a_is_preemption_frame(v->frames[i].symbol)) v->preempted = true;
    if (v->preempted) {
        uint32_t u = i;
        while (u < v->nframes && v->frames[u].kernel) u++;
        if (u < v->nframes) i = u;
    }
    if (i >= v->nframes) i = v->nframes ? v->nframes - 1 : 0;
    v->function = v->nframes ? frame_label(a, &v->frames[i]) : "<no stack>";
}

/* The system call a kernel stack is in: the handler (__x64_sys_socket) just leafward of the
 * syscall entry (do_syscall_64). */
static const char *find_syscall(d9a_analysis *a, const d9a_frame *f, uint32_t n) {
    static const char *const entry[] = {"do_syscall_64", "do_syscall_x64", "entry_SYSCALL_64",
                                        "do_fast_syscall_32", NULL};
    static const char *const handler[] = {"__x64_sys_", "__se_sys_", "__do_sys_", "__ia32_sys_",
                                          "__x32_sys_", NULL};
    for (uint32_t i = 1; i < n; i++) {
        if (!f[i].symbol) continue;
        bool is_entry = false;
        for (int e = 0; entry[e]; e++)
            if (!strncmp(f[i].symbol, entry[e], strlen(entry[e]))) is_entry = true;
        if (!is_entry) continue;
        for (uint32_t j = i; j-- > 0;) {
            if (!f[j].symbol) continue;
            for (int h = 0; handler[h]; h++) {
                size_t len = strlen(handler[h]);
                if (strncmp(f[j].symbol, handler[h], len) != 0) continue;
                const char *name = f[j].symbol + len;
                uint32_t id = d9a_strings_intern(&a->strings, name, strcspn(name, "."));
                return id == D9A_NO_ID ? NULL : str(a, id);
            }
        }
        return NULL;
    }
    return NULL;
}

static const d9a_stack_view *view(d9a_analysis *a, uint32_t id, bool offcpu) {
    if (id >= a->stacks.count) return NULL;
    if (!a->views) {
        a->views = calloc(a->stacks.count, sizeof *a->views);
        if (!a->views) {
            a->failed = true;
            return NULL;
        }
    }
    if (a->views[id]) return a->views[id];
    uint32_t naddrs;
    const uint64_t *addrs = d9a_stacks_get(&a->stacks, id, &naddrs);
    d9a_frame tmp[MAX_FRAMES];
    uint32_t n = 0;
    for (uint32_t i = 0; i < naddrs && n < MAX_FRAMES; i++)
        n += d9a_symtab_expand(&a->symtab, addrs[i], tmp + n, MAX_FRAMES - n);
    d9a_stack_view *v = alloc_array(a, 1, sizeof *v);
    d9a_frame *frames = alloc_array(a, n, sizeof *frames);
    if (!v || !frames) return NULL;
    memcpy(frames, tmp, n * sizeof *frames);
    v->id = id;
    v->frames = frames;
    v->nframes = n;
    v->naddrs = naddrs;
    for (uint32_t i = 0; i < n; i++) {
        if (frames[i].symbol) v->symbolized = true;
        if (!v->app_frame && d9a_is_app_frame(&frames[i])) v->app_frame = frames[i].symbol;
    }
    v->syscall = find_syscall(a, frames, n);
    v->truncated = naddrs > 0 && d9_u64_set_has(&a->truncated_stacks, id);
    if (offcpu) read_offcpu(a, v);
    else v->function = n ? frame_label(a, &frames[0]) : "<no stack>";
    a->views[id] = v;
    return v;
}

/* ---------------------------------------------------------------- heap profile */

static int by_alloc_desc(const void *x, const void *y, void *ctx) {
    const d9m_heap_site *s = ctx;
    double a = s[*(const size_t *)x].alloc_bytes, b = s[*(const size_t *)y].alloc_bytes;
    return a < b ? 1 : a > b ? -1 : 0;
}
static int by_inuse_desc(const void *x, const void *y, void *ctx) {
    const d9m_heap_site *s = ctx;
    double a = s[*(const size_t *)x].inuse_bytes, b = s[*(const size_t *)y].inuse_bytes;
    return a < b ? 1 : a > b ? -1 : 0;
}

/* The top n sites of `order` (those `keep` accepts) as report entries. */
static d9a_heap_site_report *heap_top(d9a_analysis *a, size_t *order, int (*cmp)(const void *, const void *, void *),
                                      bool leaks_only, bool inuse_only, size_t *count) {
    const d9m_heap *h = &a->heap;
    qsort_r(order, h->nsites, sizeof *order, cmp, h->sites);
    size_t n = 0, top = a->opt.top_n ? a->opt.top_n : 10;
    d9a_heap_site_report *out = alloc_array(a, top, sizeof *out);
    if (!out) return NULL;
    for (size_t i = 0; i < h->nsites && n < top; i++) {
        const d9m_heap_site *s = &h->sites[order[i]];
        if (inuse_only && s->inuse_bytes <= 0) continue;
        if (leaks_only && (s->inuse_bytes <= 0 || s->frees)) continue;
        d9a_heap_site_report *o = &out[n++];
        o->stack = view(a, s->stack, false);
        o->alloc_bytes = s->alloc_bytes;
        o->alloc_count = s->alloc_count;
        o->inuse_bytes = s->inuse_bytes;
        o->inuse_count = s->inuse_count;
        o->peak_inuse_bytes = s->peak_inuse_bytes;
        o->growth_bytes = s->inuse_bytes - s->inuse_mid_bytes;
        o->samples = s->samples;
        o->frees = s->frees;
    }
    *count = n;
    return out;
}

static int build_heap(d9a_analysis *a, d9a_report *r) {
    const d9m_heap *h = &a->heap;
    d9a_heap_report *x = &r->heap;
    if (!h->samples) return 0;
    x->present = true;
    x->rate = h->rate ? h->rate : 512 * 1024;
    x->samples = h->samples;
    x->frees = h->frees;
    x->frees_unmatched = h->frees_unmatched;
    x->growth_known = h->mid_taken;
    for (size_t i = 0; i < h->nsites; i++) {
        x->alloc_bytes += h->sites[i].alloc_bytes;
        x->inuse_bytes += h->sites[i].inuse_bytes;
    }
    size_t *order = malloc(h->nsites * sizeof *order);
    if (!order) return -1;
    for (size_t i = 0; i < h->nsites; i++) order[i] = i;
    x->by_alloc = heap_top(a, order, by_alloc_desc, false, false, &x->nby_alloc);
    x->by_inuse = x->by_alloc ? heap_top(a, order, by_inuse_desc, false, true, &x->nby_inuse) : NULL;
    x->leaks = x->by_inuse ? heap_top(a, order, by_inuse_desc, true, false, &x->nleaks) : NULL;
    free(order);
    return x->leaks ? 0 : -1;
}

/* ---- sample groups ---- */

typedef struct group_acc {
    const char *key;        /* interned label, or NULL (a group of its own) */
    d9a_sample_group g;
    d9a_sample_group best;  /* the stack group that represents it */
} group_acc;

typedef struct group_set {
    group_acc *acc;
    size_t n;
} group_set;

/* The stack that represents a group: the most time inside polls, then samples. */
static bool better_example(const d9a_sample_group *g, const d9a_sample_group *cur) {
    if (g->in_poll_ns != cur->in_poll_ns) return g->in_poll_ns > cur->in_poll_ns;
    if (g->in_poll != cur->in_poll) return g->in_poll > cur->in_poll;
    return g->samples > cur->samples;
}

static int cmp_group(const void *x, const void *y) {
    const d9a_sample_group *a = x, *b = y;
    if (a->in_poll_ns != b->in_poll_ns) return a->in_poll_ns > b->in_poll_ns ? -1 : 1;
    if (a->in_poll != b->in_poll) return a->in_poll > b->in_poll ? -1 : 1;
    if (a->samples != b->samples) return a->samples > b->samples ? -1 : 1;
    return strcmp(a->function ? a->function : "", b->function ? b->function : "");
}

/* Add one stack's group to the group of `key` (labels are interned: pointers compare). The
 * group takes function, app frame, syscall and example from its best stack. */
static void accumulate(group_set *s, const char *key, const d9a_sample_group *g) {
    size_t f = 0;
    while (f < s->n && s->acc[f].key != key) f++;
    if (f == s->n) {
        s->acc[s->n].key = key;
        s->acc[s->n].g = (d9a_sample_group){0};
        s->n++;
    }
    d9a_sample_group *fg = &s->acc[f].g;
    fg->samples += g->samples;
    fg->in_poll += g->in_poll;
    fg->parked += g->parked;
    fg->other += g->other;
    fg->in_poll_ns += g->in_poll_ns;
    if (g->preempted) fg->preempted = true;
    if (!fg->stack || better_example(g, &s->acc[f].best)) {
        s->acc[f].best = *g;
        fg->function = g->function;
        fg->stack = g->stack;
        fg->app_frame = g->app_frame;
        fg->syscall = g->syscall;
        fg->example_location = g->example_location;
    }
}

/* Sort groups and keep the top_n in the report's memory. */
static int keep_top(d9a_analysis *a, d9a_sample_group *g, size_t n, const d9a_sample_group **out,
                    size_t *nout) {
    qsort(g, n, sizeof *g, cmp_group);
    size_t keep = n < a->opt.top_n ? n : a->opt.top_n;
    d9a_sample_group *o = alloc_array(a, keep, sizeof *o);
    if (!o) return -1;
    memcpy(o, g, keep * sizeof *o);
    *out = o;
    *nout = keep;
    return 0;
}

static int keep_set(d9a_analysis *a, group_set *s, const d9a_sample_group **out, size_t *nout) {
    d9a_sample_group *g = calloc(s->n ? s->n : 1, sizeof *g);
    if (!g) return -1;
    for (size_t i = 0; i < s->n; i++) g[i] = s->acc[i].g;
    int rc = keep_top(a, g, s->n, out, nout);
    free(g);
    return rc;
}

/* Group the stacks of one sample source by stack, by function and (off-CPU) by system call;
 * keep the top_n of each. */
static int build_groups(d9a_analysis *a, bool offcpu, d9a_report *r) {
    size_t nstacks = 0;
    for (uint32_t i = 0; i < a->stk_cap && i < a->stacks.count; i++)
        if (offcpu ? a->stk[i].off : a->stk[i].cpu) nstacks++;
    size_t cap = nstacks ? nstacks : 1;
    d9a_sample_group *all = calloc(cap, sizeof *all);
    group_set fns = {calloc(cap, sizeof(group_acc)), 0};
    group_set calls = {calloc(cap, sizeof(group_acc)), 0};
    int rc = -1;
    if (!all || !fns.acc || !calls.acc) goto out;
    size_t n = 0;
    for (uint32_t i = 0; i < a->stk_cap && i < a->stacks.count; i++) {
        const stack_stats *s = &a->stk[i];
        uint64_t total = offcpu ? s->off : s->cpu;
        if (!total) continue;
        const d9a_stack_view *v = view(a, i, offcpu);
        if (!v) goto out;
        d9a_sample_group g = {.function = v->function, .stack = v, .app_frame = v->app_frame,
                              .syscall = v->syscall, .preempted = v->preempted,
                              .samples = total};
        g.in_poll = offcpu ? s->off_in_poll : s->cpu_in_poll;
        g.parked = offcpu ? s->off_parked : s->cpu_parked;
        g.other = total - g.in_poll - g.parked;
        g.in_poll_ns = offcpu ? s->off_in_poll_ns : 0;
        g.example_location = s->example_loc != D9A_NO_ID ? str(a, s->example_loc) : NULL;
        all[n++] = g;
        if (offcpu && !g.preempted) {
            r->blocked_in_poll += g.in_poll;
            r->blocked_in_poll_ns += g.in_poll_ns;
        }
        accumulate(&fns, g.function, &g);
        if (offcpu) accumulate(&calls, g.syscall, &g);
    }
    if (offcpu) {
        if (keep_top(a, all, n, &r->blocking_stacks, &r->nblocking_stacks) != 0 ||
            keep_set(a, &fns, &r->blocking_functions, &r->nblocking_functions) != 0 ||
            keep_set(a, &calls, &r->blocking_syscalls, &r->nblocking_syscalls) != 0)
            goto out;
    } else {
        if (keep_top(a, all, n, &r->cpu_stacks, &r->ncpu_stacks) != 0 ||
            keep_set(a, &fns, &r->cpu_functions, &r->ncpu_functions) != 0)
            goto out;
    }
    rc = 0;
out:
    free(all);
    free(fns.acc);
    free(calls.acc);
    return rc == 0 && !a->failed ? 0 : -1;
}

/* ---- lock contention ---- */

static int cmp_lock_wait(const void *x, const void *y) {
    const d9a_lock_wait *a = x, *b = y;
    if (a->total_ns != b->total_ns) return a->total_ns > b->total_ns ? -1 : 1;
    if (a->samples != b->samples) return a->samples > b->samples ? -1 : 1;
    return strcmp(a->app_frame ? a->app_frame : "", b->app_frame ? b->app_frame : "");
}

static bool same_name(const char *a, const char *b) { return a == b || (a && b && !strcmp(a, b)); }

/* Off-CPU stacks inside polls that wait in a lock function, grouped by the application
 * function that took the lock (the stack's app frame). */
static int build_lock_waits(d9a_analysis *a, d9a_report *r) {
    size_t cap = 0;
    for (uint32_t i = 0; i < a->stk_cap && i < a->stacks.count; i++) cap += a->stk[i].off_in_poll > 0;
    d9a_lock_wait *acc = calloc(cap ? cap : 1, sizeof *acc);
    uint64_t *best = calloc(cap ? cap : 1, sizeof *best); /* total of the group's example stack */
    if (!acc || !best) {
        free(acc);
        free(best);
        return -1;
    }
    size_t n = 0;
    for (uint32_t i = 0; i < a->stk_cap && i < a->stacks.count; i++) {
        const stack_stats *s = &a->stk[i];
        if (!s->off_in_poll) continue;
        const d9a_stack_view *v = view(a, i, true);
        if (!v) break;
        if (v->preempted) continue;
        const char *lock = NULL;
        for (uint32_t k = 0; k < v->nframes; k++) {
            const d9a_frame *f = &v->frames[k];
            if (f->kernel) continue;
            if (d9a_is_lock_frame(f->symbol)) lock = f->symbol; /* the outermost one */
            else if (lock || d9a_is_app_frame(f)) break;
        }
        if (!lock) continue;
        size_t g = 0;
        while (g < n && !same_name(acc[g].app_frame, v->app_frame)) g++;
        if (g == n) {
            acc[n].app_frame = v->app_frame;
            n++;
        }
        d9a_lock_wait *w = &acc[g];
        w->samples += s->off_in_poll;
        w->total_ns += s->off_in_poll_ns;
        if (s->off_in_poll_max_ns > w->worst_ns) w->worst_ns = s->off_in_poll_max_ns;
        if (!w->stack || s->off_in_poll_ns > best[g]) {
            best[g] = s->off_in_poll_ns;
            w->stack = v;
            w->lock_function = lock;
            w->example_location = s->example_loc != D9A_NO_ID ? str(a, s->example_loc) : NULL;
        }
    }
    free(best);
    qsort(acc, n, sizeof *acc, cmp_lock_wait);
    size_t keep = n < a->opt.top_n ? n : a->opt.top_n;
    d9a_lock_wait *out = alloc_array(a, keep ? keep : 1, sizeof *out);
    if (out) memcpy(out, acc, keep * sizeof *out);
    free(acc);
    if (!out) return -1;
    r->lock_waits = out;
    r->nlock_waits = keep;
    return a->failed ? -1 : 0;
}

/* ---- sources ---- */

static int build_sources(d9a_analysis *a, d9a_report *r) {
    const struct {
        const char *name;
        uint64_t events;
        const char *keys[3]; /* metadata source.<name> aliases */
    } known[] = {
        {"polls", r->counts.poll_starts + r->counts.poll_ends, {"source.polls"}},
        {"parks", r->counts.parks + r->counts.unparks, {"source.parks"}},
        {"wakes", r->counts.wakes, {"source.wakes"}},
        {"tasks", r->counts.spawns + r->counts.terminates, {"source.tasks"}},
        {"schedstat", a->schedstat_seen, {"source.schedstat"}},
        {"cpu_profile", r->counts.cpu_samples, {"source.cpu_profile"}},
        {"context_switches", r->counts.offcpu_samples,
         {"source.context_switches", "source.schedule_profile"}},
        {"sched_switch", r->counts.sched_switches, {"source.sched_switch"}},
        {"task_dumps", r->counts.task_dumps, {"source.task_dumps", "source.task_dump"}},
        {"queue_samples", r->counts.queue_samples, {"source.queue_samples"}},
        {"symbols", r->counts.symbols, {"source.symbols", "source.symbolize"}},
        {"memory_maps", r->counts.memory_maps, {"source.memory_map", "source.memory_maps"}},
    };
    size_t nk = sizeof known / sizeof known[0];
    size_t extra = 0;
    for (size_t i = 0; i < a->nmeta; i++)
        if (!strncmp(str(a, a->meta[i].key), "source.", 7)) extra++;
    d9a_source *s = alloc_array(a, nk + extra, sizeof *s);
    if (!s) return -1;
    size_t n = 0;
    bool *used = calloc(a->nmeta + 1, sizeof *used);
    if (!used) return -1;
    for (size_t k = 0; k < nk; k++) {
        d9a_source *x = &s[n++];
        x->name = known[k].name;
        x->events = known[k].events;
        for (int j = 0; j < 3 && known[k].keys[j] && !x->declared; j++) {
            for (size_t i = 0; i < a->nmeta; i++)
                if (!strcmp(str(a, a->meta[i].key), known[k].keys[j])) {
                    x->declared = str(a, a->meta[i].last);
                    used[i] = true;
                }
        }
        x->active = x->events > 0 || (x->declared && !strncmp(x->declared, "active", 6));
    }
    for (size_t i = 0; i < a->nmeta; i++) {
        const char *k = str(a, a->meta[i].key);
        if (used[i] || strncmp(k, "source.", 7) != 0) continue;
        d9a_source *x = &s[n++];
        x->name = k + 7;
        x->declared = str(a, a->meta[i].last);
        x->active = !strncmp(x->declared, "active", 6);
    }
    free(used);
    r->sources = s;
    r->nsources = n;
    return 0;
}

static int build_coverage(d9a_analysis *a, d9a_report *r) {
    d9a_coverage_source *s;
    d9a_coverage_period *p;
    size_t ns, np;
    if (d9a_coverage_report(&a->coverage, r->start_ns, r->end_ns, &s, &ns, &p, &np) != 0) return -1;
    d9a_coverage_source *rs = alloc_array(a, ns, sizeof *rs);
    d9a_coverage_period *rp = alloc_array(a, np, sizeof *rp);
    if ((ns && !rs) || (np && !rp)) {
        free(s);
        free(p);
        return -1;
    }
    if (ns) memcpy(rs, s, ns * sizeof *s);
    if (np) memcpy(rp, p, np * sizeof *p);
    free(s);
    free(p);
    r->coverage = rs;
    r->ncoverage = ns;
    r->coverage_periods = rp;
    r->ncoverage_periods = np;
    return 0;
}

/* ---- the rest ---- */

static int cmp_worker(const void *x, const void *y) {
    const d9a_worker_report *a = x, *b = y;
    return a->id < b->id ? -1 : a->id > b->id;
}

static int cmp_location(const void *x, const void *y) {
    const d9a_location_report *a = x, *b = y;
    if (a->polls.total != b->polls.total) return a->polls.total > b->polls.total ? -1 : 1;
    if (a->spawned != b->spawned) return a->spawned > b->spawned ? -1 : 1;
    return strcmp(a->location, b->location);
}

static int cmp_poll_group(const void *x, const void *y) {
    const d9a_poll_sample_group *a = x, *b = y;
    if (a->est_ns != b->est_ns) return a->est_ns > b->est_ns ? -1 : 1;
    if (a->count != b->count) return a->count > b->count ? -1 : 1;
    return a->source - b->source;
}

static double pct(uint64_t part, uint64_t whole) {
    return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

static int build_live_series(d9a_analysis *a, d9a_report *r) {
    r->live_at_end = a->live > 0 ? (uint64_t)a->live : 0;
    if (a->spawned == 0 && a->terminated == 0) return 0;
    uint64_t end = a->live_last_ts > a->live_origin ? a->live_last_ts - a->live_origin : 0;
    if (r->end_ns > a->live_origin && r->end_ns - a->live_origin > end) end = r->end_ns - a->live_origin;
    size_t nslots = (size_t)(end / a->live_slot_ns) + 1;
    if (nslots > D9A_LIVE_SLOTS) nslots = D9A_LIVE_SLOTS;
    enum { POINTS = 48 };
    size_t step = (nslots + POINTS - 1) / POINTS;
    if (step == 0) step = 1;
    size_t npoints = (nslots + step - 1) / step;
    d9a_live_point *p = alloc_array(a, npoints, sizeof *p);
    if (!p) return -1;
    int64_t live = 0, live_mid = 0;
    size_t k = 0;
    for (size_t i = 0; i < nslots; i++) {
        live += a->live_delta[i];
        if (i == nslots / 2) live_mid = live;
        if ((i + 1) % step == 0 || i + 1 == nslots) {
            uint64_t t = (uint64_t)(i + 1) * a->live_slot_ns;
            p[k++] = (d9a_live_point){t < end ? t : end, live};
        }
    }
    r->live_series = p;
    r->nlive_series = k;
    /* growth over the second half: a leak keeps growing, a burst levels off */
    double half_s = (double)(nslots - nslots / 2) * (double)a->live_slot_ns / 1e9;
    r->live_growth_per_s = half_s > 0 ? (double)(live - live_mid) / half_s : 0;
    return 0;
}

int d9a_build_report(d9a_analysis *a) {
    d9a_report *r = &a->report;
    memset(r, 0, sizeof *r);
    /* summary */
    r->trace_first_ns = a->have_first ? a->min_ts : 0;
    r->trace_last_ns = a->have_first ? a->max_ts : 0;
    r->windowed = a->opt.from.set || a->opt.to.set;
    r->start_ns = r->trace_first_ns;
    r->end_ns = r->trace_last_ns;
    if (a->opt.from.set && a->win.from > r->start_ns) r->start_ns = a->win.from;
    if (a->opt.to.set && a->win.to < r->end_ns) r->end_ns = a->win.to;
    if (r->windowed && a->have_first &&
        d9_time_window_check(&a->win, a->min_ts, a->max_ts, a->window_error,
                             sizeof a->window_error) != 0)
        r->window_error = a->window_error;
    r->duration_ns = r->end_ns > r->start_ns ? r->end_ns - r->start_ns : 0;
    r->events = a->events;
    r->counts.poll_starts = a->kind_counts[D9_SCH_POLL_START];
    r->counts.poll_ends = a->kind_counts[D9_SCH_POLL_END];
    r->counts.parks = a->kind_counts[D9_SCH_WORKER_PARK];
    r->counts.unparks = a->kind_counts[D9_SCH_WORKER_UNPARK];
    r->counts.wakes = a->kind_counts[D9_SCH_WAKE];
    r->counts.spawns = a->kind_counts[D9_SCH_TASK_SPAWN];
    r->counts.terminates = a->kind_counts[D9_SCH_TASK_TERMINATE];
    r->counts.cpu_samples = a->cpu_samples;
    r->counts.offcpu_samples = a->offcpu_samples;
    r->counts.sched_switches = a->kind_counts[D9_SCH_SCHED_SWITCH];
    r->counts.task_dumps = a->kind_counts[D9_SCH_TASK_DUMP];
    r->counts.queue_samples = a->kind_counts[D9_SCH_QUEUE_SAMPLE];
    r->counts.symbols = a->kind_counts[D9_SCH_SYMBOL_TABLE_ENTRY];
    r->counts.drop_events = a->kind_counts[D9_SCH_DROPPED_EVENTS];
    r->counts.worker_registrations = a->kind_counts[D9_SCH_WORKER_REGISTERED];
    r->counts.memory_maps = a->kind_counts[D9_SCH_MEMORY_MAP];
    r->counts.other = a->kind_counts[D9_ROLE_OTHER] + a->kind_counts[D9_SCH_SEGMENT_METADATA] +
                      a->kind_counts[D9_SCH_CLOCK_SYNC] + a->kind_counts[D9_SCH_STACK_ORIGIN] +
                      a->kind_counts[D9_SCH_TASK_OBJECT] + a->kind_counts[D9_SCH_SPAN_ENTER] +
                      a->kind_counts[D9_SCH_SPAN_EXIT] + a->kind_counts[D9_SCH_POLL_CPU] +
                      a->kind_counts[D9_SCH_IO_URING_RING];
    r->dropped = a->dropped;
    d9a_named_count *drops = alloc_array(a, a->ndrop, sizeof *drops);
    if (!drops) return -1;
    for (size_t i = 0; i < a->ndrop; i++) drops[i] = (d9a_named_count){str(a, a->drop_reason[i]), a->drop_count[i]};
    r->drops_by_reason = drops;
    r->ndrops = a->ndrop;
    d9a_kv *meta = alloc_array(a, a->nmeta, sizeof *meta);
    d9a_kv_change *changed = alloc_array(a, a->nmeta, sizeof *changed);
    if (!meta || !changed) return -1;
    size_t nchanged = 0;
    for (size_t i = 0; i < a->nmeta; i++) {
        const struct d9a_meta_entry *m = &a->meta[i];
        meta[i] = (d9a_kv){str(a, m->key), str(a, m->last)};
        if (m->first != m->last)
            changed[nchanged++] = (d9a_kv_change){str(a, m->key), m->first == D9A_NO_ID ? NULL : str(a, m->first),
                                                  str(a, m->last)};
    }
    r->metadata = meta;
    r->nmetadata = a->nmeta;
    r->metadata_changed = changed;
    r->nmetadata_changed = nchanged;
    r->have_clock_sync = a->have_clock;
    r->clock_mono_ns = a->clock_mono;
    r->clock_realtime_ns = a->clock_real;
    r->unmatched_poll_starts = a->unmatched_starts;
    r->unmatched_poll_ends = a->unmatched_ends;
    for (size_t i = 0; i < a->nwlist; i++)
        if (a->wlist[i]->pair.in_poll) r->unmatched_poll_starts++; /* still open at the end */
    r->late_records = a->late;
    r->unresolved_refs = a->unresolved;
    r->symbols_present = a->symtab.t.count > 0;
    if (build_sources(a, r) != 0) return -1;
    if (build_coverage(a, r) != 0) return -1;
    r->poll_cpu = a->pcov;
    d9a_upload_loss_total(&a->upload_loss, &r->upload_lost);
    if (build_heap(a, r) != 0) return -1;

    /* workers */
    d9a_worker_report *ws = alloc_array(a, a->nwlist, sizeof *ws);
    if (!ws) return -1;
    for (size_t i = 0; i < a->nwlist; i++) {
        const worker *w = a->wlist[i];
        d9a_worker_report *x = &ws[i];
        x->id = w->id;
        x->runtime = w->runtime != D9A_NO_ID ? str(a, w->runtime) : NULL;
        x->tid = w->tid;
        x->polls = w->polls;
        x->poll_ns = w->poll_ns;
        x->parks = w->parks;
        x->park_ns = w->park_ns;
        x->busy_pct = pct(w->poll_ns, r->duration_ns);
        x->parked_pct = pct(w->park_ns, r->duration_ns);
        x->busy_periods = w->busy_periods;
        x->busy_wall_ns = w->busy_wall_ns;
        x->busy_cpu_ns = w->busy_cpu_ns;
        x->cpu_ratio = w->busy_wall_ns ? (double)w->busy_cpu_ns / (double)w->busy_wall_ns : -1;
        d9a_dist_from(&x->sched_wait, &w->sched_wait);
        x->cpu_samples_in_poll = w->cpu_in_poll;
        x->offcpu_samples_in_poll = w->off_in_poll;
        x->offcpu_in_poll_ns = w->offcpu_in_poll_ns;
        x->offcpu_in_poll_est_ns = w->off_est_ns;
        x->preempted_in_poll_ns = w->preempted_in_poll_ns;
        x->polls_with_queue = w->polls_with_queue;
        x->polls_with_queue_while_parked = w->polls_with_queue_while_parked;
        x->max_local_queue = w->max_lq;
    }
    qsort(ws, a->nwlist, sizeof *ws, cmp_worker);
    r->workers = ws;
    r->nworkers = a->nwlist;

    /* polls */
    d9a_dist_from(&r->polls, &a->polls);
    r->polls_over_warn = a->polls_over_warn;
    r->polls_over_crit = a->polls_over_crit;
    size_t *order = alloc_array(a, a->opt.top_n, sizeof *order);
    if (!order) return -1;
    d9a_topn_order(&a->long_polls, order);
    d9a_long_poll *lp = alloc_array(a, a->long_polls.n, sizeof *lp);
    if (!lp) return -1;
    for (size_t i = 0; i < a->long_polls.n; i++) {
        const long_poll_entry *e = d9a_topn_at(&a->long_polls, order[i]);
        d9a_long_poll *x = &lp[i];
        x->start_ns = e->start;
        x->duration_ns = e->dur;
        x->worker = e->worker;
        x->task = e->task;
        x->location = str(a, e->loc);
        x->local_queue = e->lq;
        x->cpu_samples = e->cpu;
        x->offcpu_samples = e->off;
        x->offcpu_ns = e->offcpu_ns;
        x->preempted_ns = e->preempted_ns;
        d9a_poll_sample_group *g = alloc_array(a, e->ngroups, sizeof *g);
        if (!g) return -1;
        for (uint32_t k = 0; k < e->ngroups; k++) {
            g[k].stack = view(a, e->groups[k].stack, e->groups[k].source != 0);
            g[k].source = e->groups[k].source;
            g[k].count = e->groups[k].count;
            g[k].est_ns = e->groups[k].est_ns;
        }
        qsort(g, e->ngroups, sizeof *g, cmp_poll_group);
        x->groups = g;
        x->ngroups = e->ngroups;
        x->parts = e->parts;
        if (e->nat_stk && d9a_attr_classify(a, &x->parts, a->lp_stk[order[i]], e->nat_stk) != 0) return -1;
    }
    r->long_polls = lp;
    r->nlong_polls = a->long_polls.n;

    /* kernel scheduling delays */
    d9a_dist_from(&r->sched_wait, &a->sched_wait);
    r->sched_over_warn = a->sched_over_warn;
    r->sched_over_crit = a->sched_over_crit;
    d9a_topn_order(&a->sched_top, order);
    d9a_sched_delay *sd = alloc_array(a, a->sched_top.n, sizeof *sd);
    if (!sd) return -1;
    for (size_t i = 0; i < a->sched_top.n; i++) {
        const sched_entry *e = d9a_topn_at(&a->sched_top, order[i]);
        sd[i] = (d9a_sched_delay){e->ts, e->wait, e->worker, e->tid};
    }
    r->sched_worst = sd;
    r->nsched_worst = a->sched_top.n;

    /* wake to poll */
    d9a_dist_from(&r->wake_delay, &a->wake_delay);
    r->wakes = a->wakes;
    r->wakes_unpolled = a->wakes_unpolled;
    r->wake_over_warn = a->wake_over_warn;
    r->wake_over_crit = a->wake_over_crit;
    d9a_topn_order(&a->wake_top, order);
    d9a_wake_delay *wd = alloc_array(a, a->wake_top.n, sizeof *wd);
    if (!wd) return -1;
    for (size_t i = 0; i < a->wake_top.n; i++) {
        const wake_entry *e = d9a_topn_at(&a->wake_top, order[i]);
        wd[i] = (d9a_wake_delay){.wake_ns = e->wake, .poll_ns = e->poll,
                                 .delay_ns = e->poll - e->wake, .task = e->task,
                                 .worker = e->worker, .location = str(a, e->loc),
                                 .wakes = e->wakes};
    }
    r->wake_worst = wd;
    r->nwake_worst = a->wake_top.n;

    /* by location */
    if (d9a_attr_classify_locations(a) != 0) return -1;
    size_t nloc = 0;
    for (uint32_t i = 0; i < a->locs_cap; i++)
        if (a->locs[i].polls.count || a->locs[i].spawned || a->locs[i].terminated) nloc++;
    d9a_location_report *lr = alloc_array(a, nloc, sizeof *lr);
    if (!lr) return -1;
    size_t k = 0;
    for (uint32_t i = 0; i < a->locs_cap; i++) {
        const loc_stats *L = &a->locs[i];
        if (!L->polls.count && !L->spawned && !L->terminated) continue;
        d9a_location_report *x = &lr[k++];
        x->location = str(a, i);
        d9a_dist_from(&x->polls, &L->polls);
        x->polls_over_warn = L->polls_over_warn;
        x->spawned = L->spawned;
        x->terminated = L->terminated;
        x->live = L->live;
        x->parts = L->parts;
        d9m_parts_add(&r->parts, &L->parts);
    }
    qsort(lr, nloc, sizeof *lr, cmp_location);
    r->locations = lr;
    r->nlocations = nloc;

    /* task lifecycle */
    r->spawned = a->spawned;
    r->terminated = a->terminated;
    r->terminated_unknown = a->terminated_unknown;
    if (build_live_series(a, r) != 0) return -1;

    /* samples */
    r->offcpu_total = a->off_total;
    r->offcpu_in_poll = a->off_in_poll;
    r->offcpu_parked = a->off_parked;
    r->offcpu_other = a->off_total - a->off_in_poll - a->off_parked;
    if (build_groups(a, true, r) != 0) return -1;
    if (build_lock_waits(a, r) != 0) return -1;
    r->cpu_total = a->cpu_total;
    r->cpu_in_poll = a->cpu_in_poll;
    if (build_groups(a, false, r) != 0) return -1;

    /* migration */
    r->migration_polls = a->migration_polls;
    r->migrations = a->migrations;
    r->tasks_polled = a->tasks_polled;
    r->tasks_migrated = a->tasks_migrated;
    r->migrations_per_s = r->duration_ns ? (double)a->migrations * 1e9 / (double)r->duration_ns : 0;
    d9a_topn_order(&a->migr_top, order);
    d9a_migrating_task *mt = alloc_array(a, a->migr_top.n, sizeof *mt);
    if (!mt) return -1;
    for (size_t i = 0; i < a->migr_top.n; i++) {
        const migr_entry *e = d9a_topn_at(&a->migr_top, order[i]);
        mt[i] = (d9a_migrating_task){e->task, e->polls, e->hops,
                                     e->loc != D9A_NO_ID ? str(a, e->loc) : NULL};
    }
    r->top_migrating = mt;
    r->ntop_migrating = a->migr_top.n;

    /* queued work while a worker was parked */
    r->polls_with_queue = a->polls_with_queue;
    r->polls_with_queue_while_parked = a->polls_with_queue_while_parked;
    r->queue_samples_nonzero = a->qs_nonzero;
    r->queue_samples_nonzero_while_parked = a->qs_nonzero_while_parked;
    d9a_topn_order(&a->queued_top, order);
    d9a_queued_example *qe = alloc_array(a, a->queued_top.n, sizeof *qe);
    if (!qe) return -1;
    for (size_t i = 0; i < a->queued_top.n; i++) {
        const queued_entry *e = d9a_topn_at(&a->queued_top, order[i]);
        qe[i] = (d9a_queued_example){e->ts, e->worker, e->lq, e->parked_worker};
    }
    r->queued_examples = qe;
    r->nqueued_examples = a->queued_top.n;
    if (d9a_spans_report(a, r, r->end_ns) != 0) return -1; /* unended: open at the analyzed end */
    return a->failed ? -1 : 0;
}
