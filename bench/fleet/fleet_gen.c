/* A synthetic fleet in the fold's layout, written with our Parquet writer (never recorded):
 * INSTANCES instances of 10 services, POLLS polls each over one hour, 8 workers, 20 spawn
 * locations per service, log-normal-ish poll durations. polls: one file per service partition
 * (what a compacting fold leaves); poll_hist: the same polls in the fold's buckets
 * (fold/hist_rows.h) per instance, location and worker. For bench/fleet/fleet_bench.py.
 *
 *     fleet_gen DIR INSTANCES POLLS [TABLE]   (TABLE: polls or poll_hist alone; the same rows) */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analysis/hist.h"
#include "fold/hist_rows.h"
#include "fold/tables.h"

#define SERVICES 10
#define LOCATIONS 20
#define WORKERS 8
#define HOUR_NS 1796558400000000000ll /* 2026-12-06T12:00:00Z */

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint64_t next(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static int mkdirs(char *path) {
    for (char *p = path + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(path, 0777) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    return mkdir(path, 0777) != 0 && errno != EEXIST ? -1 : 0;
}

static FILE *open_part(const char *dir, const char *table, int service) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s/service=svc%d/date=2026-12-06/hour=12", dir, table, service);
    if (mkdirs(path) != 0) return NULL;
    strcat(path, "/part-synthetic.parquet");
    return fopen(path, "wb");
}

/* a duration: mostly microseconds, a tail of milliseconds, different per location */
static uint64_t duration(int loc) {
    double u = (double)(next() >> 11) / 9007199254740992.0;
    double v = (double)(next() >> 11) / 9007199254740992.0;
    double z = sqrt(-2 * log(u + 1e-300)) * cos(6.283185307179586 * v);
    double base = 2000.0 * (1 + loc % 7);
    return (uint64_t)(base * exp(1.1 * z)) + 50;
}

static void put_identity(pq_writer *w, int inst, int64_t wall) {
    char s[64];
    int n = snprintf(s, sizeof s, "host-%04d", inst);
    pq_put_str(w, D9F_COL_INSTANCE, s, (size_t)n);
    n = snprintf(s, sizeof s, "boot-%04d", inst);
    pq_put_str(w, D9F_COL_BOOT, s, (size_t)n);
    n = snprintf(s, sizeof s, "run-%04d", inst);
    pq_put_str(w, D9F_COL_RUN, s, (size_t)n);
    n = snprintf(s, sizeof s, "seg-%04d", inst);
    pq_put_str(w, D9F_COL_SEGMENT, s, (size_t)n);
    pq_put_i64(w, D9F_COL_WALL_TIME, wall);
}

typedef struct hist_ctx {
    pq_writer *w;
    int inst;
    const char *loc;
    size_t loc_len;
    int worker;
} hist_ctx;

static int put_hist_row(const d9f_hist_row *r, void *ctx) {
    hist_ctx *c = ctx;
    put_identity(c->w, c->inst, HOUR_NS);
    pq_put_str(c->w, D9F_HIST_SPAWN_LOC, c->loc, c->loc_len);
    pq_put_i64(c->w, D9F_HIST_WORKER, c->worker);
    pq_put_i32(c->w, D9F_HIST_BUCKET, r->bucket);
    pq_put_i64(c->w, D9F_HIST_LOW, (int64_t)r->low);
    pq_put_i64(c->w, D9F_HIST_HIGH, (int64_t)r->high);
    pq_put_i64(c->w, D9F_HIST_MID, (int64_t)r->mid);
    pq_put_i64(c->w, D9F_HIST_COUNT, (int64_t)r->count);
    pq_put_i64(c->w, D9F_HIST_MIN, (int64_t)r->min);
    pq_put_i64(c->w, D9F_HIST_MAX, (int64_t)r->max);
    return pq_end_row(c->w);
}

int main(int argc, char **argv) {
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: fleet_gen DIR INSTANCES POLLS [polls|poll_hist]\n");
        return 2;
    }
    bool want_polls = argc == 4 || !strcmp(argv[4], "polls"), want_hist = argc == 4 || !strcmp(argv[4], "poll_hist");
    const char *dir = argv[1];
    int instances = atoi(argv[2]);
    uint64_t polls = strtoull(argv[3], NULL, 10);
    char err[256], loc[64];
    const d9f_table_def *pt = &d9f_tables[D9F_POLLS], *ht = &d9f_tables[D9F_POLL_HIST];
    uint64_t total = 0;
    for (int svc = 0; svc < SERVICES; svc++) {
        /* a table not asked for is written to /dev/null (its rows drawn all the same) */
        FILE *pf = want_polls ? open_part(dir, "polls", svc) : fopen("/dev/null", "wb");
        FILE *hf = want_hist ? open_part(dir, "poll_hist", svc) : fopen("/dev/null", "wb");
        if (!pf || !hf) {
            perror(dir);
            return 1;
        }
        pq_writer *pw = pq_writer_open(pf, pt->cols, pt->ncols, NULL, err, sizeof err);
        pq_writer *hw = pq_writer_open(hf, ht->cols, ht->ncols, NULL, err, sizeof err);
        if (!pw || !hw) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        for (int inst = svc; inst < instances; inst += SERVICES) {
            static d9a_hist hist[LOCATIONS][WORKERS];
            int64_t wall = HOUR_NS + (int64_t)(next() % 1000000000);
            for (uint64_t i = 0; i < polls; i++) {
                int l = (int)(next() % LOCATIONS), w = (int)(next() % WORKERS);
                uint64_t d = duration(l);
                wall += (int64_t)(3600e9 / (double)polls * (0.5 + (double)(next() % 1000) / 1000));
                int64_t task = (int64_t)(inst * 100000 + next() % 5000);
                /* the attribution parts: one poll in 16 waits for a lock half its time */
                uint64_t lock = next() % 16 == 0 ? d / 2 : 0;
                d9a_hist_add(&hist[l][w], d);
                if (!want_polls) continue;
                put_identity(pw, inst, wall);
                int n = snprintf(loc, sizeof loc, "src/svc%d/handler_%d.rs:%d", svc, l, 40 + l * 7);
                pq_put_i64(pw, D9F_POLLS_WORKER, w);
                pq_put_i64(pw, D9F_POLLS_TASK, task);
                pq_put_str(pw, D9F_POLLS_SPAWN_LOC, loc, (size_t)n);
                pq_put_i64(pw, D9F_POLLS_DURATION, (int64_t)d);
                for (int k = D9F_POLLS_ON_CPU; k <= D9F_POLLS_OFF_CPU_UNCAPTURED; k++)
                    pq_put_i64(pw, k, k == D9F_POLLS_ON_CPU ? (int64_t)(d - lock) : k == D9F_POLLS_LOCK ? (int64_t)lock : 0);
                if (pq_end_row(pw) != 0) return 1;
            }
            total += polls;
            for (int l = 0; l < LOCATIONS; l++)
                for (int w = 0; w < WORKERS; w++) {
                    d9a_hist *h = &hist[l][w];
                    int n = snprintf(loc, sizeof loc, "src/svc%d/handler_%d.rs:%d", svc, l, 40 + l * 7);
                    hist_ctx hc = {hw, inst, loc, (size_t)n, w};
                    if (want_hist && d9f_hist_rows(h, put_hist_row, &hc) != 0) return 1;
                    d9a_hist_free(h);
                }
        }
        if (pq_writer_close(pw, err, sizeof err) != 0 || pq_writer_close(hw, err, sizeof err) != 0) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        fclose(pf);
        fclose(hf);
    }
    printf("%" PRIu64 "\n", total);
    return 0;
}
