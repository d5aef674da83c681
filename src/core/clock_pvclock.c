#include "core/clock_pvclock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define PAGE 4096u /* x86-64's, the only architecture with a pvclock page in the vDSO */

d9_pvclock_verdict d9_pvclock_judge(const uint8_t info[D9_PVCLOCK_INFO_BYTES]) {
    uint32_t version, mul;
    memcpy(&version, info, 4);
    memcpy(&mul, info + 24, 4);
    int8_t shift = (int8_t)info[28];
    uint8_t flags = info[29];
    if (version & 1u) return D9_PVCLOCK_TORN;
    /* A hypervisor's scale is never 0, its shift a few bits either way (Linux's own choose
     * within ±32) and its flags only the two defined. Anything else is not this structure. */
    if (mul == 0 || shift < -32 || shift > 32) return D9_PVCLOCK_GARBAGE;
    if (flags & ~(D9_PVCLOCK_TSC_STABLE_BIT | D9_PVCLOCK_GUEST_STOPPED)) return D9_PVCLOCK_GARBAGE;
    return (flags & D9_PVCLOCK_TSC_STABLE_BIT) ? D9_PVCLOCK_STABLE : D9_PVCLOCK_UNSTABLE;
}

/* What the [vvar] lines of a maps file say, read one line at a time. */
typedef struct vvar_lines {
    uintptr_t vvar_start, vvar_end, vclock_start;
} vvar_lines;

static bool ends_with(const char *line, size_t len, const char *tail) {
    size_t n = strlen(tail);
    while (len && (line[len - 1] == '\n' || line[len - 1] == ' ')) len--;
    return len >= n && memcmp(line + len - n, tail, n) == 0;
}

static void take_line(vvar_lines *v, const char *line, size_t len) {
    bool vclock = ends_with(line, len, "[vvar_vclock]");
    if (!vclock && !ends_with(line, len, "[vvar]")) return;
    char addr[64];
    size_t n = len < sizeof addr - 1 ? len : sizeof addr - 1;
    memcpy(addr, line, n);
    addr[n] = 0;
    unsigned long lo, hi;
    if (sscanf(addr, "%lx-%lx", &lo, &hi) != 2 || hi <= lo) return;
    if (vclock) v->vclock_start = lo;
    else v->vvar_start = lo, v->vvar_end = hi;
}

static uintptr_t page_of(const vvar_lines *v) {
    if (v->vclock_start) return v->vclock_start;
    if (v->vvar_start && v->vvar_end - v->vvar_start >= 2 * PAGE) return v->vvar_start + PAGE;
    return 0;
}

uintptr_t d9_pvclock_page_in_maps(const char *maps_text) {
    vvar_lines v = {0};
    for (const char *p = maps_text; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        take_line(&v, p, len);
        p += len + (nl != NULL);
    }
    return page_of(&v);
}

/* /proc/self/maps streamed through a line buffer: a large process's runs to megabytes, and
 * the [vvar] lines are near its end. */
static uintptr_t pvclock_page_of_self(void) {
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    vvar_lines v = {0};
    char buf[8192];
    size_t have = 0;
    for (;;) {
        ssize_t n = read(fd, buf + have, sizeof buf - have);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        have += (size_t)n;
        size_t start = 0;
        for (char *nl; (nl = memchr(buf + start, '\n', have - start)) != NULL;) {
            take_line(&v, buf + start, (size_t)(nl - (buf + start)));
            start = (size_t)(nl - buf) + 1;
        }
        if (start == 0 && have == sizeof buf) start = have; /* a line longer than the buffer: a path, not ours */
        memmove(buf, buf + start, have - start);
        have -= start;
    }
    if (have) take_line(&v, buf, have);
    close(fd);
    return page_of(&v);
}

/* Copy `len` bytes at `addr` through the pipe: 0, or the errno (EFAULT: not mapped). */
static int copy_through(int fds[2], uintptr_t addr, uint8_t *out, size_t len) {
    ssize_t w = write(fds[1], (const void *)addr, len);
    if (w != (ssize_t)len) return w < 0 ? errno : EIO;
    ssize_t r = read(fds[0], out, len);
    return r == (ssize_t)len ? 0 : (r < 0 ? errno : EIO);
}

int d9_pvclock_read_self(uint8_t info[D9_PVCLOCK_INFO_BYTES], char *why, size_t why_len) {
    if (why_len) why[0] = 0;
    uintptr_t page = pvclock_page_of_self();
    if (!page) {
        snprintf(why, why_len, "no [vvar] page for the pvclock in /proc/self/maps");
        return -1;
    }
    int fds[2];
    if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
        snprintf(why, why_len, "cannot read the pvclock page (pipe: %s)", strerror(errno));
        return -1;
    }
    int verdict = -1;
    for (int tries = 0; tries < 8 && verdict < 0; tries++) {
        uint8_t again[D9_PVCLOCK_INFO_BYTES];
        int err = copy_through(fds, page, info, D9_PVCLOCK_INFO_BYTES);
        if (!err) err = copy_through(fds, page, again, D9_PVCLOCK_INFO_BYTES);
        if (err) {
            snprintf(why, why_len, "the vDSO maps no pvclock page (%s): it does not read the TSC",
                     strerror(err));
            break;
        }
        d9_pvclock_verdict v = d9_pvclock_judge(info);
        if (v == D9_PVCLOCK_TORN || memcmp(info, again, 4) != 0) continue; /* the host was writing it */
        verdict = (int)v;
    }
    if (verdict < 0 && why_len && why[0] == 0) snprintf(why, why_len, "the pvclock page was being updated at every read");
    close(fds[0]);
    close(fds[1]);
    return verdict;
}
