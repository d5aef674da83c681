/* The check of the DIAL9_* variables: a name no part of dial9 reads (a typo such as
 * DIAL9_TRACEDIR) would be ignored in silence, and the run recorded elsewhere or otherwise than
 * asked. Said by `dial9 run` for what it passes on, and by the library's d9_config_from_env
 * (once a process) for a program that links it or preloads the shim itself. The list is every
 * DIAL9_ name read under src/ (tests/scripts/test_unknown_variables.sh keeps the two the same). */
#ifndef D9_CORE_UNKNOWN_VARIABLES_H
#define D9_CORE_UNKNOWN_VARIABLES_H

#include <stdbool.h>

/* Whether dial9 (recorder, shim or CLI) reads the variable NAME. */
bool d9_known_variable(const char *name);

/* Says on stderr, as "WHO: NAME=...: ...", each DIAL9_* variable of the environment that
 * dial9 does not read, with the known name nearest to it; returns how many. */
int d9_warn_unknown_variables(const char *who);

/* "1" in the environment: the variables were named already (`dial9 run` sets it for itself and
 * the program it runs, so its warning is not said a second time by the recorder). */
#define D9_VARIABLES_NAMED "DIAL9_VARIABLES_NAMED"

/* d9_warn_unknown_variables("dial9"), the first call of the process only, and not at all when
 * D9_VARIABLES_NAMED is "1" (d9_config_from_env calls it). */
void d9_warn_unknown_variables_once(void);

#endif
