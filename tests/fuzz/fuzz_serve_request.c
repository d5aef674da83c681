/* What `dial9 serve` reads from a request itself (libmicrohttpd parses the HTTP), on arbitrary
 * bytes: the Host header check (src/serve/host_check.c), the path of a viewer file
 * (safe_path.c, against a real directory with a file, a subdirectory and a symlink out), and
 * the /window form's instance and times (instance_window.c). Never reads past the value (ASan)
 * nor overflows (UBSan); a Host with a space, a control byte or DEL is never let in unless
 * every host is allowed; a path opens only the root's own regular files; a time it
 * accepts is digits where the form has digits. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* O_PATH */
#endif
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "serve/host_check.h"
#include "serve/instance_window.h"
#include "serve/safe_path.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int g_root = -1;
static struct stat g_files[2]; /* index.html and sub/a.js: what may be opened */

static int make_root(void) {
    char dir[] = "/tmp/dial9-fuzz-serve-XXXXXX";
    if (!mkdtemp(dir)) return -1;
    char p[256];
    snprintf(p, sizeof p, "%s/sub", dir);
    if (mkdir(p, 0700) != 0) return -1;
    const char *files[2] = {"index.html", "sub/a.js"};
    for (int i = 0; i < 2; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, files[i]);
        FILE *f = fopen(p, "w");
        if (!f) return -1;
        fputs("x", f);
        fclose(f);
        if (stat(p, &g_files[i]) != 0) return -1;
    }
    snprintf(p, sizeof p, "%s/out", dir);
    if (symlink("/etc", p) != 0) return -1;
    return open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC); /* left behind in /tmp: tiny */
}

static void host(const char *s) {
    static char *allowed[] = {"trace.example.com", "[::1]:80"};
    static const char *binds[] = {"127.0.0.1", "0.0.0.0", "::1", "192.0.2.7"};
    bool bad = false;
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) bad |= *c <= 0x20 || *c == 0x7f;
    for (size_t i = 0; i < sizeof binds / sizeof *binds; i++) {
        d9_host_check h;
        if (!d9_host_check_init(&h, binds[i], allowed, 2)) abort();
        if (d9_host_allowed(&h, s) && bad) abort();
    }
}

static void path(const char *s) {
    int fd;
    struct stat st;
    bool is_index;
    if (d9_safe_open(g_root, s, &fd, &st, &is_index) != D9_PATH_OK) return;
    bool known = false;
    for (int i = 0; i < 2; i++) known |= st.st_dev == g_files[i].st_dev && st.st_ino == g_files[i].st_ino;
    if (!known || !S_ISREG(st.st_mode)) abort(); /* outside the root, or not a regular file */
    close(fd);
}

/* "YYYY-MM-DD?HH:MM[:SS][Z]": the places of digits */
static bool digits_where_the_form_has_them(const char *s) {
    static const int at[] = {0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15};
    size_t n = strlen(s);
    if (strspn(s, "0123456789") == n) return true;
    for (size_t i = 0; i < sizeof at / sizeof *at; i++)
        if ((size_t)at[i] >= n || s[at[i]] < '0' || s[at[i]] > '9') return false;
    if (n > 16 && s[16] == ':' && (n < 19 || s[17] < '0' || s[17] > '9' || s[18] < '0' || s[18] > '9')) return false;
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (g_root < 0 && (g_root = make_root()) < 0) abort();
    char *s = malloc(size + 1); /* exact size: a read past the value is an ASan error */
    if (!s) return 0;
    memcpy(s, data, size);
    s[size] = 0;
    host(s);
    path(s);
    long long t;
    if (d9_parse_utc(s, &t) == 0 && !digits_where_the_form_has_them(s)) abort();
    char inst[64];
    if (d9_run_instance(s, inst, sizeof inst) && (!memchr(inst, 0, sizeof inst) || strncmp(inst, s, strlen(inst))))
        abort();
    free(s);
    return 0;
}
