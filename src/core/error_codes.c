/* d9_strerror: the kind of failure a d9_error code names (d9_last_error has the details). */
#include "dial9/dial9.h"

const char *d9_strerror(int code) {
    switch ((d9_error)code) {
    case D9_OK: return "no error";
    case D9_ERR_INVALID: return "invalid configuration or argument";
    case D9_ERR_ALREADY_STARTED: return "already recording";
    case D9_ERR_TRACE_DIR: return "trace directory cannot be created or written";
    case D9_ERR_NO_MEMORY: return "out of memory";
    case D9_ERR_THREAD: return "cannot create the background thread";
    case D9_ERR_NOT_STARTED: return "no recording has started";
    case D9_ERR_SYSTEM: return "system call failed";
    }
    return "unknown error";
}
