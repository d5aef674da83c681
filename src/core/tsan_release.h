/* d9_tsan_release(addr): in a ThreadSanitizer build, tell TSan about the release that the
 * atomic store to `addr` right after it performs; nothing otherwise.
 *
 * Why: the adapters record a loop's park in dial9's epoll_wait wrapper, which TSan's own
 * epoll_wait interceptor calls as the "real" epoll_wait. For the whole of that call TSan counts
 * the thread as inside a blocking call, ignoring interceptors, and then it ignores the
 * thread's atomic operations too (they are not synchronization for it), while its plain writes
 * and its malloc/calloc still count as writes. A release store there publishes nothing to TSan,
 * and the reader's acquire load of the same variable, outside, finds data written before it
 * unordered: a report of a race that is not one. __tsan_release is TSan's own annotation: it
 * adds exactly the edge the store makes (to an acquire of the same address), whether or not
 * TSan sees the store, so it hides no race the code has. Given before the store: once a
 * reader can see the value, TSan has the edge. */
#ifndef D9_CORE_TSAN_RELEASE_H
#define D9_CORE_TSAN_RELEASE_H

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
#else
#define d9_tsan_release(addr) ((void)0)
#endif

#endif
