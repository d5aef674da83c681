/* A function only the library's .symtab and DWARF name (static: not in .dynsym), for
 * test_symbols_debug_file, which strips the library as distributions do and checks that the
 * name and file:line come back from its separate debug file. */
#include "debuglink_lib.h"

static volatile int g_sink;

enum { DL_HIDDEN_LINE = __LINE__ + 1 }; /* the next line: where the function starts */
__attribute__((noinline)) static int dl_hidden(int x) {
    for (int i = 0; i < x; i++) g_sink += i;
    return g_sink;
}

void *dl_hidden_address(void) { return (void *)dl_hidden; }
int dl_hidden_line(void) { return DL_HIDDEN_LINE; }
int dl_call_hidden(int x) { return dl_hidden(x); }
