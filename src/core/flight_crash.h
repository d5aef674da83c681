/* The crash dump (docs/flight-recorder.md): on SIGSEGV, SIGBUS, SIGILL, SIGFPE or SIGABRT,
 * memory mode writes the sealed segments held in memory and the open segment's bytes so far
 * (what disk mode would have on disk: the sealed files and trace.N.bin.active up to the last
 * drain); disk mode hard-links the run's files of the look-back, sealed and active, into the
 * dump (pinned: rotation cannot delete them). Either as a dump with trigger "crash",
 * {dump_dir}/{run_id}.crash/, manifest last; then the program's own action for the signal
 * runs (its handler, or the default: it dies as it would).
 *
 * The handler does only what a signal handler may: open, mkdir, write, rename, fsync, no
 * lock, no malloc, no stdio. It reads the segments through a table of its own whose entries
 * are published and withdrawn with sequentially consistent atomics against a "crashing" flag
 * (Dekker's pattern): a thread withdrawing an entry after the handler saw it also sees the flag,
 * and then never frees the bytes (the process is dying); an entry claimed after the flag is
 * never filled. So the handler never reads freed memory, without locking anything. */
#ifndef D9_CORE_FLIGHT_CRASH_H
#define D9_CORE_FLIGHT_CRASH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A sealed segment's bytes (memory mode; the collector's thread, as it hands them over), or
 * with bytes NULL a sealed file of the run (disk mode: trace.{seq}.bin, or compressed since;
 * never withdrawn, a newer one takes the slot of one 1024 segments older). Silently not kept
 * when the table is full (the crash dump counts it as missing). */
void d9_crash_seg_add(const uint8_t *bytes, size_t len, uint64_t seq, uint64_t start_ns, uint64_t end_ns);
/* Before freeing bytes given to d9_crash_seg_add: false means a crash dump may be reading
 * them: do not free them. */
bool d9_crash_seg_remove(const uint8_t *bytes);

/* The open segment of memory mode's writer: its buffer (stable until withdrawn), and how many
 * of its bytes are written. */
typedef struct d9_crash_open_view {
    _Atomic(const uint8_t *) bytes;
    _Atomic size_t len;
    _Atomic uint64_t seq, start_ns;
} d9_crash_open_view;
extern d9_crash_open_view d9_crash_open;
void d9_crash_open_publish(const uint8_t *bytes, uint64_t seq, uint64_t start_ns);
/* Before the open buffer is freed or replaced: false: a crash dump may be reading it. */
bool d9_crash_open_withdraw(void);
static inline void d9_crash_open_written(size_t len) {
    atomic_store_explicit(&d9_crash_open.len, len, memory_order_release);
}

/* Install the handlers (at d9_flight_start): dumps go to {dump_dir}/{run_id}.crash. Disk mode
 * gives its run directory (memory mode NULL) and the look-back whose files the dump links;
 * started_ns: CLOCK_MONOTONIC when the recording started. false (said on stderr) when none
 * could be set. */
bool d9_crash_install(const char *dump_dir, const char *run_id, const char *disk_run_dir, uint64_t lookback_ns,
                      uint64_t started_ns);
/* At d9_flight_stop: put back the actions found at install (where ours is still in place). */
void d9_crash_uninstall(void);
/* In a forked child: the parent's table and handlers are not the child's. */
void d9_crash_forget_after_fork(void);

#endif
