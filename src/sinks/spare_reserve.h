/* Unused final reserves, kept in the trace directory for the next run.
 *
 * Each run holds a preallocated hidden file for its last words (d9_segw_set_final_reserve);
 * almost every run ends without needing it. Creating that file and removing it again costs an
 * inode and a block allocation each way, and on an ext4 file system with many recent deletions
 * an inode allocation alone can take longer than the rest of a short program's start. So a
 * run that did not use its reserve moves it to a slot of the trace directory
 * (".dial9-spare-reserve.N", N < D9_SPARE_SLOTS) and the next run's writer moves it into its
 * own run directory: two renames instead.
 *
 * Slots are counted in the disk budget like any other byte under the trace directory (as
 * pinned bytes: the budget never deletes them; there are at most D9_SPARE_SLOTS). A slot is
 * trusted only as a regular file of ours, with one link, of the expected size and fully
 * allocated; anything else found there is removed, never opened. */
#ifndef D9_SINKS_SPARE_RESERVE_H
#define D9_SINKS_SPARE_RESERVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define D9_SPARE_SLOTS 4
#define D9_SPARE_PREFIX ".dial9-spare-reserve."

/* Slot `slot`'s path under trace_dir; false when it does not fit in buf. */
bool d9_spare_path(char *buf, size_t len, const char *trace_dir, unsigned slot);

/* The slot number of a trace-directory entry name, or -1 when it is not a slot. */
int d9_spare_slot_of(const char *name);

/* Move the spare in one of the slots of the trace directory trace_fd whose bit is set in
 * `slots` to `dest` in directory dest_fd (one nobody else writes to) and check it: `size` bytes,
 * allocated, a regular file of ours with one link. Returns the slot taken, or -1 with nothing
 * left at dest. What fails the check is removed. */
int d9_spare_claim(int trace_fd, unsigned slots, int dest_fd, const char *dest, uint64_t size);

/* Move the unused reserve `name` in directory from_fd into a free slot of trace_fd: true, or
 * false (still there). */
bool d9_spare_return(int trace_fd, int from_fd, const char *name);

#endif
