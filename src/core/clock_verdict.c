#include "core/clock_verdict.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/small_file.h"

/* One line: "dial9-clock 1 BOOT_ID tsc|monotonic REASON\n". */
#define VERDICT_MAGIC "dial9-clock 1 "

bool d9_clock_boot_id(char *buf, size_t len) {
    if (d9_read_small_file("/proc/sys/kernel/random/boot_id", buf, len) <= 0) return false;
    buf[strcspn(buf, " \n")] = 0;
    return buf[0] != 0;
}

bool d9_clock_verdict_load(const char *dir, const char *boot_id, bool *tsc, char *reason, size_t reason_len) {
    char path[4096], line[512];
    if (!dir || !boot_id || !boot_id[0]) return false;
    if ((size_t)snprintf(path, sizeof path, "%s/" D9_CLOCK_VERDICT_FILE, dir) >= sizeof path) return false;
    ssize_t n = d9_read_small_file(path, line, sizeof line);
    if (n <= 0 || line[n - 1] != '\n') return false; /* absent, or cut short by a writer's crash */
    line[n - 1] = 0;
    size_t magic = strlen(VERDICT_MAGIC), id = strlen(boot_id);
    if (strncmp(line, VERDICT_MAGIC, magic) != 0) return false;
    const char *p = line + magic;
    if (strncmp(p, boot_id, id) != 0 || p[id] != ' ') return false; /* another boot's, or no id */
    p += id + 1;
    bool is_tsc;
    if (strncmp(p, "tsc ", 4) == 0) is_tsc = true, p += 4;
    else if (strncmp(p, "monotonic ", 10) == 0) is_tsc = false, p += 10;
    else return false;
    *tsc = is_tsc;
    snprintf(reason, reason_len, "%s", p);
    return true;
}

bool d9_clock_verdict_store(const char *dir, const char *boot_id, bool tsc, const char *reason) {
    char path[4096], tmp[4096], line[512];
    if (!dir || !boot_id || !boot_id[0] || strchr(boot_id, ' ') || strchr(reason, '\n')) return false;
    if ((size_t)snprintf(path, sizeof path, "%s/" D9_CLOCK_VERDICT_FILE, dir) >= sizeof path ||
        (size_t)snprintf(tmp, sizeof tmp, "%s/" D9_CLOCK_VERDICT_FILE ".%d", dir, (int)getpid()) >= sizeof tmp)
        return false;
    int len = snprintf(line, sizeof line, VERDICT_MAGIC "%s %s %s\n", boot_id, tsc ? "tsc" : "monotonic", reason);
    if (len <= 0 || (size_t)len >= sizeof line) return false;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) return false;
    bool ok = write(fd, line, (size_t)len) == len;
    ok = close(fd) == 0 && ok;
    if (ok && rename(tmp, path) == 0) return true;
    unlink(tmp);
    return false;
}
