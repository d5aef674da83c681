/* Bounded disk and hostile disks, through the whole recorder:
 *  - rotation with tiny limits: bytes on disk never above max_total_size while recording,
 *    every sealed file decodes alone and starts with SegmentMetadataEvent + ClockSyncEvent;
 *    a second run in the same trace_dir deletes the oldest files first and keeps the budget;
 *  - a full disk (a small tmpfs, root only): the application keeps running, no hook stalls,
 *    losses are counted and reported as DroppedEventsEvent "write_error" once space returns;
 *  - the trace directory deleted while recording: recording continues in a recreated one. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <time.h>

#include "check.h"
#include "dial9/dial9.h"
#include "trace_files_util.h"

static uint64_t mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Bytes of all regular files under dir (two levels: runs and their files). */
static uint64_t disk_usage(const char *dir) {
    uint64_t total = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char sub[1024];
        snprintf(sub, sizeof sub, "%s/%s", dir, e->d_name);
        DIR *r = opendir(sub);
        struct dirent *f;
        while (r && (f = readdir(r))) {
            char path[2048];
            struct stat st;
            snprintf(path, sizeof path, "%s/%s", sub, f->d_name);
            if (f->d_name[0] != '.' && stat(path, &st) == 0 && S_ISREG(st.st_mode)) total += (uint64_t)st.st_size;
        }
        if (r) closedir(r);
    }
    if (d) closedir(d);
    return total;
}

static atomic_int g_stop;
static atomic_uint_least64_t g_iterations, g_stalled_bursts;
static atomic_int g_watch_stalls;

static uint64_t voluntary_switches(void) {
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    return (uint64_t)ru.ru_nvcsw;
}

/* A steady producer: ~1 event per µs in bursts, so files fill in well under a second. A
 * burst of hooks in which the thread gave up the CPU of its own accord (a voluntary context
 * switch: it waited for something) is a stalled hook; preemption by a busy machine is not. */
static void *producer(void *arg) {
    (void)arg;
    d9_worker_begin("disk", 0);
    uint64_t i = 0;
    while (!atomic_load(&g_stop)) {
        uint64_t v0 = voluntary_switches();
        for (int k = 0; k < 200; k++, i++) {
            d9_poll_begin(i % 1000, D9_HERE);
            d9_poll_end();
        }
        if (voluntary_switches() != v0 && atomic_load(&g_watch_stalls)) atomic_fetch_add(&g_stalled_bursts, 1);
        atomic_fetch_add(&g_iterations, 200);
        struct timespec nap = {0, 200 * 1000};
        nanosleep(&nap, NULL);
    }
    d9_worker_end();
    return NULL;
}

typedef struct file_check {
    uint64_t events;
    int first_meta, second_clock;
    uint64_t write_error_drops;
    uint64_t other_drops;
} file_check;

static void on_event(const d9_event *ev, void *ctx) {
    file_check *f = ctx;
    if (f->events == 0) f->first_meta = d9t_is(ev, "SegmentMetadataEvent");
    if (f->events == 1) f->second_clock = d9t_is(ev, "ClockSyncEvent");
    f->events++;
    d9_dec_str reason;
    if (d9t_is(ev, "DroppedEventsEvent") && d9_value_str(d9_event_field(ev, "reason"), &reason) &&
        reason.len == 11 && memcmp(reason.ptr, "write_error", 11) == 0)
        f->write_error_drops += d9t_field_u(ev, "count");
    else if (d9t_is(ev, "DroppedEventsEvent"))
        f->other_drops += d9t_field_u(ev, "count");
}

/* Record until this run has sealed `sealed` segments and (if `deleted`) deleted a file for the
 * budget: a count, not a duration, so that a starved producer on a loaded host only takes
 * longer (10 minutes at most, a safety net). */
static int record_until(const char *trace_dir, uint64_t max_file, uint64_t max_total,
                        uint64_t sealed, bool deleted, uint64_t *max_seen) {
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = trace_dir;
    cfg.max_file_size = max_file;
    cfg.max_total_size = max_total;
    cfg.flush_ms = 5;
    if (d9_start(&cfg) != 0) {
        fprintf(stderr, "d9_start: %s\n", d9_last_error());
        return -1;
    }
    atomic_store(&g_stop, 0);
    pthread_t th;
    pthread_create(&th, NULL, producer, NULL);
    uint64_t end = mono() + 600ull * 1000000000u;
    for (;;) {
        d9_stats st;
        d9_get_stats(&st);
        if ((st.segments_sealed >= sealed && (!deleted || st.files_deleted > 0)) || mono() > end) break;
        uint64_t u = disk_usage(trace_dir);
        /* readdir can list a file under both names while it is renamed: look again. */
        if (u > max_total) u = disk_usage(trace_dir);
        if (u > *max_seen) *max_seen = u;
        struct timespec nap = {0, 2 * 1000 * 1000};
        nanosleep(&nap, NULL);
    }
    atomic_store(&g_stop, 1);
    pthread_join(th, NULL);
    d9_stop();
    uint64_t u = disk_usage(trace_dir);
    if (u > *max_seen) *max_seen = u;
    return 0;
}

static void check_every_file_alone(const char *run_dir, int *files_out) {
    char **files;
    int n = d9t_list_segments(run_dir, &files);
    for (int i = 0; i < n; i++) {
        file_check f = {0};
        CHECK(d9t_decode_file(files[i], on_event, &f) == D9_DEC_END);
        CHECK(f.first_meta);
        CHECK(f.second_clock);
    }
    *files_out = n;
    d9t_free_list(files, n);
}

static void test_rotation_and_retention(void) {
    char *dir = d9t_mkdtemp("rotation");
    const uint64_t max_file = 64 * 1024, max_total = 320 * 1024;
    uint64_t max_seen = 0;
    CHECK(record_until(dir, max_file, max_total, 12, true, &max_seen) == 0);
    char first_run[1024];
    snprintf(first_run, sizeof first_run, "%s", d9_run_dir());
    d9_stats st;
    d9_get_stats(&st);
    int n;
    check_every_file_alone(first_run, &n);
    printf("rotation: %d files kept, %" PRIu64 " sealed, %" PRIu64 " deleted, max on disk %" PRIu64
           " of %" PRIu64 " bytes\n", n, st.segments_sealed, st.files_deleted, max_seen, max_total);
    CHECK(st.segments_sealed > 10);
    CHECK(st.files_deleted > 0);
    CHECK(max_seen <= max_total);

    /* The same trace_dir again: the earlier run's files go first, the budget holds. */
    max_seen = 0;
    /* 6 new segments with 5 of the old run's on disk: the budget must delete old ones */
    CHECK(record_until(dir, max_file, max_total, 6, false, &max_seen) == 0);
    CHECK(max_seen <= max_total);
    check_every_file_alone(d9_run_dir(), &n);
    CHECK(n > 0);
    int old_left;
    check_every_file_alone(first_run, &old_left);
    printf("restart: new run keeps %d files, old run keeps %d\n", n, old_left);
    d9t_rm_rf(dir);
    free(dir);
}

static void test_deleted_directory(void) {
    char *dir = d9t_mkdtemp("deleted");
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    cfg.flush_ms = 5;
    CHECK(d9_start(&cfg) == 0);
    d9_worker_begin("disk", 0);
    for (int i = 0; i < 1000; i++) { d9_poll_begin(1, D9_HERE); d9_poll_end(); }
    d9_flush();
    d9t_rm_rf(d9_run_dir());
    for (int i = 0; i < 1000; i++) { d9_poll_begin(2, D9_HERE); d9_poll_end(); }
    d9_flush();
    d9_stop();
    d9_worker_end();
    int n;
    check_every_file_alone(d9_run_dir(), &n);
    CHECK(n >= 1); /* the run continued in a recreated directory */
    d9t_rm_rf(dir);
    free(dir);
}

static void test_disk_full(void) {
    if (geteuid() != 0 || unshare(CLONE_NEWNS) != 0 ||
        mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
        printf("SKIP disk-full test: needs root and mount namespaces\n");
        return;
    }
    char *dir = d9t_mkdtemp("diskfull");
    if (mount("tmpfs", dir, "tmpfs", 0, "size=1m") != 0) {
        printf("SKIP disk-full test: cannot mount tmpfs: %s\n", strerror(errno));
        return;
    }
    /* Leave ~256 KiB free: a filler file takes the rest. */
    char filler[1100];
    snprintf(filler, sizeof filler, "%s/filler", dir);
    int fd = open(filler, O_CREAT | O_WRONLY, 0644);
    static char block[4096];
    for (int i = 0; i < 192; i++) CHECK(write(fd, block, sizeof block) == (ssize_t)sizeof block);
    close(fd);

    char traces[1200];
    snprintf(traces, sizeof traces, "%s/traces", dir);
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = traces;
    cfg.max_file_size = 4 << 20;
    cfg.max_total_size = 64 << 20; /* the budget is not what stops us: the disk is */
    cfg.flush_ms = 5;
    CHECK(d9_start(&cfg) == 0);
    atomic_store(&g_stop, 0);
    atomic_store(&g_stalled_bursts, 0);
    pthread_t th;
    pthread_create(&th, NULL, producer, NULL);
    /* until the disk is full (however long the machine takes), then 100000 more hooks: a
     * stalled application would never get there (the test's timeout says so) */
    struct timespec nap = {0, 10 * 1000 * 1000};
    d9_stats mid;
    for (d9_get_stats(&mid); mid.write_errors == 0; d9_get_stats(&mid)) nanosleep(&nap, NULL);
    atomic_store(&g_watch_stalls, 1);
    uint64_t it0 = atomic_load(&g_iterations), it1;
    while ((it1 = atomic_load(&g_iterations)) - it0 < 100000) nanosleep(&nap, NULL);
    atomic_store(&g_watch_stalls, 0);
    atomic_store(&g_stop, 1);
    pthread_join(th, NULL);
    unlink(filler); /* space returns: the next write says what was lost */
    for (int i = 0; i < 100; i++) {
        d9_poll_begin(5, D9_HERE);
        d9_poll_end();
    }
    d9_stop();
    d9_stats st;
    d9_get_stats(&st);
    printf("disk full: %" PRIu64 " write errors, %" PRIu64 " events dropped, %" PRIu64
           " hooks with the disk full, %" PRIu64 " bursts of them that waited\n",
           st.write_errors, st.events_dropped, it1 - it0, atomic_load(&g_stalled_bursts));
    CHECK(mid.write_errors > 0);
    CHECK(it1 - it0 >= 100000); /* the application kept going */
#if !defined(__SANITIZE_THREAD__)
    CHECK_EQ_U64(atomic_load(&g_stalled_bursts), 0); /* and no hook waited (TSan's runtime may) */
#endif
    file_check total = {0};
    char **files;
    int n = d9t_list_segments(d9_run_dir(), &files);
    for (int i = 0; i < n; i++) CHECK(d9t_decode_file(files[i], on_event, &total) == D9_DEC_END);
    d9t_free_list(files, n);
    CHECK(total.write_error_drops > 0);
    CHECK_EQ_U64(total.write_error_drops + total.other_drops, st.events_dropped);
    umount2(dir, MNT_DETACH);
    rmdir(dir);
    free(dir);
}

/* The disk fills up and never frees up again, to the end of the run (a 3 MB tmpfs): the final
 * drop accounting must still reach the trace, into the room the writer set aside for it, and
 * `dial9 stats` must say what the recorder counted. */
static void test_disk_full_to_the_end(void) {
    char *dir = d9t_mkdtemp("fulltoend");
    if (mount("tmpfs", dir, "tmpfs", 0, "size=3m") != 0) {
        printf("SKIP disk-full-to-the-end test: cannot mount tmpfs: %s\n", strerror(errno));
        return;
    }
    char traces[1200];
    snprintf(traces, sizeof traces, "%s/traces", dir);
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = traces;
    cfg.max_file_size = 1 << 20;
    cfg.max_total_size = 64 << 20; /* the disk stops us, not the budget */
    cfg.flush_ms = 5;
    CHECK(d9_start(&cfg) == 0);
    char run_dir[1200];
    snprintf(run_dir, sizeof run_dir, "%s", d9_run_dir());
    /* Fill what is left of the disk behind the recorder's back, and keep it full. */
    char filler[1300];
    snprintf(filler, sizeof filler, "%s/filler", dir);
    int fd = open(filler, O_CREAT | O_WRONLY, 0644);
    static char block[4096];
    while (write(fd, block, sizeof block) == (ssize_t)sizeof block) {}
    close(fd);
    atomic_store(&g_stop, 0);
    pthread_t th;
    pthread_create(&th, NULL, producer, NULL);
    struct timespec nap = {0, 500 * 1000 * 1000};
    nanosleep(&nap, NULL);
    atomic_store(&g_stop, 1);
    pthread_join(th, NULL);
    d9_stop(); /* the disk is still full */
    d9_stats st;
    d9_get_stats(&st);
    printf("disk full to the end: %" PRIu64 " events recorded, %" PRIu64 " dropped, %" PRIu64 " write errors\n",
           st.events_recorded, st.events_dropped, st.write_errors);
    CHECK(st.write_errors > 0 && st.events_dropped > 0);
    file_check total = {0};
    char **files;
    int n = d9t_list_segments(run_dir, &files);
    for (int i = 0; i < n; i++) CHECK(d9t_decode_file(files[i], on_event, &total) == D9_DEC_END);
    d9t_free_list(files, n);
    CHECK_EQ_U64(total.write_error_drops + total.other_drops, st.events_dropped);
    /* what `dial9 stats` (and `dial9 run`'s summary, from the same events) shows */
    const char *build = getenv("D9_BUILD_DIR");
    char cli[2048] = "";
    if (build) snprintf(cli, sizeof cli, "%s/dial9", build);
    if (!build || access(cli, X_OK) != 0) {
        printf("skip: `dial9 stats` not checked: no dial9 binary in D9_BUILD_DIR\n");
    } else {
        char cmd[2600];
        snprintf(cmd, sizeof cmd, "'%s/dial9' stats --json '%s'", build, run_dir);
        FILE *p = popen(cmd, "r");
        char out[1 << 16];
        size_t len = p ? fread(out, 1, sizeof out - 1, p) : 0;
        out[len] = 0;
        if (p) pclose(p);
        const char *drops = strstr(out, "\"drops\":");
        const char *total_at = drops ? strstr(drops, "\"total\":") : NULL;
        CHECK(total_at != NULL);
        if (total_at) CHECK_EQ_U64(strtoull(total_at + 8, NULL, 10), st.events_dropped);
    }
    char leftover[1300];
    snprintf(leftover, sizeof leftover, "%s/.final-accounting", run_dir);
    CHECK(access(leftover, F_OK) != 0); /* used up, or removed */
    umount2(dir, MNT_DETACH);
    rmdir(dir);
    free(dir);
}

/* Polls of task `task` in the trace */
typedef struct task_count {
    uint64_t task, polls, write_error_drops;
} task_count;

static void count_task_polls(const d9_event *ev, void *ctx) {
    task_count *t = ctx;
    if (d9t_is(ev, "PollStartEvent") && d9t_field_u(ev, "task_id") == t->task) t->polls++;
    d9_dec_str reason;
    if (d9t_is(ev, "DroppedEventsEvent") && d9_value_str(d9_event_field(ev, "reason"), &reason) &&
        reason.len == 11 && memcmp(reason.ptr, "write_error", 11) == 0)
        t->write_error_drops += d9t_field_u(ev, "count");
}

static void polls_of(uint64_t task, int n) {
    for (int i = 0; i < n; i++) {
        d9_poll_begin(task, D9_HERE);
        d9_poll_end();
        if (i % 256 == 255) d9_flush(); /* never a drop for a full ring: only the disk's */
    }
    d9_flush();
}

/* The disk is full before the recorder starts (no block and no inode left: not even the run
 * directory can be made). d9_start succeeds and says why nothing is written; once the disk
 * frees up, what is recorded reaches the trace, with the loss before it counted, and the run
 * directory gets its .s3-run (S3 unreachable here), so that a later start or `dial9 upload`
 * files what it left under its service. */
static void test_disk_full_at_start(void) {
    if (geteuid() != 0) {
        printf("SKIP disk-full-at-start test: needs root\n");
        return;
    }
    char *dir = d9t_mkdtemp("fullatstart");
    if (mount("tmpfs", dir, "tmpfs", 0, "size=1m,nr_inodes=64") != 0) {
        printf("SKIP disk-full-at-start test: cannot mount tmpfs: %s\n", strerror(errno));
        return;
    }
    char traces[1200], path[1300];
    snprintf(traces, sizeof traces, "%s/traces", dir);
    CHECK(mkdir(traces, 0755) == 0);
    int files = 0, fd;
    for (;; files++) { /* every inode taken */
        snprintf(path, sizeof path, "%s/inode.%d", dir, files);
        if ((fd = open(path, O_CREAT | O_WRONLY, 0644)) < 0) break;
        close(fd);
    }
    CHECK(errno == ENOSPC);
    snprintf(path, sizeof path, "%s/inode.0", dir); /* and every block, in the first of them */
    fd = open(path, O_WRONLY);
    static char block[4096];
    while (write(fd, block, sizeof block) == (ssize_t)sizeof block) {}
    close(fd);
    snprintf(path, sizeof path, "%s/probe", traces);
    CHECK(mkdir(path, 0755) != 0 && errno == ENOSPC); /* the disk is full indeed */

    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = traces;
    cfg.max_file_size = 1 << 20;
    cfg.max_total_size = 64 << 20; /* the disk stops us, not the budget */
    cfg.symbolize = false;
    /* uploading, to a port where nothing listens: what stays on disk must be adoptable later,
     * under this run's service (.s3-run, written once the run directory exists) */
    setenv("AWS_EC2_METADATA_DISABLED", "true", 1); /* as under ctest: run by hand too, no IMDS request */
    cfg.s3_bucket = "d9-full-at-start";
    cfg.s3_endpoint = "http://127.0.0.1:9";
    cfg.s3_exit_wait_secs = 0;
    cfg.compress = D9_COMPRESS_NONE;
    cfg.service = "full-at-start";
    int rc = d9_start(&cfg);
    if (rc != 0) fprintf(stderr, "d9_start on a full disk: %s\n", d9_last_error());
    CHECK(rc == 0);
    CHECK(strstr(d9_last_error(), strerror(ENOSPC)) != NULL); /* why nothing is written, yet */
    char run_dir[1200];
    snprintf(run_dir, sizeof run_dir, "%s", d9_run_dir());
    d9_worker_begin("full-at-start", 0);
    polls_of(1111, 2000); /* lost: the disk is full */
    d9_stats mid;
    d9_get_stats(&mid);
    CHECK(mid.write_errors > 0);
    for (int i = 0; i < files; i++) { /* the disk frees up */
        snprintf(path, sizeof path, "%s/inode.%d", dir, i);
        unlink(path);
    }
    polls_of(2222, 2000);
    d9_worker_end();
    d9_stop();
    d9_stats st;
    d9_get_stats(&st);
    task_count before = {.task = 1111}, after = {.task = 2222};
    char **segs;
    int n = d9t_list_segments(run_dir, &segs);
    CHECK(n > 0);
    for (int i = 0; i < n; i++) {
        CHECK(d9t_decode_file(segs[i], count_task_polls, &before) == D9_DEC_END);
        CHECK(d9t_decode_file(segs[i], count_task_polls, &after) == D9_DEC_END);
    }
    d9t_free_list(segs, n);
    printf("disk full at start: %" PRIu64 " write errors, %" PRIu64 " events dropped; after it freed up %" PRIu64
           " of 2000 polls in the trace\n", st.write_errors, st.events_dropped, after.polls);
    CHECK_EQ_U64(after.polls, 2000);       /* recorded once there was room */
    CHECK(before.polls < 2000);            /* some were lost while it was full */
    CHECK(after.write_error_drops > 0);    /* and the loss is in the trace */
    CHECK_EQ_U64(after.write_error_drops, st.events_dropped);
    char identity[1300], line[256] = "";
    snprintf(identity, sizeof identity, "%s/.s3-run", run_dir);
    FILE *f = fopen(identity, "r");
    CHECK(f != NULL);
    if (f) {
        CHECK(fgets(line, sizeof line, f) != NULL);
        fclose(f);
    }
    CHECK_STR(line, "service=full-at-start\n");
    umount2(dir, MNT_DETACH);
    rmdir(dir);
    free(dir);
}

int main(void) {
    test_rotation_and_retention();
    test_deleted_directory();
    test_disk_full();
    test_disk_full_to_the_end();
    test_disk_full_at_start();
    return d9t_summary("recorder_disk");
}
