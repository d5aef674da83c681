/* For the preload helper programs: wait until libdial9-preload.so's recorder runs. The shim
 * starts it on a thread of its own, so on a busy machine the program's first events may come
 * before it and go unrecorded; a test that counts them waits first. d9_run_dir answers only
 * once d9_start is done. Nothing to wait for without the shim or with recording disabled. */
#ifndef D9P_WAIT_FOR_RECORDER_H
#define D9P_WAIT_FOR_RECORDER_H

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline void d9p_wait_for_recorder(void) {
    const char *(*run_dir)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "d9_run_dir");
    const char *enabled = getenv("DIAL9_ENABLED");
    if (!run_dir || (enabled && !strcmp(enabled, "0"))) return;
    struct timespec ms = {0, 1000000};
    for (int i = 0; i < 30000 && !run_dir(); i++) nanosleep(&ms, NULL);
}

#endif
