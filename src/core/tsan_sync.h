/* d9_tsan_release(addr) / d9_tsan_acquire(addr): in a ThreadSanitizer build, tell TSan about
 * the release (acquire) that the synchronization on `addr` next to it performs, an atomic
 * store (load) or a mutex's unlock (lock); nothing otherwise.
 *
 * Why: the adapters record a loop's park in dial9's epoll_wait wrapper, which TSan's own
 * epoll_wait interceptor calls as the "real" epoll_wait. For the whole of that call TSan counts
 * the thread as inside a blocking call, ignoring interceptors, and then it ignores the
 * thread's atomic operations and mutexes too (no synchronization for it), while its plain
 * writes and its malloc/calloc still count as writes. A release store there publishes nothing
 * to TSan, and the reader's acquire of the same variable, outside, finds data written before
 * it unordered: a report of a race that is not one. __tsan_release / __tsan_acquire are TSan's
 * own annotations: they add exactly the edge the operation makes (with the other side's
 * operation on the same address), whether or not TSan sees the operation, so they hide no race
 * the code has. A release is given before its store (once a reader can see the value, TSan has
 * the edge), an acquire after its load or lock. */
#ifndef D9_CORE_TSAN_SYNC_H
#define D9_CORE_TSAN_SYNC_H

#if defined(__SANITIZE_THREAD__)
#define D9_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define D9_TSAN 1
#endif
#endif

#ifdef D9_TSAN
#include <sanitizer/tsan_interface.h>
#define d9_tsan_release(addr) __tsan_release((void *)(addr))
#define d9_tsan_acquire(addr) __tsan_acquire((void *)(addr))
#else
#define d9_tsan_release(addr) ((void)0)
#define d9_tsan_acquire(addr) ((void)0)
#endif

#endif
