#include "adapter_trace.h"

#include <dirent.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/decoder.h"

enum kind { K_POLL_START, K_POLL_END, K_PARK, K_UNPARK, K_SPAWN, K_OBJECT, K_TERMINATE, K_WAKE,
            K_WORKER };

typedef struct raw {
    uint64_t ts;
    uint64_t seq; /* file order, to keep sorting stable */
    enum kind kind;
    uint64_t a, b, c, d;
    char s[AT_LOC_LEN];
} raw;

typedef struct vec {
    raw *items;
    size_t n, cap;
} vec;

static raw *push(vec *v) {
    if (v->n == v->cap) {
        v->cap = v->cap ? v->cap * 2 : 1024;
        v->items = realloc(v->items, v->cap * sizeof(raw));
        if (!v->items) abort();
    }
    raw *r = &v->items[v->n++];
    memset(r, 0, sizeof *r);
    r->seq = v->n;
    return r;
}

/* Fields and roles through the decoder's schema bindings (format/dec_bindings.h). */
static const d9_value *known(const d9_event *ev, d9_known_field k) {
    int i = ev->schema->bind.field[k];
    return i >= 0 ? &ev->values[i] : NULL;
}

static uint64_t field_u(const d9_event *ev, d9_known_field k) {
    uint64_t v = 0;
    d9_value_uint(known(ev, k), &v);
    return v;
}

static void field_s(const d9_event *ev, d9_known_field k, char *out, size_t len) {
    d9_dec_str s;
    if (d9_value_str(known(ev, k), &s))
        snprintf(out, len, "%.*s", (int)s.len, s.ptr);
    else
        out[0] = 0;
}

static bool is(const d9_event *ev, uint8_t role) { return ev->schema->bind.role == role; }

static int load_file(const char *path, vec *v, uint64_t *dropped) {
    char err[256];
    d9_decoder *d = d9_dec_open_path(path, NULL, err, sizeof err);
    if (!d) {
        fprintf(stderr, "adapter_trace: %s\n", err);
        return -1;
    }
    d9_event ev;
    while (d9_dec_next(d, &ev) > 0) {
        raw *r = NULL;
        if (is(&ev, D9_SCH_POLL_START)) {
            r = push(v);
            r->kind = K_POLL_START;
            r->a = field_u(&ev, D9_KF_WORKER_ID);
            r->b = field_u(&ev, D9_KF_TASK_ID);
            field_s(&ev, D9_KF_SPAWN_LOC, r->s, sizeof r->s);
        } else if (is(&ev, D9_SCH_POLL_END)) {
            r = push(v);
            r->kind = K_POLL_END;
            r->a = field_u(&ev, D9_KF_WORKER_ID);
        } else if (is(&ev, D9_SCH_WORKER_PARK) || is(&ev, D9_SCH_WORKER_UNPARK)) {
            r = push(v);
            r->kind = is(&ev, D9_SCH_WORKER_PARK) ? K_PARK : K_UNPARK;
            r->a = field_u(&ev, D9_KF_WORKER_ID);
            r->b = field_u(&ev, D9_KF_TID);
        } else if (is(&ev, D9_SCH_TASK_SPAWN)) {
            r = push(v);
            r->kind = K_SPAWN;
            r->b = field_u(&ev, D9_KF_TASK_ID);
            field_s(&ev, D9_KF_SPAWN_LOC, r->s, sizeof r->s);
        } else if (is(&ev, D9_SCH_TASK_OBJECT)) {
            r = push(v);
            r->kind = K_OBJECT;
            r->b = field_u(&ev, D9_KF_TASK_ID);
            r->c = field_u(&ev, D9_KF_OBJECT);
        } else if (is(&ev, D9_SCH_TASK_TERMINATE)) {
            r = push(v);
            r->kind = K_TERMINATE;
            r->b = field_u(&ev, D9_KF_TASK_ID);
        } else if (is(&ev, D9_SCH_WAKE)) {
            r = push(v);
            r->kind = K_WAKE;
            r->a = field_u(&ev, D9_KF_TARGET_WORKER);
            r->b = field_u(&ev, D9_KF_WAKER_TASK_ID);
            r->c = field_u(&ev, D9_KF_WOKEN_TASK_ID);
        } else if (is(&ev, D9_SCH_DROPPED_EVENTS)) {
            *dropped += field_u(&ev, D9_KF_COUNT_FIELD);
        } else if (is(&ev, D9_SCH_WORKER_REGISTERED)) {
            r = push(v);
            r->kind = K_WORKER;
            r->a = field_u(&ev, D9_KF_WORKER_ID);
            r->b = field_u(&ev, D9_KF_TID);
            r->c = field_u(&ev, D9_KF_INDEX);
            field_s(&ev, D9_KF_RUNTIME, r->s, sizeof r->s);
        }
        if (r) r->ts = ev.ts_ns;
    }
    int rc = d9_dec_state(d) == D9_DEC_ERROR || d9_dec_state(d) == D9_DEC_DAMAGED ? -1 : 0;
    if (rc) fprintf(stderr, "adapter_trace: %s: %s\n", path, d9_dec_message(d));
    d9_dec_close(d);
    return rc;
}

static int is_segment(const struct dirent *de) { return strncmp(de->d_name, "trace.", 6) == 0; }

static int by_segment_number(const struct dirent **x, const struct dirent **y) {
    unsigned long a = strtoul((*x)->d_name + 6, NULL, 10), b = strtoul((*y)->d_name + 6, NULL, 10);
    return a < b ? -1 : a > b;
}

static int by_time(const void *x, const void *y) {
    const raw *a = x, *b = y;
    if (a->ts != b->ts) return a->ts < b->ts ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* Room for element n. The capacity is n rounded up to a power of two (arrays only grow, from
 * 0), so it doubles when n reaches one: a realloc per element copied the whole array every time
 * under ASan (O(n^2): over 60 s for a 50 000-event demo run, 0.2 s without ASan). */
#define GROW(arr, n)                                                                       \
    do {                                                                                   \
        if ((n) == 0 || ((n) & ((n) - 1)) == 0) {                                          \
            arr = realloc(arr, ((n) ? 2 * (n) : 1) * sizeof *(arr));                       \
            if (!(arr)) abort();                                                           \
        }                                                                                  \
        memset(&(arr)[n], 0, sizeof *(arr));                                               \
    } while (0)

int at_load(const char *run_dir, at_trace *t) {
    memset(t, 0, sizeof *t);
    /* segments in their order, so that events with equal timestamps keep their thread's order */
    struct dirent **names;
    int nnames = scandir(run_dir, &names, is_segment, by_segment_number);
    if (nnames < 0) {
        perror(run_dir);
        return -1;
    }
    vec v = {0};
    int rc = 0;
    for (int i = 0; i < nnames; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", run_dir, names[i]->d_name);
        if (load_file(path, &v, &t->dropped)) rc = -1;
        free(names[i]);
    }
    free(names);
    qsort(v.items, v.n, sizeof(raw), by_time);
    t->events = v.n;

    enum { MAXW = 256 };
    long open_poll[MAXW], open_park[MAXW];
    for (int i = 0; i < MAXW; i++) open_poll[i] = open_park[i] = -1;
    for (size_t i = 0; i < v.n; i++) {
        raw *r = &v.items[i];
        uint32_t w = (uint32_t)(r->a < MAXW ? r->a : MAXW - 1);
        switch (r->kind) {
        case K_POLL_START:
            if (open_poll[w] >= 0) t->nesting_errors++;
            if (open_park[w] >= 0) t->park_errors++;
            GROW(t->polls, t->npolls);
            t->polls[t->npolls].task = r->b;
            t->polls[t->npolls].worker = w;
            t->polls[t->npolls].start_ns = r->ts;
            memcpy(t->polls[t->npolls].loc, r->s, AT_LOC_LEN);
            open_poll[w] = (long)t->npolls++;
            break;
        case K_POLL_END:
            if (open_poll[w] < 0) t->nesting_errors++;
            else t->polls[open_poll[w]].end_ns = r->ts;
            open_poll[w] = -1;
            break;
        case K_PARK:
            if (open_park[w] >= 0 || open_poll[w] >= 0) t->park_errors++;
            GROW(t->parks, t->nparks);
            t->parks[t->nparks].worker = w;
            t->parks[t->nparks].tid = (uint32_t)r->b;
            t->parks[t->nparks].park_ns = r->ts;
            open_park[w] = (long)t->nparks++;
            break;
        case K_UNPARK:
            if (open_park[w] < 0) t->park_errors++;
            else t->parks[open_park[w]].unpark_ns = r->ts;
            open_park[w] = -1;
            break;
        case K_SPAWN:
        case K_TERMINATE: {
            at_task_event **arr = r->kind == K_SPAWN ? &t->spawns : &t->terminates;
            size_t *n = r->kind == K_SPAWN ? &t->nspawns : &t->nterminates;
            GROW(*arr, *n);
            (*arr)[*n].task = r->b;
            (*arr)[*n].ts_ns = r->ts;
            memcpy((*arr)[*n].loc, r->s, AT_LOC_LEN);
            (*n)++;
            break;
        }
        case K_OBJECT: /* written right after its spawn */
            for (size_t k = t->nspawns; k-- > 0;)
                if (t->spawns[k].task == r->b) {
                    t->spawns[k].object = r->c;
                    break;
                }
            break;
        case K_WAKE:
            GROW(t->wakes, t->nwakes);
            t->wakes[t->nwakes].worker = (uint32_t)r->a;
            t->wakes[t->nwakes].waker = r->b;
            t->wakes[t->nwakes].woken = r->c;
            t->wakes[t->nwakes].ts_ns = r->ts;
            t->nwakes++;
            break;
        case K_WORKER: {
            bool known = false;
            for (size_t k = 0; k < t->nworkers; k++)
                if (t->workers[k].id == r->a && t->workers[k].tid == r->b) known = true;
            if (known) break;
            GROW(t->workers, t->nworkers);
            at_worker *wk = &t->workers[t->nworkers++];
            wk->id = (uint32_t)r->a;
            wk->tid = (uint32_t)r->b;
            wk->index = (uint32_t)r->c;
            snprintf(wk->runtime, sizeof wk->runtime, "%s", r->s);
            break;
        }
        }
    }
    for (int i = 0; i < MAXW; i++)
        if (open_poll[i] >= 0) t->open_polls++;
    free(v.items);
    return rc;
}

void at_free(at_trace *t) {
    free(t->polls);
    free(t->spawns);
    free(t->terminates);
    free(t->wakes);
    free(t->parks);
    free(t->workers);
    memset(t, 0, sizeof *t);
}

size_t at_polls(const at_trace *t, const char *loc, uint64_t task) {
    size_t n = 0;
    for (size_t i = 0; i < t->npolls; i++)
        if ((!loc || strcmp(t->polls[i].loc, loc) == 0) && (!task || t->polls[i].task == task)) n++;
    return n;
}

const at_worker *at_worker_by_id(const at_trace *t, uint32_t id) {
    for (size_t i = 0; i < t->nworkers; i++)
        if (t->workers[i].id == id) return &t->workers[i];
    return NULL;
}

bool at_first_last_polls(const at_trace *t, uint32_t worker, const char **first, const char **last) {
    const at_poll *f = NULL, *l = NULL;
    for (size_t i = 0; i < t->npolls; i++) {
        const at_poll *p = &t->polls[i];
        if (p->worker != worker) continue;
        if (!f || p->start_ns < f->start_ns) f = p;
        if (!l || p->start_ns >= l->start_ns) l = p;
    }
    if (!f) return false;
    *first = f->loc;
    *last = l->loc;
    return true;
}

size_t at_polls_on_runtime(const at_trace *t, const char *loc, const char *runtime) {
    size_t n = 0;
    for (size_t i = 0; i < t->npolls; i++) {
        const at_worker *w = at_worker_by_id(t, t->polls[i].worker);
        if (w && strcmp(w->runtime, runtime) == 0 && strcmp(t->polls[i].loc, loc) == 0) n++;
    }
    return n;
}

size_t at_distinct_tasks(const at_trace *t, const char *loc) {
    size_t n = 0;
    for (size_t i = 0; i < t->npolls; i++) {
        if (strcmp(t->polls[i].loc, loc) != 0) continue;
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++)
            seen = strcmp(t->polls[j].loc, loc) == 0 && t->polls[j].task == t->polls[i].task;
        if (!seen) n++;
    }
    return n;
}

size_t at_spawns(const at_trace *t, uint64_t task, const char *loc) {
    size_t n = 0;
    for (size_t i = 0; i < t->nspawns; i++)
        if (t->spawns[i].task == task && (!loc || strcmp(t->spawns[i].loc, loc) == 0)) n++;
    return n;
}

size_t at_terminates(const at_trace *t, uint64_t task) {
    size_t n = 0;
    for (size_t i = 0; i < t->nterminates; i++)
        if (t->terminates[i].task == task) n++;
    return n;
}

size_t at_wakes_of(const at_trace *t, uint64_t woken) {
    size_t n = 0;
    for (size_t i = 0; i < t->nwakes; i++)
        if (t->wakes[i].woken == woken) n++;
    return n;
}

size_t at_tasks_of(const at_trace *t, const void *obj, uint64_t *last) {
    size_t n = 0;
    if (last) *last = 0;
    for (size_t i = 0; i < t->nspawns; i++)
        if (t->spawns[i].object == (uintptr_t)obj) {
            n++;
            if (last) *last = t->spawns[i].task;
        }
    return n;
}

size_t at_parks_on_runtime(const at_trace *t, const char *runtime) {
    size_t n = 0;
    for (size_t i = 0; i < t->nparks; i++) {
        const at_worker *w = at_worker_by_id(t, t->parks[i].worker);
        if (w && strcmp(w->runtime, runtime) == 0 && t->parks[i].unpark_ns >= t->parks[i].park_ns)
            n++;
    }
    return n;
}

typedef struct key_ts {
    uint64_t key, ts;
} key_ts;

static int by_key_ts(const void *x, const void *y) {
    const key_ts *a = x, *b = y;
    if (a->key != b->key) return a->key < b->key ? -1 : 1;
    return a->ts < b->ts ? -1 : a->ts > b->ts;
}

/* Index of the last item with `key` and ts <= `ts`, or -1. */
static long last_at_or_before(const key_ts *v, size_t n, uint64_t key, uint64_t ts) {
    size_t lo = 0, hi = n; /* first item > (key, ts) */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (v[mid].key < key || (v[mid].key == key && v[mid].ts <= ts)) lo = mid + 1;
        else hi = mid;
    }
    return lo > 0 && v[lo - 1].key == key ? (long)lo - 1 : -1;
}

static key_ts *sorted_task_events(const at_task_event *e, size_t n) {
    key_ts *v = calloc(n + 1, sizeof *v);
    if (!v) abort();
    for (size_t i = 0; i < n; i++) v[i] = (key_ts){e[i].task, e[i].ts_ns};
    qsort(v, n, sizeof *v, by_key_ts);
    return v;
}

void at_identity_check(const at_trace *t, at_identity *out) {
    memset(out, 0, sizeof *out);
    key_ts *sp = sorted_task_events(t->spawns, t->nspawns);
    key_ts *te = sorted_task_events(t->terminates, t->nterminates);
    out->spawns = t->nspawns;
    for (size_t i = 0; i < t->nspawns; i++)
        if (i == 0 || sp[i].key != sp[i - 1].key) out->distinct_spawned++;
    for (size_t i = 1; i < t->nterminates; i++)
        if (te[i].key == te[i - 1].key) out->terminates_repeated++;
    out->polls = t->npolls;
    for (size_t i = 0; i < t->npolls; i++) {
        const at_poll *p = &t->polls[i];
        /* as a reader sees a task: from its (first) spawn to its (first) terminate */
        if (last_at_or_before(sp, t->nspawns, p->task, p->start_ns) < 0) out->polls_without_spawn++;
        long e = last_at_or_before(te, t->nterminates, p->task, UINT64_MAX);
        if (e < 0) continue;
        size_t k = (size_t)e;
        while (k > 0 && te[k - 1].key == p->task) k--;
        if (te[k].ts < p->end_ns) out->polls_after_terminate++;
    }
    free(sp);
    free(te);
}

static bool loc_in(const char *loc, const char *const *locs, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(loc, locs[i]) == 0) return true;
    return false;
}

void at_wake_check(const at_trace *t, const char *const *io_locs, size_t nlocs, at_wake_stats *out) {
    memset(out, 0, sizeof *out);
    key_ts *wk = calloc(t->nwakes + 1, sizeof *wk);
    key_ts *pk = calloc(t->nparks + 1, sizeof *pk);
    if (!wk || !pk) abort();
    for (size_t i = 0; i < t->nwakes; i++) {
        wk[i] = (key_ts){t->wakes[i].woken, t->wakes[i].ts_ns};
        if (t->wakes[i].waker == t->wakes[i].woken) out->self_wakes++;
    }
    out->wakes = t->nwakes;
    for (size_t i = 0; i < t->nparks; i++) pk[i] = (key_ts){t->parks[i].worker, t->parks[i].park_ns};
    qsort(wk, t->nwakes, sizeof *wk, by_key_ts);
    qsort(pk, t->nparks, sizeof *pk, by_key_ts);
    for (size_t i = 0; i < t->npolls; i++) {
        const at_poll *p = &t->polls[i];
        if (!loc_in(p->loc, io_locs, nlocs)) continue;
        out->io_polls++;
        long w = last_at_or_before(wk, t->nwakes, p->task, p->start_ns);
        long k = last_at_or_before(pk, t->nparks, p->worker, p->start_ns);
        if (w < 0 || (k >= 0 && wk[w].ts < pk[k].ts)) out->io_polls_unwoken++;
    }
    free(wk);
    free(pk);
}

char *at_mkdtemp(const char *tag) {
    const char *base = getenv("TMPDIR");
    char *path = NULL;
    if (asprintf(&path, "%s/d9-%s-XXXXXX", base && *base ? base : "/tmp", tag) < 0) return NULL;
    if (!mkdtemp(path)) {
        free(path);
        return NULL;
    }
    return path;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void at_remove_tree(const char *dir) {
    if (dir) nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* ThreadSanitizer reads this from the test programs (only in TSan builds).
 *
 * libuv and libevent parks are recorded by dial9's epoll_wait wrapper, which TSan's own
 * epoll_wait interceptor calls as the "real" function. Inside a blocking interceptor TSan
 * ignores synchronization (it counts the thread as ignoring interceptors, atomics included),
 * so the release store that publishes the park record to the collector is invisible to it,
 * and the collector's later read of the record looks like a race. It is not one outside
 * TSan; libev parks, recorded from its release callback outside any interceptor, show no such
 * report.
 *
 * The same blindness has a second face: when a park finds its ring full, its slow path reads
 * the collector's position (an acquire) to know how far it may write, and TSan does not see
 * that read either. The loop thread's next records (a poll, a spawn), written outside the
 * interceptor into slots the collector read on the ring's previous lap, then look unordered
 * with those reads (~1 run in 40 under load, on main before this too). The ring's protocol
 * itself is checked under TSan without adapters (tests/unit/test_mt_*), so the adapter tests
 * leave the collector's reads of the rings (src/core/collector_merge.c) out. */
const char *__tsan_default_suppressions(void);
const char *__tsan_default_suppressions(void) {
    return "race:park_fast\nrace:park_record\nrace:src/core/collector_merge.c\n";
}
