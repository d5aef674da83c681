/* d9_hand_over_files: before a privilege drop, the run directory and its files change owner
 * to the identity the program is about to take, so the recorder keeps creating, renaming,
 * appending to and deleting its files afterwards. Only ownership changes: the modes the writer
 * chose (0700 directory, 0600 files: sinks/trace_dir.h) stay, so nothing becomes readable or
 * writable by anyone else. The recorder reaches them through the handles it opened before
 * the drop. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/hand_over_files.h"
#include "core/last_error.h"
#include "dial9/dial9.h"

_Atomic uint64_t d9_files_owner;

int d9_hand_over_files(unsigned uid, unsigned gid) {
    const char *run_dir = d9_run_dir();
    if (!run_dir) {
        d9_set_error("hand over files: no recording has started");
        return D9_ERR_NOT_STARTED;
    }
    /* The directory is opened without following a symlink, and its entries are changed
     * through it without following theirs: a link planted in the run directory never makes
     * us chown something else. */
    /* Files created from now on get the owner too; set before the scan, so a file is either
     * seen by the scan or created after this store (d9_files_owner_apply). */
    atomic_store(&d9_files_owner, (((uint64_t)uid << 32) | (uint32_t)gid) + 1);
    int dfd = open(run_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0) {
        d9_set_error("hand over files: %s: %s", run_dir, strerror(errno));
        return D9_ERR_SYSTEM;
    }
    int rc = 0, err = 0;
    if (fchown(dfd, (uid_t)uid, (gid_t)gid) != 0) {
        rc = -1;
        err = errno;
    }
    int lfd = dup(dfd);
    DIR *d = lfd >= 0 ? fdopendir(lfd) : NULL;
    if (!d) {
        if (lfd >= 0) close(lfd);
        rc = -1;
        err = errno;
    } else {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2]))) continue;
            if (fchownat(dfd, e->d_name, (uid_t)uid, (gid_t)gid, AT_SYMLINK_NOFOLLOW) != 0 && errno != ENOENT) {
                rc = -1; /* a file sealed and deleted meanwhile is fine; anything else is not */
                err = errno;
            }
        }
        closedir(d);
    }
    close(dfd);
    if (rc != 0) {
        d9_set_error("hand over files in %s to uid %u: %s", run_dir, uid, strerror(err));
        return D9_ERR_SYSTEM;
    }
    return D9_OK;
}
