/* What this host lets a process observe, detected once at start for the segment metadata and
 * for choosing between the perf and timer samplers: perf_event_paranoid, privileges,
 * kptr_restrict and kernel symbols, the locked-memory budget for perf rings, and whether the
 * main binary was built with frame pointers (stacks are walked with them). */
#ifndef D9_SOURCES_HOST_CAPS_H
#define D9_SOURCES_HOST_CAPS_H

#include <stdbool.h>
#include <stdint.h>

#define D9_CAP_UNKNOWN (-100)

typedef struct d9_host_caps {
    int paranoid;          /* /proc/sys/kernel/perf_event_paranoid, or D9_CAP_UNKNOWN */
    int kptr_restrict;     /* /proc/sys/kernel/kptr_restrict, or D9_CAP_UNKNOWN */
    bool perfmon;          /* CAP_PERFMON or CAP_SYS_ADMIN in the effective set */
    bool kernel_symbols;   /* /proc/kallsyms shows real addresses to us */
    int mlock_kb;          /* perf_event_mlock_kb (per CPU), or D9_CAP_UNKNOWN */
    int ncpu;              /* configured CPUs */
    bool checked;          /* all of the above was read (not when the program was ending) */
    bool fp_scanned;       /* the main binary was scanned (not when the program was ending) */
    int fp_checked;        /* functions of the main binary whose prologue was checked */
    int fp_with;           /* ... of which set up a frame pointer */
} d9_host_caps;

/* Everything above, the main binary's prologues included (a file read, once per process).
 * program_ending: read nothing (checked and fp_scanned stay false, the values unknown): the
 * answers only explain kernel sources, and a program already ending starts none. */
void d9_host_caps_detect(d9_host_caps *c, bool program_ending);

/* Why a start skipped something (here: the detection), in every note that says so. */
#define D9_ENDING_REASON "the program was ending before the recorder's start reached it"
#define D9_HOST_NOT_CHECKED "not checked (" D9_ENDING_REASON ")"

/* Whether perf should allow kernel frames (paranoid <= 1 or CAP_PERFMON): a prediction for
 * the notes; the sources still try and fall back on the kernel's answer. */
bool d9_host_kernel_frames_expected(const d9_host_caps *c);

/* Whether the main binary looks built with frame pointers (a third or more of the sampled
 * functions set one up; builds without score near zero, frameless leaves keep builds with
 * them well under all). */
bool d9_host_has_frame_pointers(const d9_host_caps *c);

/* "yes (31/32 functions)", "no (2/32 functions)" or "unknown (...)" into buf. */
const char *d9_host_fp_verdict(const d9_host_caps *c, char *buf, unsigned len);

/* Share of checked functions that start with a frame-pointer prologue, for the file at path.
 * Exposed for tests. Fills checked/with; false when the file has no usable symbols. */
bool d9_host_scan_frame_pointers(const char *path, int *checked, int *with);

#endif
