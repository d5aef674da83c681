/* The pipeline's cost off the application threads, on one segment of real trace data:
 *   d9_bench_upload --make DIR MB   record a segment of about MB MiB (polls, wakes, spawns) and
 *                                   print its path
 *   d9_bench_upload FILE [gzip|zstd]  compress FILE (a copy; default gzip) and upload the result
 *                                   to the S3 given by the environment (DIAL9_S3_BUCKET,
 *                                   AWS_ENDPOINT_URL, keys); prints CPU ms per MB, throughput and
 *                                   the peak memory the steps added to this process (VmHWM -
 *                                   VmRSS at start: one codec per process, so that it is its own). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dial9/dial9.h"
#include "sinks/step_compress.h"
#include "sinks/step_upload.h"

static double cpu_ms(void) {
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

static double wall_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static long status_kb(const char *field) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, field, strlen(field)) == 0) v = strtol(line + strlen(field), NULL, 10);
    if (f) fclose(f);
    return v;
}

static int make_segment(const char *dir, unsigned mb) {
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    cfg.symbolize = false;
    cfg.schedule_profile = false;
    cfg.task_dumps = false;
    cfg.rotation_secs = 0;
    cfg.max_file_size = (uint64_t)(mb + 1) * 1024 * 1024;
    cfg.max_total_size = cfg.max_file_size * 4;
    if (d9_start(&cfg) != 0) {
        fprintf(stderr, "start: %s\n", d9_last_error());
        return 1;
    }
    d9_worker_begin("bench", 0);
    d9_stats st;
    uint64_t task = 1;
    do {
        for (int i = 0; i < 20000; i++, task++) {
            d9_task_spawn(task, D9_HERE);
            d9_poll_begin(task, D9_HERE);
            d9_wake(task + 1);
            d9_poll_end();
            if (i % 1000 == 0) { d9_park(); d9_unpark(); }
        }
        d9_flush();
        d9_get_stats(&st);
    } while (st.bytes_written < (uint64_t)mb * 1024 * 1024);
    d9_stop();
    printf("%s/trace.0.bin\n", d9_run_dir());
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "--make") == 0) return make_segment(argv[2], (unsigned)atoi(argv[3]));
    d9_compress_mode mode = argc == 3 && strcmp(argv[2], "zstd") == 0 ? D9_COMPRESS_ZSTD : D9_COMPRESS_GZIP;
    if (argc < 2 || argc > 3 || (argc == 3 && strcmp(argv[2], "zstd") != 0 && strcmp(argv[2], "gzip") != 0)) {
        fprintf(stderr, "usage: d9_bench_upload --make DIR MB | d9_bench_upload FILE [gzip|zstd]\n");
        return 2;
    }
    const char *codec = mode == D9_COMPRESS_ZSTD ? "zstd" : "gzip";
    long rss0 = status_kb("VmRSS:");
    char copy[4096], gz[4096], err[1024], key[4096];
    snprintf(copy, sizeof copy, "%s.bench.bin", argv[1]);
    char cmd[8300];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", argv[1], copy);
    if (system(cmd) != 0) return 1;
    struct stat st;
    stat(copy, &st);
    double mb = st.st_size / 1048576.0;
    uint64_t gz_size;
    double c0 = cpu_ms(), w0 = wall_ms();
    if (d9_step_compress(AT_FDCWD, copy, mode, gz, sizeof gz, &gz_size, NULL, NULL, err, sizeof err) != 0) {
        fprintf(stderr, "compress: %s\n", err);
        return 1;
    }
    double c1 = cpu_ms(), w1 = wall_ms();
    long hwm_compress = status_kb("VmHWM:");
    printf("segment %.1f MiB -> %.1f MiB %s (%.1fx)\n", mb, gz_size / 1048576.0, codec, st.st_size / (double)gz_size);
    printf("compress: %.1f ms CPU per MiB in, %.0f MiB/s\n", (c1 - c0) / mb, mb / ((w1 - w0) / 1e3));
    d9_config cfg;
    if (d9_config_from_env(&cfg) != 0 || !cfg.s3_bucket) {
        printf("upload: skipped (set DIAL9_S3_BUCKET, AWS_ENDPOINT_URL and keys; bench/s3/run.sh does)\n");
    } else {
        cfg.service = "bench";
        d9_uploader *u = d9_uploader_new(&cfg, err, sizeof err);
        if (!u) {
            fprintf(stderr, "uploader: %s\n", err);
            return 1;
        }
        double c2 = cpu_ms(), w2 = wall_ms();
        d9_upload_result r = d9_uploader_put(u, gz, 0, time(NULL), NULL, NULL, NULL, NULL, key, sizeof key, err, sizeof err);
        double c3 = cpu_ms(), w3 = wall_ms();
        if (r != D9_UPLOAD_OK) {
            fprintf(stderr, "upload: %s\n", err);
            return 1;
        }
        double gmb = gz_size / 1048576.0;
        printf("upload: %.1f ms CPU per MiB sent (hash + send), %.0f MiB/s to loopback\n", (c3 - c2) / gmb,
               gmb / ((w3 - w2) / 1e3));
        printf("compress + upload: %.1f ms CPU per MiB of segment\n", ((c1 - c0) + (c3 - c2)) / mb);
        d9_uploader_free(u);
    }
    long hwm = status_kb("VmHWM:");
    printf("peak memory added by the steps: compress %ld KiB, compress + upload %ld KiB\n", hwm_compress - rss0,
           hwm - rss0);
    unlink(gz);
    return 0;
}
