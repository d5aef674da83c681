/* Upload until stored (see upload_retry.h). */
#include "sinks/upload_retry.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sinks/step_compress.h"
#include "common/segment_name.h"

#define RETRY_FIRST_MS 500u
#define RETRY_MAX_MS 60000u
#define MAX_RUN_FILES 100000

void d9_upload_retry_init(d9_upload_retry *r, d9_uploader *uploader, const char *who) {
    memset(r, 0, sizeof *r);
    r->uploader = uploader;
    r->who = who ? who : "dial9";
    r->rng = ((uint64_t)time(NULL) * 0x9E3779B97F4A7C15ull ^ (uint64_t)getpid() ^ (uint64_t)(uintptr_t)r) | 1;
}

void d9_upload_retry_free(d9_upload_retry *r) {
    d9_uploader_free(r->uploader);
    r->uploader = NULL;
}

static bool given_up(const d9_upload_retry *r) { return r->give_up && r->give_up(r->ctx); }

static uint64_t next_random(d9_upload_retry *r) { /* xorshift64: jitter only */
    r->rng ^= r->rng << 13;
    r->rng ^= r->rng >> 7;
    r->rng ^= r->rng << 17;
    return r->rng;
}

/* Sleep up to ms, waking early when given up (polled every 50 ms). */
static void backoff_sleep(d9_upload_retry *r, uint32_t ms) {
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    uint64_t t = (uint64_t)until.tv_nsec + (uint64_t)ms * 1000000u;
    until.tv_sec += (time_t)(t / 1000000000u);
    until.tv_nsec = (long)(t % 1000000000u);
    for (;;) {
        if (given_up(r)) return;
        struct timespec now, step = {0, 50 * 1000000};
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec > until.tv_sec || (now.tv_sec == until.tv_sec && now.tv_nsec >= until.tv_nsec)) return;
        nanosleep(&step, NULL);
    }
}

static void resized(d9_upload_retry *r, const char *sealed_path, uint64_t size) {
    if (r->on_resized) r->on_resized(sealed_path, size, r->ctx);
}

time_t d9_segment_start_time(const char *path) {
    struct statx sx;
    if (statx(AT_FDCWD, path, 0, STATX_BTIME | STATX_MTIME, &sx) == 0) {
        if (sx.stx_mask & STATX_BTIME) return (time_t)sx.stx_btime.tv_sec;
        return (time_t)sx.stx_mtime.tv_sec;
    }
    return time(NULL);
}

bool d9_upload_retry_file(d9_upload_retry *r, const char *sealed_path, const char *path, uint64_t seq,
                          time_t start, const char *service, const char *boot_id) {
    uint32_t delay = RETRY_FIRST_MS;
    for (unsigned attempt = 1; r->uploader; attempt++) {
        char key[4096], err[2048] = "";
        struct stat st;
        uint64_t size = stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
        d9_upload_result res = d9_uploader_put(r->uploader, path, seq, start, service, boot_id, r->give_up, r->ctx,
                                               key, sizeof key, err, sizeof err);
        if (res == D9_UPLOAD_OK) {
            if (r->failing)
                fprintf(stderr, "%s: S3 upload works again (%s%s stored after %u attempts)\n", r->who,
                        d9_uploader_target(r->uploader), key, attempt);
            r->failing = false;
            r->stored++;
            r->stored_bytes += size;
            if (!r->keep_local && (unlink(path) == 0 || errno == ENOENT)) resized(r, sealed_path, 0);
            return true;
        }
        if (res == D9_UPLOAD_FATAL) {
            snprintf(r->fatal, sizeof r->fatal, "%s", err);
            d9_uploader_free(r->uploader);
            r->uploader = NULL;
            break;
        }
        if (res == D9_UPLOAD_REJECTED) {
            fprintf(stderr, "%s: S3 upload of %s failed, the file stays on disk: %s\n", r->who, path, err);
            break;
        }
        if (given_up(r)) {
            fprintf(stderr, "%s: S3 upload of %s not done in the time allowed, the file stays on disk "
                            "(last error: %s)\n", r->who, path, err);
            break;
        }
        if (r->max_attempts && attempt >= r->max_attempts) {
            fprintf(stderr, "%s: S3 upload of %s failed %u times, the file stays on disk (last error: %s)\n",
                    r->who, path, attempt, err);
            break;
        }
        if (!r->failing)
            fprintf(stderr, "%s: S3 upload failing, retrying with backoff (said once per outage): %s\n", r->who, err);
        r->failing = true;
        /* exponential backoff with jitter: a random wait in [delay/2, delay] */
        uint32_t wait = delay / 2 + (uint32_t)(next_random(r) % (delay / 2 + 1));
        backoff_sleep(r, wait);
        delay = delay >= RETRY_MAX_MS / 2 ? RETRY_MAX_MS : delay * 2;
    }
    r->not_stored++;
    return false;
}

static int by_seq(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

bool d9_upload_retry_run_dir(d9_upload_retry *r, const char *run_dir, const char *service, const char *boot_id) {
    DIR *d = opendir(run_dir);
    if (!d) return true;
    size_t n = 0, cap = 64;
    uint64_t *seqs = malloc(cap * sizeof *seqs);
    struct dirent *e;
    while (seqs && (e = readdir(d)) && n < MAX_RUN_FILES) {
        uint64_t seq;
        d9_segment_kind kind;
        if (!d9_segment_name_parse(e->d_name, &seq, &kind) || kind == D9_SEGMENT_ACTIVE) continue;
        if (n == cap) {
            uint64_t *p = realloc(seqs, 2 * cap * sizeof *seqs);
            if (!p) break;
            seqs = p;
            cap *= 2;
        }
        seqs[n++] = seq;
    }
    closedir(d);
    if (!seqs) return true;
    qsort(seqs, n, sizeof *seqs, by_seq);
    bool go_on = true;
    for (size_t i = 0; i < n; i++) {
        if (!r->uploader || given_up(r)) {
            go_on = false;
            break;
        }
        if (i && seqs[i] == seqs[i - 1]) continue; /* .bin and .bin.gz both: handled once */
        char bin[4096], gz[4104], err[512];
        snprintf(bin, sizeof bin, "%s/trace.%llu.bin", run_dir, (unsigned long long)seqs[i]);
        snprintf(gz, sizeof gz, "%s.gz", bin);
        struct stat st;
        if (stat(gz, &st) == 0) {
            unlink(bin); /* a compression interrupted between rename and unlink: the .gz is whole */
            d9_upload_retry_file(r, bin, gz, seqs[i], d9_segment_start_time(gz), service, boot_id);
            continue;
        }
        time_t start = d9_segment_start_time(bin);
        uint64_t gz_size;
        if (r->compress && d9_step_compress_gzip(bin, gz, sizeof gz, &gz_size, r->give_up, r->ctx, err, sizeof err) != 0) {
            if (given_up(r)) {
                go_on = false;
                break;
            }
            fprintf(stderr, "%s: compressing %s failed, uploaded as it is: %s\n", r->who, bin, err);
            snprintf(gz, sizeof gz, "%s", bin);
        } else if (!r->compress) {
            snprintf(gz, sizeof gz, "%s", bin);
        }
        d9_upload_retry_file(r, bin, gz, seqs[i], start, service, boot_id);
    }
    free(seqs);
    return go_on && r->uploader != NULL;
}
