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

#include "common/segment_name.h"
#include "sinks/step_compress.h"
#include "sinks/step_tables.h"

#define MAX_RUN_FILES 100000

void d9_upload_retry_init(d9_upload_retry *r, d9_uploader *uploader, const char *who) {
    memset(r, 0, sizeof *r);
    r->uploader = uploader;
    d9_upload_pace_init(&r->pace, who);
}

void d9_upload_retry_free(d9_upload_retry *r) {
    d9_uploader_free(r->uploader);
    r->uploader = NULL;
    d9_tables_step_free(r->tables);
    r->tables = NULL;
}

static bool given_up(const d9_upload_retry *r) { return d9_upload_pace_given_up(&r->pace); }

static bool file_gone(const char *path) {
    struct stat st;
    return stat(path, &st) != 0 && errno == ENOENT;
}

static void resized(d9_upload_retry *r, const char *sealed_path, uint64_t size) {
    if (r->on_resized) r->on_resized(sealed_path, size, r->pace.ctx);
}

time_t d9_segment_start_time(const char *path) {
    size_t n = strlen(path);
    /* a compressed file is born when it was compressed; the compress step set its modification
     * time to the segment's start (step_compress.c) */
    bool compressed = (n > 3 && strcmp(path + n - 3, ".gz") == 0) || (n > 4 && strcmp(path + n - 4, ".zst") == 0);
    struct statx sx;
    if (statx(AT_FDCWD, path, 0, STATX_BTIME | STATX_MTIME, &sx) == 0) {
        if ((sx.stx_mask & STATX_BTIME) && !compressed) return (time_t)sx.stx_btime.tv_sec;
        return (time_t)sx.stx_mtime.tv_sec;
    }
    return time(NULL);
}

bool d9_upload_retry_file(d9_upload_retry *r, const char *sealed_path, const char *path, uint64_t seq,
                          time_t start, const char *service, const char *boot_id) {
    char err[2048] = "";
    for (unsigned attempt = 1; r->uploader && !r->pace.quit; attempt++) {
        if (!d9_upload_pace_wait(&r->pace)) {
            if (r->pace.quit) break; /* said */
            fprintf(stderr, "%s: S3 upload of %s not done in the time allowed, the file stays on disk "
                            "(last error: %s)\n", r->pace.who, path, err[0] ? err : "none, not tried");
            break;
        }
        if (file_gone(path)) { /* deleted by the disk budget: counted (in-band) by whoever deleted it */
            r->vanished++;
            resized(r, sealed_path, 0);
            return false;
        }
        char key[4096];
        struct stat st;
        uint64_t size = stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
        d9_upload_result res = d9_uploader_put(r->uploader, path, seq, start, service, boot_id, r->pace.give_up,
                                               r->pace.ctx, key, sizeof key, err, sizeof err);
        if (res == D9_UPLOAD_OK) {
            if (d9_upload_pace_success(&r->pace))
                fprintf(stderr, "%s: S3 upload works again (%s%s stored after %u attempts)\n", r->pace.who,
                        d9_uploader_target(r->uploader), key, attempt);
            r->paused_said = false;
            r->stored++;
            r->stored_bytes += size;
            if (r->tables) /* before the file goes */
                (void)d9_tables_step_run(r->tables, path, r->pace.give_up, r->pace.ctx);
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
            if (file_gone(path)) { /* deleted during the attempt */
                r->vanished++;
                resized(r, sealed_path, 0);
                return false;
            }
            fprintf(stderr, "%s: S3 upload of %s failed, the file stays on disk: %s\n", r->pace.who, path, err);
            break;
        }
        if (given_up(r)) {
            fprintf(stderr, "%s: S3 upload of %s not done in the time allowed, the file stays on disk "
                            "(last error: %s)\n", r->pace.who, path, err);
            break;
        }
        bool opened = d9_upload_pace_failure(&r->pace, err);
        if (r->pace.quit) break; /* said */
        if (opened && r->stop_when_open) {
            fprintf(stderr, "%s: S3 upload stopped after %u consecutive failures, %s and the files not stored "
                            "stay on disk (last error: %s)\n", r->pace.who, r->pace.breaker.failures, path, err);
            r->stopped_open = true;
            break;
        }
        if (opened && !r->paused_said) {
            fprintf(stderr, "%s: S3 upload paused after %u consecutive failures: one attempt after a cool-down of "
                            "%llu s, doubling up to %llu s, until S3 answers (sealed segments wait on disk)\n",
                    r->pace.who, r->pace.breaker.failures,
                    (unsigned long long)(r->pace.breaker.cooldown_first_ns / 1000000000u),
                    (unsigned long long)(r->pace.breaker.cooldown_max_ns / 1000000000u));
            r->paused_said = true;
        }
        if (r->max_attempts && attempt >= r->max_attempts) {
            fprintf(stderr, "%s: S3 upload of %s failed %u times, the file stays on disk (last error: %s)\n",
                    r->pace.who, path, attempt, err);
            break;
        }
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
        if (!r->uploader || r->stopped_open || r->pace.quit || given_up(r)) {
            go_on = false;
            break;
        }
        if (i && seqs[i] == seqs[i - 1]) continue; /* .bin and a compressed one both: handled once */
        char bin[4096], out[4104], err[512];
        snprintf(bin, sizeof bin, "%s/trace.%llu.bin", run_dir, (unsigned long long)seqs[i]);
        struct stat st;
        bool whole = false;
        for (d9_compress_mode m = D9_COMPRESS_GZIP; !whole && m <= D9_COMPRESS_ZSTD; m++) {
            snprintf(out, sizeof out, "%s%s", bin, d9_compress_suffix(m));
            whole = stat(out, &st) == 0;
        }
        if (whole) {
            unlink(bin); /* a compression interrupted between rename and unlink: the new file is whole */
            d9_upload_retry_file(r, bin, out, seqs[i], d9_segment_start_time(out), service, boot_id);
            continue;
        }
        time_t start = d9_segment_start_time(bin);
        uint64_t out_size;
        bool compress = r->compress == D9_COMPRESS_GZIP || r->compress == D9_COMPRESS_ZSTD;
        if (compress && d9_step_compress(AT_FDCWD, bin, r->compress, out, sizeof out, &out_size, r->pace.give_up,
                                         r->pace.ctx, err, sizeof err) != 0) {
            if (given_up(r)) {
                go_on = false;
                break;
            }
            fprintf(stderr, "%s: compressing %s failed, uploaded as it is: %s\n", r->pace.who, bin, err);
            snprintf(out, sizeof out, "%s", bin);
        } else if (!compress) {
            snprintf(out, sizeof out, "%s", bin);
        }
        d9_upload_retry_file(r, bin, out, seqs[i], start, service, boot_id);
    }
    free(seqs);
    return go_on && r->uploader != NULL && !r->stopped_open && !r->pace.quit;
}
