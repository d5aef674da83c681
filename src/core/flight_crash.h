/* Memory mode's crash dump (docs/flight-recorder.md): on SIGSEGV, SIGBUS, SIGILL, SIGFPE or
 * SIGABRT, the sealed segments held in memory and the open segment's bytes so far (what disk
 * mode would have on disk: the sealed files and trace.N.bin.active up to the last drain) are
 * written as a dump with trigger "crash", {dump_dir}/{run_id}.crash/, manifest last; then the
 * program's own action for the signal runs (its handler, or the default: it dies as it would).
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

/* A sealed segment's bytes (memory mode; the collector's thread, as it hands them over).
 * Silently not kept when the table is full (the crash dump counts it as missing). */
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

/* Install the handlers (memory mode, at d9_flight_start): dumps go to {dump_dir}/{run_id}.crash.
 * false (said on stderr) when none could be set. */
bool d9_crash_install(const char *dump_dir, const char *run_id);
/* At d9_flight_stop: put back the actions found at install (where ours is still in place). */
void d9_crash_uninstall(void);
/* In a forked child: the parent's table and handlers are not the child's. */
void d9_crash_forget_after_fork(void);

#endif
