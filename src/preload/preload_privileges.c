/* Privilege drops: a daemon started as root (memcached -u, nginx, unbound...) binds its ports,
 * then takes an unprivileged user with setuid and friends. The recorder's run directory and
 * files were made by root, so the new user could not create the next segment, seal one or
 * append symbols: recording would stop there. Each call that changes the effective uid first
 * hands the run's files to that uid (d9_hand_over_files), while the process still may, with
 * the group the process has by then (daemons call setgid before setuid).
 *
 * setgid, setgroups and capset alone change nothing we need: the files stay owned by the
 * (still root) uid that writes them. A raw syscall(SYS_setuid) bypasses this (docs/zero-code.md). */
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <unistd.h>

#include "preload.h"

/* Hand the files over to `target` when the effective uid is about to become it. */
static void before_euid_change(uid_t target) {
    if (target == (uid_t)-1 || target == geteuid() || geteuid() != 0) return;
    int saved = errno;
    /* A forked child's run, owed but not begun (nginx's workers take `user www-data;` before
     * their loop runs), begins now: the new user could not create it in the parent's trace
     * directory. A start in progress finishes first, as root: it makes the run directory and
     * the first segment, which the new user could not. */
    d9p_start_pending_child();
    if (d9p_start_wait(2000) && atomic_load_explicit(&d9p_recording, memory_order_relaxed) &&
        d9_hand_over_files(target, getegid()) != 0)
        fprintf(stderr, "dial9: %s: recording may stop after the identity change\n", d9_last_error());
    errno = saved;
}

D9P_EXPORT int setuid(uid_t uid) {
    before_euid_change(uid);
    return D9P_NEXT(setuid)(uid);
}

D9P_EXPORT int seteuid(uid_t euid) {
    before_euid_change(euid);
    return D9P_NEXT(seteuid)(euid);
}

D9P_EXPORT int setreuid(uid_t ruid, uid_t euid) {
    before_euid_change(euid);
    return D9P_NEXT(setreuid)(ruid, euid);
}

D9P_EXPORT int setresuid(uid_t ruid, uid_t euid, uid_t suid) {
    before_euid_change(euid);
    return D9P_NEXT(setresuid)(ruid, euid, suid);
}
