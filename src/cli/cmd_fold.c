/* `dial9 fold PATH... --to DIR`: segments into the fleet tables, Parquet partitioned
 * Hive-style (src/fold, docs/fleet-tables.md). */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "fold/fold.h"
#include "fold/s3_publish.h"
#include "cli/trace_reader.h"
#include "format/trace_paths.h"

static void fold_usage(FILE *out) {
    fprintf(out,
            "usage: dial9 fold PATH... --to DIR|s3://BUCKET/PREFIX [--zstd-level N] [--uncompressed] [--no-commit] [-q]\n"
            "\n"
            "Fold trace segments (files, directories searched for segments, s3://bucket/prefix)\n"
            "into Parquet tables under DIR that DuckDB, Athena, Trino and Spark query:\n"
            "DIR/TABLE/service=S/date=YYYY-MM-DD/hour=HH/part-H.parquet, tables polls,\n"
            "poll_hist, sched, wakes, samples, stacks and segments (docs/fleet-tables.md).\n"
            "\n"
            "All or nothing: files are written under hidden temporary names and renamed in only\n"
            "when every segment was read; a segment that cannot be read is named and nothing is\n"
            "written. Idempotent: a second fold of the same segments changes nothing. A partition\n"
            "whose files hold only segments of this fold is rewritten as one file (compaction).\n"
            "A segment still being written (.active) is named and not folded.\n"
            "\n"
            "--to s3://BUCKET/PREFIX: the same tables in S3. New files are uploaded, then the commit\n"
            "marker PREFIX/_dial9_fold.json (one object, written last) names every file of the\n"
            "tables; files it no longer names are deleted. Read the tables through the marker: a\n"
            "fold that stops midway leaves the previous marker (docs/fleet-tables.md).\n"
            "s3:// inputs take --service, --instance and a wall-clock --from/--to (now-2h, a UTC\n"
            "date), as every command does.\n"
            "\n"
            "  --to DIR          where the tables go: a local directory or s3://BUCKET/PREFIX\n"
            "  --zstd-level N    zstd level of the searched pages (default 3; 1..19); from 10 on,\n"
            "                    every page at N (below, noisy time columns skip the search)\n"
            "  --uncompressed    no zstd\n"
            "  --no-commit       with --to s3://: upload this fold's files and their manifests only,\n"
            "                    without listing the prefix or writing the marker (the pipeline's\n"
            "                    tables beside each segment, DIAL9_S3_TABLES=1); a later fold commits\n"
            "  -q, --quiet       no summary and no list of files written on stderr (errors still)\n"
            "  -h, --help\n"
            "\n"
            "Exit status: 0 folded, 1 a segment could not be read or a file not written (nothing\n"
            "of this fold is visible), 2 usage error.\n");
}

int d9_cmd_fold(int argc, char **argv) {
    enum { O_TO = 256, O_LEVEL, O_UNCOMPRESSED, O_NO_COMMIT };
    static const struct option opts[] = {
        {"to", required_argument, NULL, O_TO},
        {"zstd-level", required_argument, NULL, O_LEVEL},
        {"uncompressed", no_argument, NULL, O_UNCOMPRESSED},
        {"no-commit", no_argument, NULL, O_NO_COMMIT},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {0, 0, 0, 0},
    };
    const char *to = NULL;
    pq_options popt = {0};
    bool quiet = false, no_commit = false;
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":qh", opts, NULL)) != -1) {
        switch (c) {
        case O_TO: to = optarg; break;
        case O_LEVEL: {
            char *end;
            long v = strtol(optarg, &end, 10);
            if (!*optarg || *end || v < 1 || v > 19) {
                fprintf(stderr, "dial9 fold: --zstd-level takes 1..19\n");
                return D9_EXIT_USAGE;
            }
            popt.zstd_level = (int)v;
            break;
        }
        case O_UNCOMPRESSED: popt.uncompressed = true; break;
        case O_NO_COMMIT: no_commit = true; break;
        case 'q': quiet = true; break;
        case 'h': fold_usage(stdout); return D9_EXIT_OK;
        case ':':
            fprintf(stderr, "dial9 fold: option '%s' needs a value\n", argv[optind - 1]);
            return D9_EXIT_USAGE;
        default:
            fprintf(stderr, "dial9 fold: unknown option '%s'\n", argv[optind - 1]);
            fold_usage(stderr);
            return D9_EXIT_USAGE;
        }
    }
    if (!to || optind >= argc) {
        fprintf(stderr, "dial9 fold: %s\n", !to ? "--to DIR is required" : "no PATH given");
        fold_usage(stderr);
        return D9_EXIT_USAGE;
    }
    if (no_commit && strncmp(to, "s3://", 5) != 0) {
        fprintf(stderr, "dial9 fold: --no-commit goes with --to s3://...\n");
        return D9_EXIT_USAGE;
    }
    d9_path_list paths = {0};
    char err[1024];
    if (d9_expand_paths(argc - optind, argv + optind, &paths, err, sizeof err) != 0) {
        fprintf(stderr, "dial9 fold: %s\n", err);
        d9_path_list_free(&paths);
        return D9_EXIT_DATA;
    }
    if (paths.skipped_count) { /* all or nothing: a segment in a skipped directory would be missing */
        d9_report_skipped_dirs(stderr, "fold", &paths);
        fprintf(stderr, "dial9 fold: nothing was written\n");
        d9_path_list_free(&paths);
        return D9_EXIT_DATA;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    d9f_result res;
    d9f_s3_result s3res = {0};
    bool to_s3 = strncmp(to, "s3://", 5) == 0;
    int rc = to_s3 ? d9f_fold_to_s3(paths.paths, paths.count, to, !no_commit, &popt, stderr, quiet ? NULL : stderr, &res, &s3res,
                                    err, sizeof err)
                   : d9f_fold(paths.paths, paths.count, to, &popt, stderr, quiet ? NULL : stderr, &res, err, sizeof err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    d9_path_list_free(&paths);
    if (rc != 0) {
        fprintf(stderr, "dial9 fold: %s\n", err);
        return D9_EXIT_DATA;
    }
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    if (!quiet)
        fprintf(stderr,
                "dial9 fold: %zu segment(s), %llu events, %llu polls -> %llu rows; %zu file(s) written, "
                "%zu partition(s) unchanged; %.3f s\n",
                res.segments, (unsigned long long)res.events, (unsigned long long)res.polls,
                (unsigned long long)res.rows, res.files_written, res.partitions_unchanged, s);
    if (!quiet && to_s3)
        fprintf(stderr, "dial9 fold: %s: %zu object(s) uploaded, %zu deleted, commit marker %s\n", to,
                s3res.uploaded, s3res.deleted, s3res.marker_written ? "written" : "unchanged");
    return D9_EXIT_OK;
}
