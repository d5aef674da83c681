/* auto's clock verdict kept beside the runs, so that the processes of one `dial9 run` (a shell
 * script's children, nginx's workers after exec) pay the cross-CPU check once, not each
 * (~6 ms of CPU per start here). The file is the trace directory's: whoever can write it can
 * already change the traces. A verdict holds for the boot it was made in (the kernel's
 * boot_id); a wrong one can only cost timestamp accuracy, never correctness of a run. */
#ifndef D9_CORE_CLOCK_VERDICT_H
#define D9_CORE_CLOCK_VERDICT_H

#include <stdbool.h>
#include <stddef.h>

#define D9_CLOCK_VERDICT_FILE ".dial9-clock"

/* The verdict in dir/.dial9-clock when it was made in this boot (`boot_id`: the kernel's, or a
 * test's): true with *tsc and the reason; false for a missing, foreign or malformed file. */
bool d9_clock_verdict_load(const char *dir, const char *boot_id, bool *tsc, char *reason, size_t reason_len);
/* Write it (a temporary file renamed over the old one: readers see one verdict whole). Best
 * effort: false when dir cannot take it, and nothing else happens. */
bool d9_clock_verdict_store(const char *dir, const char *boot_id, bool tsc, const char *reason);
/* This boot's id (/proc/sys/kernel/random/boot_id) into buf; false when unreadable. */
bool d9_clock_boot_id(char *buf, size_t len);

#endif
