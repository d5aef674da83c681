#include "sinks/spare_reserve.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool d9_spare_path(char *buf, size_t len, const char *trace_dir, unsigned slot) {
    int n = snprintf(buf, len, "%s/" D9_SPARE_PREFIX "%u", trace_dir, slot);
    return n > 0 && (size_t)n < len;
}

int d9_spare_slot_of(const char *name) {
    size_t p = sizeof D9_SPARE_PREFIX - 1;
    if (strncmp(name, D9_SPARE_PREFIX, p) != 0) return -1;
    if (name[p] < '0' || name[p] >= '0' + D9_SPARE_SLOTS || name[p + 1] != 0) return -1;
    return name[p] - '0';
}

/* Checked by its name (a link is not followed), in a directory only we write to. */
static bool usable(int dir_fd, const char *name, uint64_t size) {
    struct stat st;
    return fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
           st.st_nlink == 1 && (uint64_t)st.st_size == size && (uint64_t)st.st_blocks * 512 >= size;
}

int d9_spare_claim(int trace_fd, unsigned slots, int dest_fd, const char *dest, uint64_t size) {
    char slot[64];
    for (unsigned k = 0; k < D9_SPARE_SLOTS; k++) {
        if (!(slots & 1u << k) || !d9_spare_path(slot, sizeof slot, ".", k)) continue;
        /* Taken whole or not at all: another run may be taking the same slot. */
        if (renameat2(trace_fd, slot, dest_fd, dest, RENAME_NOREPLACE) != 0) continue;
        if (usable(dest_fd, dest, size)) return (int)k;
        (void)unlinkat(dest_fd, dest, 0); /* not a reserve of ours: gone, never opened */
    }
    return -1;
}

bool d9_spare_return(int trace_fd, int from_fd, const char *name) {
    char slot[64];
    for (unsigned k = 0; k < D9_SPARE_SLOTS; k++) {
        if (!d9_spare_path(slot, sizeof slot, ".", k)) return false;
        if (renameat2(from_fd, name, trace_fd, slot, RENAME_NOREPLACE) == 0) return true;
        if (errno != EEXIST) return false; /* not writable, no RENAME_NOREPLACE here...: no slot will do */
    }
    return false;
}
