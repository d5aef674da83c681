/* The ends a pause still records (d9_set_enabled(false)): a poll's end and a park's unpark whose
 * start was recorded before the pause. The inline hooks see it in d9__paused, one bit per kind
 * (dial9.h); a bit stays set only while some thread may still owe such an end, so a long pause
 * soon costs the hooks no call again (bench: poll begin+end while paused, <= 1 ns).
 *
 * d9__paused: bit 0 poll ends owed, bit 1 unparks owed, the pause's number above them (so that
 * the background thread never clears a later pause's bits by what it saw of an earlier one). */
#ifndef D9_CORE_PAUSE_ENDS_H
#define D9_CORE_PAUSE_ENDS_H

#include <stddef.h>

#include "core/thread_buffer.h"

#define D9_PAUSED_POLL_ENDS 1
#define D9_PAUSED_UNPARKS 2

/* Recording pauses / resumes or stops (callers hold the recorder's lifecycle lock). */
void d9_pause_ends_begin(void);
void d9_pause_ends_clear(void);

/* After each drain (background thread): from the second drain of a pause on, clear the bits
 * of kinds no thread owes any more. A hook that raced the pause (its begin checked the flag
 * just before it, and marks itself open just after) has long finished by then. */
void d9_pause_ends_settle(d9_thread *const *threads, size_t count);

#endif
