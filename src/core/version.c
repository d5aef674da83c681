/* The library's own version, for a program to compare with the headers it was built with. */
#include "dial9/dial9.h"

unsigned d9_version(void) { return DIAL9_VERSION; }

const char *d9_version_string(void) { return DIAL9_VERSION_STRING; }
