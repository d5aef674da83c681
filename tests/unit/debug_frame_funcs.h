/* See debug_frame_funcs.c: frameless functions described only by .debug_frame. */
#ifndef D9_TESTS_DEBUG_FRAME_FUNCS_H
#define D9_TESTS_DEBUG_FRAME_FUNCS_H

/* df_outer calls df_middle, which calls fn. */
int df_outer(void (*fn)(void), int x);
int df_middle(void (*fn)(void), int x);

#endif
