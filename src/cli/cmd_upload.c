/* `dial9 upload [--bucket B] [OPTIONS] DIR...`: store a finished trace directory's sealed
 * segments (or what a recorder left behind) in S3 with the recorder's own pipeline steps:
 * gzip or zstd (DIAL9_COMPRESS), keys in dial9's layout, signed PUTs or multipart, retries with backoff;
 * each local file deleted only after S3 answered 2xx (kept with --keep). A run directory is
 * locked (flock, as recorders lock theirs) while it is uploaded: a running recorder's files are
 * never taken, and two uploads never send the same file. */
#include <dirent.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "dial9/dial9.h"
#include "format/decoder.h"
#include "sinks/run_claim.h"
#include "sinks/trace_dir.h"
#include "common/segment_name.h"
#include "sinks/upload_retry.h"

static void upload_usage(FILE *out) {
    fprintf(out,
            "usage: dial9 upload [--bucket B] [--prefix P] [--service S] [OPTIONS] DIR...\n"
            "\n"
            "Upload the sealed segments (trace.N.bin, .bin.gz, .bin.zst) of DIR to S3, the way the\n"
            "recorder does: compressed (DIAL9_COMPRESS=gzip, the default, zstd, or none), under keys\n"
            "in dial9's layout,\n"
            "signed (SigV4) and checksummed, multipart when large. DIR is a trace directory (its\n"
            "run directories are uploaded) or one run directory. Each local file is deleted once S3\n"
            "has stored it (2xx), never before. A run directory a running recorder holds is skipped;\n"
            "trace.N.bin.active files (being written, or left by a crash) are not uploaded.\n"
            "\n"
            "The service and boot id in the keys are the recording run's (its .s3-run file), else\n"
            "--service (or DIAL9_SERVICE), else the service its trace was recorded under (its\n"
            "SegmentMetadataEvent), and this host's boot id with the directory's name.\n"
            "\n"
            "  -b, --bucket B        the bucket (default DIAL9_S3_BUCKET)\n"
            "      --prefix P        key prefix (default DIAL9_S3_PREFIX, else dial9-traces)\n"
            "      --service S       service name for runs without a .s3-run file\n"
            "      --endpoint URL    S3-compatible endpoint (default AWS_ENDPOINT_URL_S3 /\n"
            "                        AWS_ENDPOINT_URL, else AWS's)\n"
            "      --region R        (default AWS_REGION / AWS_DEFAULT_REGION, else us-east-1)\n"
            "      --attempts N      tries per file before giving up on it (default 5; 0: until\n"
            "                        stored); after 5 consecutive failures (of any files) the\n"
            "                        upload stops, unless N is 0: then it waits for S3 to answer\n"
            "      --keep            keep the local files after uploading them\n"
            "  -h, --help\n"
            "\n"
            "Credentials: the standard AWS chain (docs/s3.md). Exit status: 0 every file stored,\n"
            "1 a file could not be stored (it stays on disk), 2 usage error.\n");
}

typedef struct upload_opts {
    const char *service; /* for runs without .s3-run: --service or DIAL9_SERVICE; NULL: the trace's */
    unsigned runs, runs_busy, dirs_refused;
} upload_opts;

/* The service the run recorded itself under: "service" in the SegmentMetadataEvent of its
 * oldest sealed segment (the recorder writes it first in every segment). false when there is
 * none to read. For a run without .s3-run (recorded without a bucket, or its identity lost),
 * so that its objects are not filed under service=unknown. */
static bool service_in_trace(const char *run_dir, char *out, size_t len) {
    DIR *d = opendir(run_dir);
    if (!d) return false;
    uint64_t oldest = UINT64_MAX;
    char name[D9_SEGMENT_NAME_MAX] = "";
    struct dirent *e;
    while ((e = readdir(d))) {
        uint64_t seq;
        d9_segment_kind kind;
        if (d9_segment_name_parse(e->d_name, &seq, &kind) && kind != D9_SEGMENT_ACTIVE && seq < oldest) {
            oldest = seq;
            d9_segment_name_format(name, sizeof name, seq, kind);
        }
    }
    closedir(d);
    char path[PATH_MAX], err[256];
    if (!name[0] || snprintf(path, sizeof path, "%s/%s", run_dir, name) >= (int)sizeof path) return false;
    d9_decoder *dec = d9_dec_open_path(path, NULL, err, sizeof err);
    if (!dec) return false;
    bool found = false;
    d9_event ev;
    for (int i = 0; !found && i < 64 && d9_dec_next(dec, &ev) > 0; i++) { /* it comes first */
        if (strcmp(ev.schema->name, "SegmentMetadataEvent") != 0) continue;
        const d9_value *entries = d9_event_field(&ev, "entries");
        if (!entries || !entries->present || entries->type != D9_FT_STRING_MAP) break;
        for (uint32_t k = 0; k < entries->map.count; k++) {
            const d9_dec_kv *kv = &entries->map.items[k];
            if (kv->key.len == 7 && memcmp(kv->key.ptr, "service", 7) == 0 && kv->value.len > 0 &&
                kv->value.len < len && !memchr(kv->value.ptr, 0, kv->value.len)) {
                memcpy(out, kv->value.ptr, kv->value.len);
                out[kv->value.len] = 0;
                found = true;
            }
        }
        break;
    }
    d9_dec_close(dec);
    return found;
}

static bool has_trace_files(const char *dir) {
    /* any name trace_files.h recognizes */
    bool found = false;
    DIR *d = opendir(dir);
    if (!d) return false;
    struct dirent *e;
    while (!found && (e = readdir(d))) {
        uint64_t seq;
        d9_segment_kind k;
        found = d9_segment_name_parse(e->d_name, &seq, &k);
    }
    closedir(d);
    return found;
}

/* One run directory: locked, its identity found, its segments uploaded. false when uploading
 * cannot go on (fatal answer). */
static bool upload_run(d9_upload_retry *r, upload_opts *o, const char *run_dir) {
    if (!has_trace_files(run_dir)) return true;
    int fd = d9_run_claim(run_dir);
    if (fd < 0) {
        fprintf(stderr, "dial9 upload: %s is in use by a running recorder (or another upload): skipped\n", run_dir);
        o->runs_busy++;
        return true;
    }
    o->runs++;
    char service[256], boot[D9_RUN_BOOT_ID_MAX];
    if (!d9_run_identity_read(run_dir, service, sizeof service, boot, sizeof boot)) {
        if (o->service || !service_in_trace(run_dir, service, sizeof service))
            snprintf(service, sizeof service, "%s", o->service ? o->service : "unknown");
        boot[0] = 0;
    }
    if (!boot[0]) d9_run_boot_id(run_dir, boot, sizeof boot);
    bool go_on = d9_upload_retry_run_dir(r, run_dir, service, boot);
    if (!r->keep_local) d9_run_release_if_empty(run_dir);
    close(fd);
    return go_on;
}

static bool upload_dir(d9_upload_retry *r, upload_opts *o, const char *dir) {
    /* Uploading compresses and deletes there: not in a directory another user could redirect
     * (the recorder's rule, sinks/trace_dir.h). */
    char why[1024];
    int dfd = d9_trace_dir_open(dir, false, why, sizeof why);
    if (dfd < 0) {
        fprintf(stderr, "dial9 upload: %s: not uploaded\n", why);
        o->dirs_refused++; /* the exit status says so */
        return true;
    }
    close(dfd);
    if (has_trace_files(dir)) return upload_run(r, o, dir);
    DIR *d = opendir(dir);
    if (!d) return true;
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        if (n == cap) {
            char **p = realloc(names, (cap = cap ? cap * 2 : 16) * sizeof *p);
            if (!p) break;
            names = p;
        }
        if (!(names[n] = strdup(e->d_name))) break;
        n++;
    }
    closedir(d);
    /* run directories are named by their start: in name order, oldest first */
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            char *t = names[j];
            names[j] = names[j - 1];
            names[j - 1] = t;
        }
    bool go_on = true;
    for (size_t i = 0; i < n; i++) {
        char run[PATH_MAX];
        struct stat st;
        if (go_on && snprintf(run, sizeof run, "%s/%s", dir, names[i]) < (int)sizeof run && lstat(run, &st) == 0 &&
            S_ISDIR(st.st_mode))
            go_on = upload_run(r, o, run);
        free(names[i]);
    }
    free(names);
    return go_on;
}

int d9_cmd_upload(int argc, char **argv) {
    static const struct option opts[] = {
        {"bucket", required_argument, NULL, 'b'}, {"prefix", required_argument, NULL, 'p'},
        {"service", required_argument, NULL, 's'}, {"endpoint", required_argument, NULL, 'e'},
        {"region", required_argument, NULL, 'r'}, {"attempts", required_argument, NULL, 'a'},
        {"keep", no_argument, NULL, 'k'},          {"help", no_argument, NULL, 'h'},
        {0, 0, 0, 0},
    };
    d9_config cfg;
    if (d9_config_from_env(&cfg) != 0) {
        fprintf(stderr, "dial9 upload: %s\n", d9_last_error());
        return D9_EXIT_USAGE;
    }
    upload_opts o = {.service = cfg.service};
    unsigned attempts = 5;
    bool keep = false;
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "b:h", opts, NULL)) != -1) {
        switch (c) {
        case 'b': cfg.s3_bucket = optarg; break;
        case 'p': cfg.s3_prefix = optarg; break;
        case 's': o.service = optarg; break;
        case 'e': cfg.s3_endpoint = optarg; break;
        case 'r': cfg.s3_region = optarg; break;
        case 'a': {
            char *end;
            long v = strtol(optarg, &end, 10);
            if (*end || !*optarg || v < 0 || v > 1000000) {
                fprintf(stderr, "dial9 upload: --attempts \"%s\": expected a count from 0\n", optarg);
                return D9_EXIT_USAGE;
            }
            attempts = (unsigned)v;
            break;
        }
        case 'k': keep = true; break;
        case 'h': upload_usage(stdout); return D9_EXIT_OK;
        default:
            fprintf(stderr, "dial9 upload: unknown option or missing value '%s'\n", argv[optind - 1]);
            upload_usage(stderr);
            return D9_EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "dial9 upload: no DIR given\n");
        upload_usage(stderr);
        return D9_EXIT_USAGE;
    }
    if (!cfg.s3_bucket) {
        fprintf(stderr, "dial9 upload: no bucket: pass --bucket or set DIAL9_S3_BUCKET\n");
        return D9_EXIT_USAGE;
    }
    if (d9_config_validate(&cfg) != 0) {
        fprintf(stderr, "dial9 upload: %s\n", d9_last_error());
        return D9_EXIT_USAGE;
    }
    for (int i = optind; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0 || !S_ISDIR(st.st_mode)) {
            fprintf(stderr, "dial9 upload: %s: not a directory\n", argv[i]);
            return D9_EXIT_USAGE;
        }
    }
    cfg.service = o.service ? o.service : "unknown"; /* every key gets the run's own (upload_run) */
    char err[1024];
    d9_uploader *u = d9_uploader_new(&cfg, err, sizeof err);
    if (!u) {
        fprintf(stderr, "dial9 upload: %s\n", err);
        return D9_EXIT_DATA;
    }
    d9_upload_retry r;
    d9_upload_retry_init(&r, u, "dial9 upload");
    r.compress = cfg.compress == D9_COMPRESS_AUTO ? D9_COMPRESS_GZIP : cfg.compress; /* uploading: auto is gzip */
    r.max_attempts = attempts;
    r.keep_local = keep;
    r.stop_when_open = attempts != 0; /* S3 unreachable: say so once, not once per file */
    bool go_on = true;
    for (int i = optind; i < argc && go_on; i++) go_on = upload_dir(&r, &o, argv[i]);
    if (!r.uploader)
        fprintf(stderr, "dial9 upload: stopped: %s (the files stay on disk)\n", r.fatal);
    printf("dial9 upload: %llu file%s stored (%llu bytes) to %s, %llu not stored, %u run director%s%s\n",
           (unsigned long long)r.stored, r.stored == 1 ? "" : "s", (unsigned long long)r.stored_bytes,
           r.uploader ? d9_uploader_target(r.uploader) : cfg.s3_bucket, (unsigned long long)r.not_stored, o.runs,
           o.runs == 1 ? "y" : "ies", o.runs_busy ? " (some skipped: in use)" : "");
    bool all = r.uploader && r.not_stored == 0 && o.runs_busy == 0 && o.dirs_refused == 0;
    d9_upload_retry_free(&r);
    return all ? D9_EXIT_OK : D9_EXIT_DATA;
}
