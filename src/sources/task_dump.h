/* Task dumps: where tasks wait. d9_task_suspend(task) captures the call stack at the point
 * where a task registers its continuation, and a TaskDumpEvent is written only when the task
 * is still idle at an exponentially distributed instant after that (mean 10 ms): idle time is
 * sampled like a heap profiler samples bytes, so a task idle for D gets a dump with
 * probability 1 - exp(-D / 10 ms). The capture is the frame-pointer chain and a copy of the top
 * of the stack; the background thread unwinds it with CFI like every other stack, so frames of
 * libraries without frame pointers (a callback called by libc's qsort) do not hide their
 * callers. Design and costs: docs/kernel-sources.md. */
#ifndef D9_SOURCES_TASK_DUMP_H
#define D9_SOURCES_TASK_DUMP_H

#include <stdbool.h>
#include <stdint.h>

#include "sources/stack_unwind.h"

#define D9_TASK_DUMP_MEAN_NS (10u * 1000u * 1000u)
#define D9_TASK_DUMP_SLOTS 4      /* captures one thread holds at once */
#define D9_TASK_DUMP_FRAMES 64

/* Enable for a new run (mean idle sampling interval in ns; 0 = the default); calibrates the
 * tick rate once (~1 ms). */
void d9_task_dumps_start(bool enabled, uint64_t mean_ns);
void d9_task_dumps_stop(void);

typedef struct d9_task_dump_counters {
    uint64_t suspends;     /* d9_task_suspend calls while enabled */
    uint64_t captured;     /* stacks walked */
    uint64_t emitted;      /* TaskDumpEvents written (task still idle at its instant) */
    uint64_t resumed;      /* captures dropped: the task ran again before its instant */
    uint64_t unknown;      /* captures dropped: the thread's records were lost or overwritten */
} d9_task_dump_counters;

/* Totals over all threads since the process started. */
void d9_task_dump_counters_get(d9_task_dump_counters *out);

/* The collector's d9_dump_unwind_fn for the records d9_task_suspend writes: their payload is
 * the frame-pointer chain, the caller's sp and bp and a copy of the top of its stack, unwound
 * here with the objects' CFI (stack_unwind.h) on the background thread. */
uint32_t d9_task_dump_unwind(const uint64_t *payload, uint64_t words, uint64_t *out, uint32_t max, uint8_t *method);

#endif
