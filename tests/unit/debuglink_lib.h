/* See debuglink_lib.c (built with debug_frame_funcs.c into libd9dbglink.so). */
#ifndef D9_TESTS_DEBUGLINK_LIB_H
#define D9_TESTS_DEBUGLINK_LIB_H

void *dl_hidden_address(void); /* the static function's address */
int dl_hidden_line(void);      /* the line it starts on */
int dl_call_hidden(int x);

#endif
