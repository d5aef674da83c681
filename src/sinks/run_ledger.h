/* The trace directory's ledger of settled runs, ".dial9-runs": what a scan of the trace files
 * (trace_files.h) found in each run directory that nothing writes to any more, so that the
 * next scans take those files from one read of the ledger instead of reading every directory.
 * Without it the scan at every start grows with the runs kept: 15 ms at 1 000 kept runs here,
 * and a 1 GiB budget holds hundreds of thousands of short programs' runs.
 *
 * A line is trusted only while its run directory's mtime is still the one it recorded (a file
 * created, renamed or deleted in the directory changes it); a run is written down only once its
 * directory has not changed for D9_LEDGER_SETTLED_NS, so a later change cannot fall within the
 * same clock tick. A file that grows in place does not change its directory: symbolization (the
 * only one that does it) touches the directory after appending (symbols/symbolize_file.c).
 *
 * Checking that mtime is one fstatat per run, and at every start that was most of the scan
 * (1.6 of 2.8 ms at 1 000 runs kept, on tmpfs here). So a scan that checked every run writes
 * down when it did (a "v" line), and for D9_LEDGER_TRUST_NS after it the next scans take the
 * lines of the runs they list unchecked (trace_files.h: checked before anything is deleted).
 *
 * Lines are appended (O_APPEND, one write for all of a scan's); a scan that finds the ledger
 * mostly made of dead lines writes it again (a new file renamed over it). It is a cache only: a
 * missing, unreadable, foreign or damaged ledger (or line) costs the full scan, never a file. */
#ifndef D9_SINKS_RUN_LEDGER_H
#define D9_SINKS_RUN_LEDGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define D9_LEDGER_NAME ".dial9-runs"
#define D9_LEDGER_SETTLED_NS (2ll * 1000 * 1000 * 1000)
#define D9_LEDGER_MAX_BYTES (64u << 20) /* larger: ignored, and written again (oversized) */
/* How long after a scan that checked every run the lines are taken unchecked: longer than a
 * cron job's minute, short enough that what only a check sees (a user's `dial9 symbolize` of an
 * old run growing its files) is not missed for long. */
#define D9_LEDGER_TRUST_NS (10ll * 60 * 1000 * 1000 * 1000)

typedef struct d9_ledger_file {
    uint64_t seq, size;
    int64_t mtime_ns;
    uint8_t kind; /* d9_segment_kind */
} d9_ledger_file;

typedef struct d9_ledger_run {
    const char *name;     /* cut in place in one of the ledger's texts (NUL-terminated there) */
    uint64_t name_hash;   /* lookups compare it before the names */
    int64_t dir_mtime_ns;
    size_t first_file;    /* the run's files are file_pool[first_file, first_file + nfiles) */
    size_t nfiles;
    size_t line; /* the later line of a run wins */
    bool used;   /* matched by this scan: kept when the ledger is written again */
} d9_ledger_run;

/* A text the ledger read or was given, kept while its runs' names point into it. */
typedef struct d9_ledger_text d9_ledger_text;

typedef struct d9_ledger {
    d9_ledger_run *runs; /* in the order of their lines */
    size_t n, cap;
    d9_ledger_file *file_pool; /* every run's files: one array instead of one per run */
    size_t pool_used, pool_cap;
    d9_ledger_text *texts;
    uint32_t *latest;    /* open addressing by name: 1 + the index of a name's latest line */
    size_t latest_mask;  /* slots - 1 (no slots while n is 0) */
    size_t lines;        /* lines read, good or not */
    int64_t verified_ns; /* the latest "v" line: when a scan last checked every run; 0: never */
    uint64_t file_bytes; /* the ledger file's size when read (0: none) */
    bool oversized;      /* over D9_LEDGER_MAX_BYTES: not read, to be written again */
} d9_ledger;

/* A run's files (NULL when it has none and nothing else has any either). */
static inline const d9_ledger_file *d9_ledger_files(const d9_ledger *l, const d9_ledger_run *r) {
    return l->file_pool ? l->file_pool + r->first_file : NULL;
}

/* Parse a ledger's text (copied: the ledger keeps its own); bad lines are skipped. false only
 * when out of memory. */
bool d9_ledger_parse(d9_ledger *l, const char *text, size_t len);
/* Read and parse dirfd's ledger; an empty ledger when there is none (or it cannot be used). */
void d9_ledger_read(d9_ledger *l, int dirfd);
/* The run's latest line whose directory mtime is dir_mtime_ns (marked used), or NULL. */
d9_ledger_run *d9_ledger_find(d9_ledger *l, const char *name, int64_t dir_mtime_ns);
/* The run's latest line whatever its mtime (marked used), or NULL. */
d9_ledger_run *d9_ledger_latest(d9_ledger *l, const char *name);
/* Whether the lines may be taken unchecked at now_ns (CLOCK_REALTIME): a scan checked every
 * run less than D9_LEDGER_TRUST_NS before (and not after: a clock set back). */
bool d9_ledger_trusted(const d9_ledger *l, int64_t now_ns);
/* Whether a directory name can be written down (no whitespace, no control characters, not a
 * path). */
bool d9_ledger_name_ok(const char *name);
void d9_ledger_free(d9_ledger *l);

/* Whether `name` in dirfd is a ledger being written again that a writer left behind (it died
 * between creating and renaming it): removed when over a minute old. */
bool d9_ledger_is_leftover(int dirfd, const char *name, int64_t now_ns);

/* Lines being written: appended to a buffer by d9_ledger_add, then written in one go. */
typedef struct d9_ledger_out {
    char *buf;
    size_t len, cap;
    size_t runs;
    bool failed; /* out of memory: nothing is written */
} d9_ledger_out;

void d9_ledger_add(d9_ledger_out *o, const char *name, int64_t dir_mtime_ns, const d9_ledger_file *files,
                   size_t n);
/* A scan that began at scan_start_ns checked every run directory against its line. */
void d9_ledger_add_verified(d9_ledger_out *o, int64_t scan_start_ns);
/* Append o's lines (if any) to dirfd's ledger, or, when rewrite, replace the ledger by the used
 * runs of l and o's lines. Errors are ignored (the next scan is a full one). Frees o's buffer.
 * Returns the ledger's size afterwards, as far as this writer knows: the disk budget counts it
 * (it is the trace directory's bytes too). */
uint64_t d9_ledger_write(int dirfd, const d9_ledger *l, d9_ledger_out *o, bool rewrite);

#endif
