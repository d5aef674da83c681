/* The compress step through the recorder: with DIAL9_COMPRESS=gzip every sealed segment
 * becomes trace.N.bin.gz (a plain gzip member: magic 1f 8b, decoded by our reader), with zstd
 * trace.N.bin.zst (a zstd frame: magic 28 b5 2f fd), no .bin and no temporary is left, and
 * every recorded event is in them once. With the default (auto, no bucket) segments stay .bin.
 *
 * `--record DIR N` records N TaskSpawnEvents (task ids 1..N) with the configuration from the
 * environment into DIR and prints the run directory: the S3 upload test's recorder.
 * `--record-until DIR STOPFILE [PAUSE_MS]` records TaskSpawnEvents (ids 1, 2, ...) in batches
 * of 512, PAUSE_MS (default 2) apart, until STOPFILE exists, then prints "spawns N",
 * "deleted D" (sealed files the disk budget deleted) and "dropped X": an application that keeps
 * running through an S3 fault (a slower one where the volume does not matter: fewer events to
 * check). It creates STOPFILE.write-errors once the recorder has counted a failed write (a
 * full disk), for a test to wait on. */
#include <dirent.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "dial9/dial9.h"
#include "sinks/step_compress.h"
#include "sinks/upload_retry.h"
#include "trace_files_util.h"

typedef struct seen {
    uint64_t n;
    unsigned char *ids; /* times each task id 1..n was seen */
    uint64_t spawns, dupes, out_of_range;
} seen;

static void on_event(const d9_event *ev, void *ctx) {
    seen *s = ctx;
    if (!d9t_is(ev, "TaskSpawnEvent")) return;
    uint64_t id = d9t_field_u(ev, "task_id");
    s->spawns++;
    if (id < 1 || id > s->n) { s->out_of_range++; return; }
    if (s->ids[id - 1]++) s->dupes++;
}

static int record(const char *dir, uint64_t n, d9_compress_mode mode, bool from_env) {
    d9_config cfg;
    if (from_env) {
        if (d9_config_from_env(&cfg) != 0) {
            fprintf(stderr, "config: %s\n", d9_last_error());
            return 2;
        }
    } else {
        d9_config_init(&cfg);
        cfg.compress = mode;
        cfg.symbolize = false;
        cfg.max_file_size = 64 * 1024; /* several segments */
    }
    cfg.trace_dir = dir;
    cfg.schedule_profile = false;
    cfg.task_dumps = false;
    if (d9_start(&cfg) != 0) {
        fprintf(stderr, "start: %s\n", d9_last_error());
        return 2;
    }
    d9_worker_begin("compress-test", 0);
    for (uint64_t i = 1; i <= n; i++) {
        d9_task_spawn(i, D9_HERE);
        if (i % 512 == 0) d9_flush(); /* never drop for a full buffer */
    }
    d9_stop();
    d9_stats st;
    d9_get_stats(&st);
    if (st.events_dropped) fprintf(stderr, "dropped %llu events\n", (unsigned long long)st.events_dropped);
    printf("%s\n", d9_run_dir());
    return st.events_dropped ? 3 : 0;
}

static int record_until(const char *dir, const char *stop_file, long pause_ms) {
    d9_config cfg;
    if (d9_config_from_env(&cfg) != 0) {
        fprintf(stderr, "config: %s\n", d9_last_error());
        return 2;
    }
    cfg.trace_dir = dir;
    cfg.schedule_profile = false;
    cfg.task_dumps = false;
    if (d9_start(&cfg) != 0) {
        fprintf(stderr, "start: %s\n", d9_last_error());
        return 2;
    }
    d9_worker_begin("fault-test", 0);
    uint64_t id = 0;
    bool write_errors_said = false;
    char marker[4200];
    snprintf(marker, sizeof marker, "%s.write-errors", stop_file);
    while (access(stop_file, F_OK) != 0) {
        for (int i = 0; i < 512; i++) d9_task_spawn(++id, D9_HERE);
        d9_flush(); /* never drop for a full buffer */
        d9_stats now;
        d9_get_stats(&now);
        if (now.write_errors && !write_errors_said) {
            FILE *f = fopen(marker, "w");
            if (f) fclose(f);
            write_errors_said = true;
        }
        struct timespec pause = {pause_ms / 1000, pause_ms % 1000 * 1000000}; /* steady, not a flood */
        nanosleep(&pause, NULL);
    }
    d9_stop();
    d9_stats st;
    d9_get_stats(&st);
    if (st.events_dropped) fprintf(stderr, "dropped %llu events\n", (unsigned long long)st.events_dropped);
    printf("spawns %llu\ndeleted %llu\ndropped %llu\n", (unsigned long long)id, (unsigned long long)st.files_deleted,
           (unsigned long long)st.events_dropped);
    return st.events_dropped ? 3 : 0;
}

static int count_names(const char *dir, const char *suffix, int *other) {
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2]))) continue;
        if (strcmp(e->d_name, ".final-accounting") == 0) continue;
        size_t l = strlen(e->d_name), sl = strlen(suffix);
        if (l > sl && strcmp(e->d_name + l - sl, suffix) == 0) n++;
        else (*other)++;
    }
    if (d) closedir(d);
    return n;
}

/* suffix: what every segment must end with; magic: its first bytes (NULL: not checked) */
static void check_run(const char *tag, d9_compress_mode mode, const char *suffix, const char *magic) {
    char *dir = d9t_mkdtemp(tag);
    const uint64_t n = 20000;
    fflush(stdout);
    CHECK(record(dir, n, mode, false) == 0);
    const char *run = d9_run_dir();
    CHECK(run != NULL);
    if (!run) return;
    int other = 0;
    int files = count_names(run, suffix, &other);
    CHECK(files >= 2); /* 20000 spawns do not fit in one 64 KiB segment */
    CHECK_EQ_U64(other, 0); /* no .bin beside a compressed one, no temporary left */
    char **list;
    int nl = d9t_list_segments(run, &list);
    CHECK_EQ_U64(nl, files);
    size_t ml = magic ? strlen(magic) : 0;
    for (int i = 0; magic && i < nl; i++) {
        FILE *f = fopen(list[i], "rb");
        char m[8] = {0};
        CHECK(f && fread(m, 1, ml, f) == ml && memcmp(m, magic, ml) == 0);
        if (f) fclose(f);
    }
    d9t_free_list(list, nl);
    seen s = {.n = n, .ids = calloc(n, 1)};
    CHECK_EQ_U64(d9t_decode_run(run, on_event, &s), 0);
    CHECK_EQ_U64(s.spawns, n);
    CHECK_EQ_U64(s.dupes, 0);
    CHECK_EQ_U64(s.out_of_range, 0);
    free(s.ids);
    d9t_rm_rf(dir);
    free(dir);
}

/* A segment compressed long after it began (an outage's backlog, a later `dial9 upload`) keeps
 * its start: the key's date, time and epoch come from it. The compressed file is born later, so
 * the clock is let pass two seconds first (a wait for a state, not a timed check). */
static void test_start_kept(void) {
    char *dir = d9t_mkdtemp("start");
    static const d9_compress_mode modes[] = {D9_COMPRESS_GZIP, D9_COMPRESS_ZSTD};
    char bin[2][1200];
    time_t start[2];
    for (int i = 0; i < 2; i++) {
        snprintf(bin[i], sizeof bin[i], "%s/trace.%d.bin", dir, i);
        FILE *f = fopen(bin[i], "wb");
        CHECK(f && fputs("not a trace, just bytes", f) >= 0);
        if (f) fclose(f);
        start[i] = d9_segment_start_time(bin[i]);
    }
    while (time(NULL) < start[1] + 2) {
        struct timespec nap = {0, 50 * 1000 * 1000};
        nanosleep(&nap, NULL);
    }
    for (int i = 0; i < 2; i++) {
        char out[1300], err[512];
        uint64_t size;
        CHECK(d9_step_compress(AT_FDCWD, bin[i], modes[i], out, sizeof out, &size, NULL, NULL, err, sizeof err) == 0);
        CHECK_EQ_U64((uint64_t)d9_segment_start_time(out), (uint64_t)start[i]);
    }
    d9t_rm_rf(dir);
    free(dir);
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "--record") == 0)
        return record(argv[2], strtoull(argv[3], NULL, 10), D9_COMPRESS_AUTO, true);
    if ((argc == 4 || argc == 5) && strcmp(argv[1], "--record-until") == 0)
        return record_until(argv[2], argv[3], argc == 5 ? strtol(argv[4], NULL, 10) : 2);
    check_run("gzip", D9_COMPRESS_GZIP, ".bin.gz", "\x1f\x8b");
    check_run("zstd", D9_COMPRESS_ZSTD, ".bin.zst", "\x28\xb5\x2f\xfd");
    check_run("auto", D9_COMPRESS_AUTO, ".bin", NULL); /* no bucket: nothing compressed */
    test_start_kept();
    return d9t_summary("test_pipeline_compress");
}
