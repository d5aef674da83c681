/* An epoll_wait interposed after libtsan (blocking_call_interposer.c): when set, it calls this
 * first, inside TSan's blocking epoll_wait interceptor in a TSan build. */
#ifndef D9_TESTS_BLOCKING_CALL_INTERPOSER_H
#define D9_TESTS_BLOCKING_CALL_INTERPOSER_H

extern void (*d9t_inside_epoll_wait)(void);

#endif
