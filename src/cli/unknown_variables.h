/* `dial9 run`'s check of the DIAL9_* variables it passes on: a name no part of dial9 reads (a
 * typo such as DIAL9_TRACEDIR) would be ignored in silence, and the run recorded elsewhere or
 * otherwise than asked. The list is every DIAL9_ name read under src/
 * (tests/scripts/test_unknown_variables.sh keeps the two the same). */
#ifndef D9_CLI_UNKNOWN_VARIABLES_H
#define D9_CLI_UNKNOWN_VARIABLES_H

#include <stdbool.h>

/* Whether dial9 (recorder, shim or CLI) reads the variable NAME. */
bool d9_known_variable(const char *name);

/* Says on stderr, as "WHO: NAME=...: ...", each DIAL9_* variable of the environment that
 * dial9 does not read, with the known name nearest to it; returns how many. */
int d9_warn_unknown_variables(const char *who);

#endif
