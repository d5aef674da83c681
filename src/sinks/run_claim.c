#include "sinks/run_claim.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/host_boot_id.h"
#include "sinks/trace_files.h"

int d9_run_claim(const char *run_dir) { return d9_run_claim_at(AT_FDCWD, run_dir); }

int d9_run_claim_at(int dir_fd, const char *name) {
    int fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return -1;
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

void d9_run_boot_id(const char *run_dir, char *out, size_t len) {
    char boot[64];
    d9_host_boot_id(boot, sizeof boot);
    size_t n = strlen(run_dir);
    while (n > 1 && run_dir[n - 1] == '/') n--;
    size_t b = n;
    while (b > 0 && run_dir[b - 1] != '/') b--;
    snprintf(out, len, "%s.%.*s", boot[0] ? boot : "unknown", (int)(n - b), run_dir + b);
}

int d9_run_identity_write(int run_fd, const char *service, const char *boot_id) {
    static const char tmp[] = D9_RUN_IDENTITY_NAME ".tmp";
    /* made here, now, by us (a leftover is removed, never opened), then renamed into place */
    int fd = -1;
    for (int attempt = 0; fd < 0 && attempt < 2; attempt++) {
        fd = openat(run_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0 && (errno != EEXIST || unlinkat(run_fd, tmp, 0) != 0)) return -1;
    }
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        if (fd >= 0) close(fd);
        unlinkat(run_fd, tmp, 0);
        return -1;
    }
    /* one value per line: newlines in them would break the format */
    fprintf(f, "service=%.*s\nboot_id=%.*s\n", (int)strcspn(service, "\n"), service,
            (int)strcspn(boot_id, "\n"), boot_id);
    if (fclose(f) != 0 || renameat(run_fd, tmp, run_fd, D9_RUN_IDENTITY_NAME) != 0) {
        unlinkat(run_fd, tmp, 0);
        return -1;
    }
    return 0;
}

bool d9_run_identity_read(const char *run_dir, char *service, size_t slen, char *boot_id, size_t blen) {
    char path[PATH_MAX], line[1024];
    if (snprintf(path, sizeof path, "%s/%s", run_dir, D9_RUN_IDENTITY_NAME) >= (int)sizeof path) return false;
    FILE *f = fopen(path, "re");
    if (!f) return false;
    service[0] = boot_id[0] = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        if (strncmp(line, "service=", 8) == 0) snprintf(service, slen, "%s", line + 8);
        else if (strncmp(line, "boot_id=", 8) == 0) snprintf(boot_id, blen, "%s", line + 8);
    }
    fclose(f);
    return service[0] != 0;
}

void d9_run_release_if_empty(const char *run_dir) {
    DIR *d = opendir(run_dir);
    if (!d) return;
    struct dirent *e;
    bool trace_left = false;
    while ((e = readdir(d))) {
        uint64_t seq;
        d9_segment_kind kind;
        if (d9_segment_name_parse(e->d_name, &seq, &kind)) trace_left = true;
    }
    closedir(d);
    if (trace_left) return;
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s", run_dir, D9_RUN_IDENTITY_NAME) < (int)sizeof path) unlink(path);
    rmdir(run_dir); /* fails harmlessly when something else is in it */
}

void d9_run_adopt_each(const char *trace_dir, const char *own_run,
                       bool (*fn)(const char *run_dir, const char *service, const char *boot_id, void *ctx),
                       void *ctx) {
    DIR *d = opendir(trace_dir);
    if (!d) return;
    struct dirent *e;
    bool go_on = true;
    while (go_on && (e = readdir(d))) {
        if (e->d_name[0] == '.' || (own_run && strcmp(e->d_name, own_run) == 0)) continue;
        char run_dir[PATH_MAX], service[256], boot[D9_RUN_BOOT_ID_MAX];
        if (snprintf(run_dir, sizeof run_dir, "%s/%s", trace_dir, e->d_name) >= (int)sizeof run_dir) continue;
        struct stat st;
        if (lstat(run_dir, &st) != 0 || !S_ISDIR(st.st_mode)) continue;
        /* Only runs that meant to upload; checked before locking, so that a run being created
         * (no identity yet) is never locked away from its own process. */
        if (!d9_run_identity_read(run_dir, service, sizeof service, boot, sizeof boot)) continue;
        int fd = d9_run_claim(run_dir);
        if (fd < 0) continue; /* alive, or being adopted by another process */
        go_on = fn(run_dir, service, boot, ctx);
        d9_run_release_if_empty(run_dir);
        close(fd);
    }
    closedir(d);
}
