/* In-process symbolization and the memory-map source, end to end.
 *
 * Part 1 drives the recorder's own parts (collector + memory-map source + sealed-segment
 * pipeline, as d9_start wires them) with a data source that writes CPU samples whose
 * callchains hold addresses of known functions of this program, of libc and of a library
 * dlopen'ed during the recording. Small segments make it rotate many times while the
 * pipeline symbolizes sealed files concurrently. After the close and d9_pipeline_stop, every
 * segment must carry MemoryMapEvents with the right build ids (the dlopen'ed library from the
 * segment where it appeared on) and SymbolTableEntry events naming every callchain address.
 *
 * Part 2 records with d9_start/d9_stop (memory maps in every segment of a real run, a dlopen
 * noticed on the fly; task dumps symbolized if d9_task_suspend records them). The preparing
 * thread exists once a segment was sealed during the run.
 *
 * Part 3 is a short run whose one segment is sealed at d9_stop: no preparing thread is ever
 * created, d9_stop symbolizes the segment itself, and its wait budget still bounds it. */
#include <dirent.h>
#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "core/collector.h"
#include "core/source.h"
#include "dial9/dial9.h"
#include "sinks/pipeline.h"
#include "sources/memory_map.h"
#include "symbols/elf_image.h"
#include "symbols/symbolize_file.h"
#include "symbols/symbolize_report.h"
#include "trace_files_util.h"

int main(void);

/* ------------------------------------------------------------------ known functions */

__attribute__((noinline)) int d9t_pipeline_leaf(int x);
__attribute__((noinline)) int d9t_pipeline_leaf(int x) {
    __asm__ volatile("" ::: "memory");
    return x + 1;
}
__attribute__((noinline)) int d9t_pipeline_outer(int x);
__attribute__((noinline)) int d9t_pipeline_outer(int x) {
    __asm__ volatile("" ::: "memory");
    return d9t_pipeline_leaf(x) * 2;
}
__attribute__((noinline)) static int d9t_pipeline_static(int x) {
    __asm__ volatile("" ::: "memory");
    return d9t_pipeline_outer(x) - 1;
}

typedef struct expect {
    uint64_t addr;
    const char *name;   /* exact name, or NULL: any alias of `fn` */
    void *fn;
    void *handle;       /* where to look `fn`'s aliases up */
} expect;

#define MAX_EXPECT 16
static expect g_expect[MAX_EXPECT];
static size_t g_nexpect;

static void expect_addr(uint64_t addr, const char *name, void *fn, void *handle) {
    g_expect[g_nexpect++] = (expect){addr, name, fn, handle};
}

static bool same_function(const char *name, const void *fn, void *handle) {
    void *p = dlsym(handle ? handle : RTLD_DEFAULT, name);
    Dl_info a, b;
    return p == fn || (p && dladdr(p, &a) && dladdr(fn, &b) && a.dli_saddr == b.dli_saddr);
}

/* ------------------------------------------------------------------ a fake CPU sampler */

typedef struct fake {
    d9_source base;
    pthread_mutex_t lock;
    uint64_t stack[8];
    uint32_t n;
    uint64_t dl_addr; /* an address in the dlopen'ed library, once loaded */
    uint64_t samples;
} fake;

static uint64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void fake_collect(d9_source *src, d9_src_batch *out) {
    fake *f = src->ctx;
    pthread_mutex_lock(&f->lock);
    uint64_t frames[9];
    memcpy(frames, f->stack, f->n * sizeof *frames);
    uint32_t n = f->n;
    if (f->dl_addr) frames[n++] = f->dl_addr;
    uint64_t ts = mono_ns();
    for (int i = 0; i < 40; i++) {
        d9_src_event ev = {.ts_ns = ts + (uint64_t)i, .kind = D9_SRC_CPU_SAMPLE, .tid = (uint32_t)gettid(), .cpu = 0};
        ev.sample.source = 0;
        ev.sample.nframes = n - (uint32_t)(i % 2); /* two distinct stacks */
        ev.sample.frames = frames + (i % 2);
        d9_src_batch_add(out, &ev);
        f->samples++;
    }
    pthread_mutex_unlock(&f->lock);
}

static void fake_close(d9_source *src) { (void)src; }

/* ------------------------------------------------------------------ reading the results */

typedef struct file_seen {
    int maps, maps_with_id;
    bool has_exe, has_libc, has_dl, has_vdso, has_kernel;
    bool exe_id_ok, libc_id_ok;
    int cpu_samples, task_dumps, symbols, symbols_bad_shape;
    uint32_t last_stream, symbol_stream_min;
    bool symbols_only_in_last;
    uint64_t addrs[64];
    int naddrs;
    char *names[64]; /* depth-0 name per addrs[i], from SymbolTableEntry */
} file_seen;

typedef struct seen_ctx {
    file_seen *f;
    const char *exe, *exe_id, *libc, *libc_id, *dl, *dl_id;
} seen_ctx;

static int addr_index(file_seen *f, uint64_t a, bool add) {
    for (int i = 0; i < f->naddrs; i++)
        if (f->addrs[i] == a) return i;
    if (!add || f->naddrs == 64) return -1;
    f->addrs[f->naddrs] = a;
    f->names[f->naddrs] = NULL;
    return f->naddrs++;
}

static void on_event(const d9_event *ev, void *p) {
    seen_ctx *c = p;
    file_seen *f = c->f;
    if (ev->stream > f->last_stream) f->last_stream = ev->stream;
    d9_dec_str s;
    if (d9t_is(ev, "MemoryMapEvent")) {
        f->maps++;
        d9_dec_str path, bid;
        if (!d9_value_str(d9_event_field(ev, "path"), &path) || !d9_value_str(d9_event_field(ev, "build_id"), &bid))
            return;
        f->maps_with_id += bid.len > 0;
        char pb[1024], bb[256];
        snprintf(pb, sizeof pb, "%.*s", (int)path.len, path.ptr);
        snprintf(bb, sizeof bb, "%.*s", (int)bid.len, bid.ptr);
        if (!strcmp(pb, c->exe)) { f->has_exe = true; f->exe_id_ok = !strcmp(bb, c->exe_id); }
        if (!strcmp(pb, c->libc)) { f->has_libc = true; f->libc_id_ok = !strcmp(bb, c->libc_id); }
        if (c->dl && !strcmp(pb, c->dl)) f->has_dl = !strcmp(bb, c->dl_id);
        if (!strcmp(pb, "[vdso]")) f->has_vdso = bb[0] != 0;
        if (!strcmp(pb, "[kernel.kallsyms]")) f->has_kernel = true;
    } else if (d9t_is(ev, "CpuSampleEvent") || d9t_is(ev, "TaskDumpEvent")) {
        if (d9t_is(ev, "CpuSampleEvent")) f->cpu_samples++;
        else f->task_dumps++;
        const d9_value *cc = d9_event_field(ev, "callchain");
        if (cc && cc->resolved)
            for (uint32_t i = 0; i < cc->stack.count; i++) addr_index(f, cc->stack.addrs[i], true);
    } else if (d9t_is(ev, "SymbolTableEntry")) {
        f->symbols++;
        if (ev->ts_ns != 0 || d9t_field_u(ev, "size") != 0) f->symbols_bad_shape++;
        if (f->symbols == 1) f->symbol_stream_min = ev->stream;
        if (d9t_field_u(ev, "inline_depth") != 0) return;
        int i = addr_index(f, d9t_field_u(ev, "addr"), true);
        if (i >= 0 && d9_value_str(d9_event_field(ev, "symbol_name"), &s)) {
            free(f->names[i]);
            f->names[i] = strndup(s.ptr, s.len);
        }
    }
}

static const char *name_of(file_seen *f, uint64_t a) {
    int i = addr_index(f, a, false);
    return i >= 0 ? f->names[i] : NULL;
}

static void free_seen(file_seen *f) {
    for (int i = 0; i < f->naddrs; i++) free(f->names[i]);
}

/* ------------------------------------------------------------------ helpers */

static void readelf_build_id(const char *path, char *out, size_t len) {
    if (!d9_elf_file_build_id(path, out, len)) out[0] = 0;
    char cmd[1200], line[512];
    snprintf(cmd, sizeof cmd, "readelf -n '%s' 2>/dev/null", path);
    FILE *p = popen(cmd, "r");
    char want[256] = "";
    while (p && fgets(line, sizeof line, p)) {
        char *b = strstr(line, "Build ID: ");
        if (b) {
            snprintf(want, sizeof want, "%s", b + 10);
            want[strcspn(want, "\n ")] = 0;
        }
    }
    if (p) pclose(p);
    if (want[0]) CHECK_STR(out, want); /* our reader agrees with readelf */
    else printf("skip: readelf shows no build id for %s\n", path);
}

static void *open_a_library(const char **path_out, void **fn_out) {
    static const char *const libs[][2] = {
        {"libcrypt.so.1", "crypt"}, {"libbz2.so.1.0", "BZ2_bzlibVersion"}, {"libacl.so.1", "acl_init"}};
    for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++) {
        if (dlopen(libs[i][0], RTLD_NOW | RTLD_NOLOAD)) continue; /* must be new to us */
        void *h = dlopen(libs[i][0], RTLD_NOW);
        if (!h) continue;
        void *fn = dlsym(h, libs[i][1]);
        Dl_info di;
        if (!fn || !dladdr(fn, &di)) continue;
        *path_out = realpath(di.dli_fname, NULL);
        *fn_out = fn;
        return h;
    }
    return NULL;
}

static char *exe_path(void) {
    char buf[4096];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    buf[n > 0 ? n : 0] = 0;
    return strdup(buf);
}

/* ------------------------------------------------------------------ part 1 */

/* Symbols appended to a sealed segment count in its size limit. */
static void check_within_limit(const char *path, uint64_t max_file_size) {
    struct stat sb;
    CHECK(stat(path, &sb) == 0);
    if ((uint64_t)sb.st_size > max_file_size)
        fprintf(stderr, "%s: %lld bytes, over the %" PRIu64 " limit\n", path, (long long)sb.st_size, max_file_size);
    CHECK((uint64_t)sb.st_size <= max_file_size);
}

static void test_pipeline(void) {
    char *dir = d9t_mkdtemp("sympipe");
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    cfg.max_file_size = 12000; /* tens of segments: the pipeline queue (256) holds them all even when symbolizing lags */
    cfg.max_total_size = 64 << 20;
    cfg.symbolize = true;
    cfg.symbolize_exit_wait_secs = 3600; /* every file is checked: only a hang may end the wait */
    d9_collector_config cc = {.cfg = &cfg, .run_id = "run1", .service = "symtest", .clock_name = "monotonic"};
    char err[512];
    d9_collector *col = d9_collector_open(&cc, err, sizeof err);
    CHECK(col != NULL);
    if (!col) return;
    d9_pipeline *pipe = d9_pipeline_start(&cfg);
    CHECK(pipe != NULL);
    d9_collector_set_on_sealed(col, d9_pipeline_on_sealed, pipe);
    d9_collector_expect_growth(col, d9_pipeline_max_growth(pipe));
    d9_collector_collect_symbols(col);
    d9_memory_map_source_start(&cfg, col);

    fake f = {.base = {.name = "fake", .collect = fake_collect, .close = fake_close}};
    f.base.ctx = &f;
    pthread_mutex_init(&f.lock, NULL);
    /* leaf (interrupted instruction), then return addresses */
    uint64_t leaf = (uint64_t)(uintptr_t)&d9t_pipeline_leaf + 3;
    uint64_t outer = (uint64_t)(uintptr_t)&d9t_pipeline_outer + 9;
    uint64_t stat = (uint64_t)(uintptr_t)&d9t_pipeline_static + 5;
    /* libc's own functions: under ASan &write is the sanitizer's interceptor */
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    void *qsort_fn = dlsym(libc, "qsort"), *write_fn = dlsym(libc, "write");
    uint64_t q = (uint64_t)(uintptr_t)qsort_fn + 6, w = (uint64_t)(uintptr_t)write_fn + 4;
    uint64_t stack[] = {leaf, outer, stat, q, w, (uint64_t)(uintptr_t)&main + 4};
    memcpy(f.stack, stack, sizeof stack);
    f.n = 6;
    expect_addr(leaf, "d9t_pipeline_leaf", NULL, NULL);
    expect_addr(outer, "d9t_pipeline_outer", NULL, NULL);
    expect_addr(stat, "d9t_pipeline_static", NULL, NULL);
    expect_addr(q, NULL, qsort_fn, libc);
    expect_addr(w, NULL, write_fn, libc);
    expect_addr((uint64_t)(uintptr_t)&main + 4, "main", NULL, NULL);
    CHECK(d9_collector_add_source(col, &f.base));
    CHECK(d9_collector_start(col, err, sizeof err) == 0);

    const char *dl_path = NULL;
    void *dl_fn = NULL, *h = NULL;
    for (int i = 0; i < 60; i++) {
        if (i == 20) {
            h = open_a_library(&dl_path, &dl_fn);
            if (!h) printf("skip: no library to dlopen (libcrypt, libbz2, libacl)\n");
            else {
                pthread_mutex_lock(&f.lock);
                f.dl_addr = (uint64_t)(uintptr_t)dl_fn + 2;
                pthread_mutex_unlock(&f.lock);
                expect_addr(f.dl_addr, NULL, dl_fn, h);
            }
        }
        d9_collector_drain(col);
    }
    d9_stats st;
    d9_collector_close(col, &st);
    uint64_t t0 = mono_ns();
    d9_pipeline_stop(pipe);
    printf("pipeline stop waited %.1f ms; %" PRIu64 " segments sealed, %" PRIu64 " samples\n",
           (double)(mono_ns() - t0) / 1e6, st.segments_sealed, f.samples);
    CHECK(st.segments_sealed >= 5);

    d9_symbolize_report rep;
    d9_symbolize_report_get(&rep);
    if (rep.last_error[0]) fprintf(stderr, "pipeline: %s\n", rep.last_error);
    CHECK_EQ_U64(rep.files_failed, 0);
    CHECK_EQ_U64(rep.files_symbolized, st.segments_sealed);
    CHECK(rep.named > 0 && rep.named == rep.addresses);
    /* named from the collector's lists, which held all that a scan of each file finds */
    CHECK(rep.files_from_writer >= st.segments_sealed - 1);
    CHECK_EQ_U64(rep.files_given_short, 0);

    char *exe = exe_path();
    Dl_info libc_info;
    dladdr(write_fn, &libc_info);
    char *libc_path = realpath(libc_info.dli_fname, NULL);
    char exe_id[D9_BUILD_ID_HEX_MAX], libc_id[D9_BUILD_ID_HEX_MAX], dl_id[D9_BUILD_ID_HEX_MAX] = "";
    readelf_build_id(exe, exe_id, sizeof exe_id);
    readelf_build_id(libc_path, libc_id, sizeof libc_id);
    if (dl_path) readelf_build_id(dl_path, dl_id, sizeof dl_id);

    char run_dir[1024];
    snprintf(run_dir, sizeof run_dir, "%s/run1", dir);
    char **files;
    int n = d9t_list_segments(run_dir, &files);
    CHECK(n >= 5 && (uint64_t)n == st.segments_sealed);
    bool dl_seen = false;
    int dl_segments = 0, segments_after_dl = 0;
    for (int i = 0; i < n; i++) {
        file_seen fs = {0};
        seen_ctx c = {&fs, exe, exe_id, libc_path, libc_id, dl_path, dl_id};
        CHECK(d9t_decode_file(files[i], on_event, &c) == D9_DEC_END);
        check_within_limit(files[i], cfg.max_file_size);
        /* every segment stands alone: its own full map, with build ids */
        CHECK(fs.maps >= 3);
        CHECK(fs.has_exe && fs.exe_id_ok);
        CHECK(fs.has_libc && fs.libc_id_ok);
        CHECK(fs.maps_with_id >= 2);
        CHECK(fs.has_vdso);   /* with the build id read from its image in memory */
        CHECK(fs.has_kernel); /* the kernel pseudo module */
        if (dl_seen) segments_after_dl++;
        if (fs.has_dl) {
            dl_segments++;
            dl_seen = true;
        }
        /* symbols: one appended stream at the end, timestamp 0, naming every address */
        if (fs.cpu_samples > 0) {
            CHECK(fs.symbols > 0);
            CHECK_EQ_U64(fs.symbols_bad_shape, 0);
            CHECK_EQ_U64(fs.symbol_stream_min, fs.last_stream);
            for (int a = 0; a < fs.naddrs; a++) {
                if (!fs.names[a]) fprintf(stderr, "%s: no name for %#" PRIx64 "\n", files[i], fs.addrs[a]);
                CHECK(fs.names[a] != NULL);
            }
            for (size_t e = 0; e < g_nexpect; e++) {
                const char *got = name_of(&fs, g_expect[e].addr);
                if (!got) continue; /* not in this segment's samples (the dlopen'ed one) */
                bool ok = g_expect[e].name ? !strcmp(got, g_expect[e].name) : same_function(got, g_expect[e].fn, g_expect[e].handle);
                if (!ok) fprintf(stderr, "%s: %#" PRIx64 " named %s, want %s\n", files[i], g_expect[e].addr, got,
                                 g_expect[e].name ? g_expect[e].name : "an alias");
                CHECK(ok);
            }
        }
        free_seen(&fs);
    }
    if (h) {
        /* from the segment where it was noticed to the last one */
        CHECK(dl_seen);
        CHECK_EQ_U64(dl_segments, segments_after_dl + 1);
        CHECK(dl_segments >= 2);
    }
    d9t_free_list(files, n);
    free(exe);
    free(libc_path);
    free((void *)dl_path);
    pthread_mutex_destroy(&f.lock);
    d9t_rm_rf(dir);
    free(dir);
}

/* ------------------------------------------------------------------ part 2 */

/* Threads of this process named `name` now. */
static int threads_named(const char *name) {
    DIR *d = opendir("/proc/self/task");
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[300], comm[64] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        if (fgets(comm, sizeof comm, f)) comm[strcspn(comm, "\n")] = 0;
        fclose(f);
        n += strcmp(comm, name) == 0;
    }
    closedir(d);
    return n;
}

/* Sealed segments in run_dir now (trace.N.bin, not the .active one). */
static int sealed_segments(const char *run_dir) {
    DIR *d = opendir(run_dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        long num;
        int end = 0;
        n += sscanf(e->d_name, "trace.%ld.bin%n", &num, &end) == 1 && end > 0 && e->d_name[end] == 0;
    }
    closedir(d);
    return n;
}

__attribute__((noinline)) static void d9t_suspend_here(uint64_t task) {
    d9_task_suspend(task);
    __asm__ volatile("" ::: "memory");
}

static void test_recorder(void) {
    char *dir = d9t_mkdtemp("symrec");
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    cfg.max_file_size = 16384;
    cfg.cpu_profile = false;
    /* no switch stacks: preempted under load, each has new leaf addresses whose names could
     * outgrow the room kept in a 16 KiB segment (no_room below is checked exactly) */
    cfg.schedule_profile = false;
    cfg.symbolize_exit_wait_secs = 3600; /* every file is checked: only a hang may end the wait */
    CHECK(d9_start(&cfg) == 0);
    char run_dir[1024];
    snprintf(run_dir, sizeof run_dir, "%s", d9_run_dir());
    d9_worker_begin("io", 0);
    const char *dl_path = NULL;
    void *dl_fn, *h = NULL;
    for (int i = 0; i < 1500; i++) {
        d9_poll_begin((uint64_t)i + 1, D9_HERE);
        d9t_suspend_here((uint64_t)i + 1);
        d9_poll_end();
        if (i == 700) h = open_a_library(&dl_path, &dl_fn);
        if (i % 10 == 0) d9_flush();
    }
    d9_worker_end();
    /* sealed during the run: the preparing thread was created then (it names itself when it
     * first runs, hence the bounded wait) and lives until d9_stop */
    CHECK(sealed_segments(run_dir) >= 1);
    int named = 0;
    for (int i = 0; i < 1000 && named == 0; i++) {
        named = threads_named("dial9-pipeline");
        if (!named) usleep(10000);
    }
    CHECK_EQ_U64(named, 1);
    d9_stop();
    CHECK_EQ_U64(threads_named("dial9-pipeline"), 0);

    char *exe = exe_path();
    char exe_id[D9_BUILD_ID_HEX_MAX], dl_id[D9_BUILD_ID_HEX_MAX] = "";
    readelf_build_id(exe, exe_id, sizeof exe_id);
    if (dl_path) readelf_build_id(dl_path, dl_id, sizeof dl_id);
    char **files;
    int n = d9t_list_segments(run_dir, &files);
    CHECK(n >= 3);
    int with_dl = 0, dumps = 0, dumps_named = 0;
    for (int i = 0; i < n; i++) {
        file_seen fs = {0};
        seen_ctx c = {&fs, exe, exe_id, "", "", dl_path, dl_id};
        CHECK(d9t_decode_file(files[i], on_event, &c) == D9_DEC_END);
        check_within_limit(files[i], cfg.max_file_size);
        CHECK(fs.maps >= 3 && fs.has_exe && fs.exe_id_ok);
        with_dl += fs.has_dl;
        dumps += fs.task_dumps;
        for (int a = 0; a < fs.naddrs && fs.task_dumps; a++) {
            CHECK(fs.names[a] != NULL);
            dumps_named += fs.names[a] && !strcmp(fs.names[a], "d9t_suspend_here");
        }
        free_seen(&fs);
    }
    d9_symbolize_report rep;
    d9_symbolize_report_get(&rep);
    if (rep.last_error[0]) fprintf(stderr, "pipeline: %s\n", rep.last_error);
    CHECK_EQ_U64(rep.files_failed, 0);
    CHECK_EQ_U64(rep.files_dropped + rep.files_skipped, 0);
    CHECK_EQ_U64(rep.files_symbolized, (uint64_t)n);
    CHECK_EQ_U64(rep.no_room, 0); /* the room kept in each segment was enough */
    if (dumps > 0) CHECK(rep.files_from_writer >= 1); /* the only stacks: without them, nothing to name */
    CHECK_EQ_U64(rep.files_given_short, 0);
    if (h) CHECK(with_dl >= 1);
    if (dumps == 0) printf("skip: no TaskDumpEvent recorded (d9_task_suspend not ready)\n");
    else CHECK(dumps_named > 0);
    printf("recorder: %d segments, %d task dumps, dlopen seen in %d\n", n, dumps, with_dl);
    d9t_free_list(files, n);
    free(exe);
    free((void *)dl_path);
    d9t_rm_rf(dir);
    free(dir);
}

/* ------------------------------------------------------------------ part 3 */

static void short_run(uint32_t exit_wait_secs, d9_symbolize_report *rep, int *named, int *segments) {
    char *dir = d9t_mkdtemp("symshort");
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    cfg.cpu_profile = false;
    /* no switch stacks: a thread preempted under load adds leaf addresses of its own (under TSan
     * one in 64 could fall outside every symbol); the task dumps' addresses are all known */
    cfg.schedule_profile = false;
    cfg.symbolize_exit_wait_secs = exit_wait_secs;
    CHECK(d9_start(&cfg) == 0);
    char run_dir[1024];
    snprintf(run_dir, sizeof run_dir, "%s", d9_run_dir());
    d9_worker_begin("io", 0);
    for (int i = 0; i < 50; i++) {
        d9_poll_begin((uint64_t)i + 1, D9_HERE);
        d9t_suspend_here((uint64_t)i + 1);
        d9_poll_end();
    }
    /* the tasks stay suspended: the captures held are written by the next suspend after
     * their instants (mean 10 ms) */
    usleep(200 * 1000);
    d9_poll_begin(1000, D9_HERE);
    d9t_suspend_here(1000);
    d9_poll_end();
    d9_worker_end();
    d9_flush();
    CHECK_EQ_U64(sealed_segments(run_dir), 0); /* nothing sealed yet: no reason for a thread */
    CHECK_EQ_U64(threads_named("dial9-pipeline"), 0);
    d9_stop();
    CHECK_EQ_U64(threads_named("dial9-pipeline"), 0);
    d9_symbolize_report_get(rep);
    /* symbols appended in place touch the run directory after the file (run_ledger.h) */
    if (rep->bytes_appended > 0) {
        char seg[1100];
        snprintf(seg, sizeof seg, "%s/trace.0.bin", run_dir);
        struct stat ds, fs;
        CHECK(stat(run_dir, &ds) == 0 && stat(seg, &fs) == 0);
        CHECK(ds.st_mtim.tv_sec > fs.st_mtim.tv_sec ||
              (ds.st_mtim.tv_sec == fs.st_mtim.tv_sec && ds.st_mtim.tv_nsec >= fs.st_mtim.tv_nsec));
    }
    *segments = sealed_segments(run_dir);
    *named = 0;
    char **files;
    int n = d9t_list_segments(run_dir, &files);
    for (int i = 0; i < n; i++) {
        file_seen fs = {0};
        seen_ctx c = {&fs, "", "", "", "", NULL, ""};
        CHECK(d9t_decode_file(files[i], on_event, &c) == D9_DEC_END);
        for (int a = 0; a < fs.naddrs; a++) *named += fs.names[a] != NULL;
        free_seen(&fs);
    }
    if (n > 0) d9t_free_list(files, n);
    d9t_rm_rf(dir);
    free(dir);
}

static void test_short_run(void) {
    d9_symbolize_report rep;
    int named, segments;
    short_run(3600, &rep, &named, &segments);
    if (rep.last_error[0]) fprintf(stderr, "short run: %s\n", rep.last_error);
    CHECK_EQ_U64(segments, 1);
    CHECK_EQ_U64(rep.files_symbolized, 1); /* by d9_stop, on this thread */
    CHECK_EQ_U64(rep.files_failed + rep.files_skipped + rep.files_dropped, 0);
    if (rep.addresses == 0) printf("skip: no address to name in the short run (d9_task_suspend not ready)\n");
    else CHECK(named > 0 && rep.named == rep.addresses);
    printf("short run: symbolized by d9_stop, %" PRIu64 " of %" PRIu64 " addresses named\n", rep.named, rep.addresses);
    /* no time allowed at exit: given up at once, left for `dial9 symbolize` */
    short_run(0, &rep, &named, &segments);
    CHECK_EQ_U64(segments, 1);
    CHECK_EQ_U64(rep.files_symbolized, 0);
    CHECK_EQ_U64(rep.files_skipped, 1);
    CHECK_EQ_U64(named, 0);
}

int main(void) {
    d9_symbolize_check_given = true; /* each list the collector makes is checked against a scan */
    test_pipeline();
    test_recorder();
    test_short_run();
    return d9t_summary("test_mt_symbolize_pipeline");
}
