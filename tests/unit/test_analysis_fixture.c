/* The analysis on the real dial9 trace in ../shared/fixtures (skips when it is absent):
 * its longest poll (50 280 303 ns, worker 0, task 112 at axum_traced.rs:173:32) with the
 * context-switch sample inside it, symbolized as socket() -> ... -> expand_fdtable ->
 * synchronize_rcu; every poll paired although the file's 14 streams overlap in time. Then the
 * same trace repeated K times with shifted timestamps (one file): everything scales by K and
 * nothing arrives out of the reordering window.
 *
 * With D9_ANALYZE_BIG_OUT=path (and D9_ANALYZE_BIG_COPIES=N, default 25) it also writes such
 * a repeated trace there: the ~100 MB trace of the throughput measurement in docs/analyze.md. */
#include <unistd.h>
#include <zlib.h>

#include "check.h"
#include "test_analysis_builder.h"

static const char *const LOC = "examples/metrics-service/src/axum_traced.rs:173:32";

static unsigned char *read_gz(const char *path, size_t *len) {
    gzFile f = gzopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 22, n = 0;
    unsigned char *p = malloc(cap);
    for (;;) {
        if (!p) break;
        if (n == cap) {
            unsigned char *q = realloc(p, cap *= 2);
            if (!q) {
                free(p);
                p = NULL;
                break;
            }
            p = q;
        }
        int got = gzread(f, p + n, (unsigned)(cap - n));
        if (got <= 0) break;
        n += (size_t)got;
    }
    gzclose(f);
    *len = n;
    return p;
}

static int index_of(const d9a_stack_view *v, const char *symbol) {
    for (uint32_t i = 0; v && i < v->nframes; i++)
        if (v->frames[i].symbol && !strcmp(v->frames[i].symbol, symbol)) return (int)i;
    return -1;
}

static const d9a_report *analyze_mem(d9a_analysis **a, const void *data, size_t len) {
    *a = d9a_new(NULL);
    char err[256];
    d9_decoder *d = d9_dec_open_mem(data, len, NULL, err, sizeof err);
    if (!*a || !d) return NULL;
    d9a_begin_file(*a);
    d9_event ev;
    while (d9_dec_next(d, &ev) > 0)
        if (d9a_feed(*a, &ev, d) != 0) break;
    bool ok = d9_dec_state(d) == D9_DEC_END;
    d9_dec_close(d);
    return ok ? d9a_finish(*a) : NULL;
}

static void check_single(const d9a_report *r) {
    CHECK_EQ_U64(r->polls.count, 36801);
    CHECK_EQ_U64(r->unmatched_poll_starts, 0);
    CHECK_EQ_U64(r->unmatched_poll_ends, 0);
    CHECK_EQ_U64(r->late_records, 0);
    CHECK_EQ_U64(r->nworkers, 2);
    CHECK_EQ_U64(r->trace_last_ns - r->trace_first_ns, 4809856406ull);
    CHECK(r->nlong_polls >= 2);
    if (r->nlong_polls < 2) return;
    const d9a_long_poll *p = &r->long_polls[0];
    CHECK_EQ_U64(p->duration_ns, 50280303);
    CHECK_EQ_U64(p->worker, 0);
    CHECK_EQ_U64(p->task, 112);
    CHECK_STR(p->location, LOC);
    CHECK_EQ_U64(r->long_polls[1].duration_ns, 47674756);
    CHECK_EQ_U64(r->long_polls[1].worker, 1);
    CHECK_EQ_U64(r->long_polls[1].task, 121);
    CHECK_STR(r->long_polls[1].location, LOC);
    CHECK_EQ_U64(r->polls.max, 50280303);

    /* the context switch inside the longest poll: socket() growing the fd table */
    CHECK(p->offcpu_samples >= 1 && p->ngroups >= 1);
    const d9a_stack_view *v = p->ngroups ? p->groups[0].stack : NULL;
    CHECK(v != NULL);
    int rcu = index_of(v, "synchronize_rcu"), fdt = index_of(v, "expand_fdtable");
    int sock = index_of(v, "__sys_socket");
    CHECK(rcu >= 0 && fdt > rcu && sock > fdt); /* leaf first: expand_fdtable calls synchronize_rcu */
    CHECK(v && !strcmp(v->function, "synchronize_rcu"));
    CHECK(v && v->app_frame && strstr(v->app_frame, "metrics_service::ddb") != NULL);
    CHECK(p->groups[0].est_ns > 40000000 && p->groups[0].est_ns <= p->duration_ns);

    /* the same in the blocking-call groups, and in the red flags */
    bool found = false;
    for (size_t i = 0; i < r->nblocking_functions; i++) {
        const d9a_sample_group *g = &r->blocking_functions[i];
        if (strcmp(g->function, "synchronize_rcu") != 0) continue;
        found = true;
        CHECK_EQ_U64(g->in_poll, 1);
        CHECK_STR(g->example_location, LOC);
        CHECK(index_of(g->stack, "expand_fdtable") > index_of(g->stack, "synchronize_rcu"));
    }
    CHECK(found);
    /* by system call: socket() (synchronize_rcu, expand_files) blocked its polls longest */
    CHECK(r->nblocking_syscalls >= 2 && r->blocking_syscalls[0].syscall &&
          !strcmp(r->blocking_syscalls[0].syscall, "socket"));
    CHECK(r->nblocking_syscalls >= 1 && r->blocking_syscalls[0].in_poll == 2);
    const d9a_flag *b = tb_flag(r, "blocking_in_poll");
    CHECK(b && !strncmp(b->evidence, "socket(): 2 samples", 19) && strstr(b->evidence, "synchronize_rcu"));
    const d9a_flag *f = tb_flag(r, "long_poll");
    CHECK(f && f->severity == D9A_CRITICAL && strstr(f->evidence, "task 0x70") &&
          strstr(f->evidence, "synchronize_rcu"));
    CHECK(r->symbols_present);
    CHECK_EQ_U64(r->counts.offcpu_samples + r->counts.cpu_samples, 6949);
}

/* Offsets of the timestamp reset frames: the 9 bytes before an event frame, when they are a
 * reset to exactly that event's base (ts - delta). Found through the decoder. */
static size_t find_resets(const unsigned char *raw, size_t len, size_t *pos, size_t cap,
                          uint64_t *total_resets) {
    char err[256];
    d9_decoder *d = d9_dec_open_mem(raw, len, NULL, err, sizeof err);
    if (!d) return 0;
    size_t n = 0;
    d9_event ev;
    while (d9_dec_next(d, &ev) > 0) {
        if (!ev.schema->has_timestamp || ev.offset < 9 || n == cap) continue;
        const unsigned char *e = raw + ev.offset;
        uint64_t delta = e[3] | (uint64_t)e[4] << 8 | (uint64_t)e[5] << 16, base = 0;
        if (e[-9] != 0x05) continue;
        for (int i = 0; i < 8; i++) base |= (uint64_t)e[-8 + i] << (8 * i);
        if (base == ev.ts_ns - delta) pos[n++] = ev.offset - 8;
    }
    *total_resets = d9_dec_get_stats(d)->timestamp_resets;
    d9_dec_close(d);
    return n;
}

/* K copies, copy i shifted by i * (span + 1 s). Reset frames to 0 (SymbolTableEntry) stay. */
static unsigned char *repeat_shifted(const unsigned char *raw, size_t len, unsigned k,
                                     const size_t *pos, size_t npos, uint64_t shift_step) {
    unsigned char *out = malloc(len * k);
    if (!out) return NULL;
    for (unsigned c = 0; c < k; c++) {
        unsigned char *dst = out + (size_t)c * len;
        memcpy(dst, raw, len);
        for (size_t i = 0; i < npos; i++) {
            uint64_t v = 0;
            for (int b = 0; b < 8; b++) v |= (uint64_t)dst[pos[i] + b] << (8 * b);
            if (v == 0) continue;
            v += c * shift_step;
            for (int b = 0; b < 8; b++) dst[pos[i] + b] = (unsigned char)(v >> (8 * b));
        }
    }
    return out;
}

int main(void) {
    char path[4096];
    snprintf(path, sizeof path, "%s/fixtures/dial9-demo-trace.bin", d9t_shared_dir());
    if (access(path, R_OK) != 0) {
        printf("test_analysis_fixture: SKIP: %s not found (set D9_SHARED_DIR)\n", path);
        return 0;
    }
    size_t len = 0;
    unsigned char *raw = read_gz(path, &len);
    CHECK(raw != NULL && len == 4047237);
    if (!raw) return d9t_summary("test_analysis_fixture");

    d9a_analysis *a;
    const d9a_report *r = analyze_mem(&a, raw, len);
    CHECK(r != NULL);
    if (r) check_single(r);
    uint64_t span = r ? r->trace_last_ns - r->trace_first_ns : 0;
    uint64_t migrations = r ? r->migrations : 0, wakes = r ? r->wakes : 0;
    d9a_free(a);

    size_t cap = 20000, *pos = malloc(cap * sizeof *pos);
    uint64_t total_resets = 0;
    size_t npos = pos ? find_resets(raw, len, pos, cap, &total_resets) : 0;
    CHECK_EQ_U64(total_resets, 7678);
    CHECK_EQ_U64(npos, total_resets); /* every reset found: each precedes its event */

    const unsigned k = 3;
    uint64_t step = span + 1000000000ull;
    unsigned char *big = repeat_shifted(raw, len, k, pos, npos, step);
    CHECK(big != NULL);
    if (big) {
        r = analyze_mem(&a, big, len * k);
        CHECK(r != NULL);
        if (r) {
            CHECK_EQ_U64(r->polls.count, 36801 * k);
            CHECK_EQ_U64(r->polls.max, 50280303);
            CHECK_EQ_U64(r->late_records, 0);
            CHECK_EQ_U64(r->unmatched_poll_starts + r->unmatched_poll_ends, 0);
            CHECK_EQ_U64(r->trace_last_ns - r->trace_first_ns, span + (k - 1) * step);
            CHECK_EQ_U64(r->wakes, wakes * k);
            /* each copy's tasks continue where the previous copy left them: one more hop at
             * most per task and boundary */
            CHECK(r->migrations >= migrations * k && r->migrations <= migrations * k + 300 * (k - 1));
            for (unsigned i = 0; i < k && i < r->nlong_polls; i++) {
                CHECK_EQ_U64(r->long_polls[i].duration_ns, 50280303);
                CHECK_EQ_U64(r->long_polls[i].start_ns, r->long_polls[0].start_ns + i * step); /* ties: earlier first */
            }
        }
        d9a_free(a);
        free(big);
    }

    const char *out = getenv("D9_ANALYZE_BIG_OUT");
    if (out && *out) {
        const char *ks = getenv("D9_ANALYZE_BIG_COPIES");
        unsigned copies = ks && atoi(ks) > 0 ? (unsigned)atoi(ks) : 25;
        unsigned char *b = repeat_shifted(raw, len, copies, pos, npos, step);
        FILE *f = fopen(out, "wb");
        CHECK(b && f && fwrite(b, len, copies, f) == copies);
        if (f) fclose(f);
        printf("test_analysis_fixture: wrote %u shifted copies (%zu bytes) to %s\n", copies,
               len * copies, out);
        free(b);
    }
    free(pos);
    free(raw);
    return d9t_summary("test_analysis_fixture");
}
