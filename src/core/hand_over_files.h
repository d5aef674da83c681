/* The owner the run's files were handed to (d9_hand_over_files), for files the writer creates
 * afterwards: one made between the hand-over and the identity change itself (a rotation on
 * the background thread) would otherwise stay root's. */
#ifndef D9_CORE_HAND_OVER_FILES_H
#define D9_CORE_HAND_OVER_FILES_H

#include <stdatomic.h>
#include <stdint.h>
#include <unistd.h>

/* (uid << 32 | gid) + 1, 0 before any hand-over */
extern _Atomic uint64_t d9_files_owner;

/* Give a file just created to that owner (a no-op once the process is that user). */
static inline void d9_files_owner_apply(int fd) {
    uint64_t o = atomic_load(&d9_files_owner);
    if (o) (void)!fchown(fd, (uid_t)((o - 1) >> 32), (gid_t)((o - 1) & 0xffffffffu));
}

#endif
