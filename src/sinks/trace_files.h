/* Trace files on disk: the paths of the segment writer's files (their names: common/segment_name.h),
 * and an in-memory index of the trace files under a trace directory, oldest first, that
 * retention deletes from.
 *
 * Layout: {trace_dir}/{run}/trace.{N}.bin[.gz|.zst|.active]. Only files whose names match exactly
 * are ever indexed or deleted; directories are only removed with rmdir (so only when empty).
 * Not thread-safe: used by the segment writer on the recorder's background thread. */
#ifndef D9_SINKS_TRACE_FILES_H
#define D9_SINKS_TRACE_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sinks/spare_reserve.h"

#include "common/segment_name.h" /* the names: d9_segment_name_parse/format */

/* "{trace_dir}/{run}/{name}"; returns false when it does not fit. */
bool d9_tf_path(char *buf, size_t size, const char *trace_dir, const char *run, uint64_t seq,
                d9_segment_kind kind);

typedef struct d9_tf_entry {
    int64_t mtime_ns;
    int64_t start_ns; /* wall clock when the writer opened it; 0: not known (found by a scan) */
    uint64_t seq;
    uint64_t size;
    uint32_t run; /* index into d9_tf_index.runs */
    uint8_t kind; /* d9_segment_kind */
} d9_tf_entry;

typedef struct d9_tf_run {
    const char *name; /* in the index's name blocks */
    size_t files; /* indexed entries in this run directory */
    bool unchecked;       /* taken from the ledger without checking its directory's mtime */
    int64_t dir_mtime_ns; /* the mtime the ledger wrote down (when unchecked) */
} d9_tf_run;

/* Run names, many to an allocation: a scan names every run kept. */
typedef struct d9_tf_name_block d9_tf_name_block;

typedef struct d9_tf_index {
    char *trace_dir;
    /* The trace directory's handle and the writer's own run's (trace_dir.h), borrowed; -1: by
     * path (a reader's index). Every file is reached through them, never by a path. */
    int dir_fd;
    int own_run_fd;
    int own_run; /* the slot own_run_fd is the directory of, -1: none */
    bool handles; /* the writer's: never by path, even when a handle is lost (-1) */
    d9_tf_entry *entries; /* live entries are [head, end), oldest first once sorted */
    size_t head, end, cap;
    /* Sorted only when something needs the order (d9_tf_index_sort): a start that deletes
     * nothing never pays for it. A scan leaves the entries unsorted. */
    bool sorted;
    d9_tf_run *runs;
    size_t nruns, runs_cap;
    d9_tf_name_block *name_blocks;
    uint64_t bytes;        /* sizes of the indexed entries */
    uint64_t pinned_bytes; /* bytes counted but never deleted: see d9_tf_index_delete_oldest; the ledger */
    uint64_t spare_bytes[D9_SPARE_SLOTS]; /* the spare reserves found by the scan (in pinned_bytes) */
    size_t unchecked_runs; /* runs with .unchecked set: see d9_tf_index_check */
} d9_tf_index;

/* 0, or -ENOMEM. */
int d9_tf_index_init(d9_tf_index *ix, const char *trace_dir);

/* A handle of run slot `run`'s directory (the writer's own, or opened without following a
 * link through dir_fd), or -1; give it back with d9_tf_run_fd_done. */
int d9_tf_run_fd(const d9_tf_index *ix, uint32_t run);
void d9_tf_run_fd_done(const d9_tf_index *ix, int fd);
void d9_tf_index_free(d9_tf_index *ix);

/* Index the trace files in trace_dir's run directories (one level; symlinks are not followed).
 * Run directories that nothing writes to any more are taken from trace_dir's ledger
 * (run_ledger.h) while unchanged, and written down there when first found settled. Within
 * D9_LEDGER_TRUST_NS of a scan that checked every run, the ledger's lines are taken without
 * checking (the runs are marked unchecked): call d9_tf_index_check before deleting anything.
 * A .active file that another writer holds locked (see d9_tf_lock_active), and the spare
 * reserves (spare_reserve.h), are counted in pinned_bytes and never deleted. *next_seq gets 1 + the highest N found in run directory
 * current_run (0 when none), so a reused run id never overwrites its files.
 * Returns 0, or -errno when trace_dir cannot be read. */
int d9_tf_index_scan(d9_tf_index *ix, const char *current_run, uint64_t *next_seq);

/* Check the runs taken from the ledger unchecked, as a scan outside the trust window would:
 * one whose directory changed (or went) since its line is read again. Then the index is what
 * is on disk, so deletions go by it: a file deleted behind the ledger's back must not make a
 * writer think the budget is full and delete another. Returns whether there was anything to
 * check (the totals may have changed). */
bool d9_tf_index_check(d9_tf_index *ix);

/* The slot of a run directory name, added if new; -1 when out of memory. */
int d9_tf_index_run(d9_tf_index *ix, const char *run);

/* Add a file. Never fails: when memory runs out the bytes go to pinned_bytes, so the budget
 * stays honest even though that file will not be deleted. */
void d9_tf_index_add(d9_tf_index *ix, int run, uint64_t seq, d9_segment_kind kind, uint64_t size,
                     int64_t mtime_ns, int64_t start_ns);

/* What the pipeline may have replaced a sealed trace.N.bin by. */
extern const d9_segment_kind d9_tf_compressed_kinds[2];

/* Sort the entries oldest first (earliest mtime; ties by run name, then N, then kind), unless
 * they are. */
void d9_tf_index_sort(d9_tf_index *ix);

/* The entry d9_tf_index_delete_oldest would delete next (sorts); false when the index is empty. */
bool d9_tf_index_oldest(d9_tf_index *ix, d9_tf_entry *out);

/* Delete the oldest indexed file (d9_tf_index_sort's order) and drop it from the index. A
 * trace.N.bin that is gone is looked for as trace.N.bin.gz and .bin.zst (a compressor may have
 * replaced it: d9_tf_compressed_kinds). A file whose unlink is refused (EACCES, EROFS...) moves
 * to pinned_bytes. The run directory is removed (rmdir) when it holds no more indexed files, unless it is keep_run.
 * Returns false when the index is empty; *unlinked says whether a file was really removed. */
bool d9_tf_index_delete_oldest(d9_tf_index *ix, const char *keep_run, bool *unlinked);

/* Drop entries whose files no longer exist (someone deleted directories under the writer). */
void d9_tf_index_forget_vanished(d9_tf_index *ix);

/* Writers hold an exclusive flock on their .active file so that a scan by another writer in
 * the same trace_dir can tell a live segment from a dead run's leftover. 0 or -errno. */
int d9_tf_lock_active(int fd);

#endif
