#include "sources/host_caps.h"

#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/small_file.h"
#include "sources/elf_funcs.h"

#define FP_SAMPLE_FUNCS 64

static int read_int_file(const char *path) {
    char buf[32], *end;
    if (d9_read_small_file(path, buf, sizeof buf) <= 0) return D9_CAP_UNKNOWN;
    long v = strtol(buf, &end, 10);
    return end != buf && v > INT_MIN && v <= INT_MAX ? (int)v : D9_CAP_UNKNOWN;
}

static bool has_perfmon(void) {
    struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct data[2];
    memset(data, 0, sizeof data);
    if (syscall(SYS_capget, &hdr, data) != 0) return geteuid() == 0;
    const int perfmon = 38, sys_admin = 21; /* CAP_PERFMON may be missing from old headers */
    bool admin = data[sys_admin / 32].effective & (1u << (sys_admin % 32));
    bool pm = data[perfmon / 32].effective & (1u << (perfmon % 32));
    return admin || pm;
}

/* kallsyms prints zeros instead of addresses to readers kptr_restrict does not trust. */
static bool kallsyms_readable(void) {
    FILE *f = fopen("/proc/kallsyms", "re");
    if (!f) return false;
    unsigned long long addr = 0;
    bool ok = false;
    for (int i = 0; i < 8 && fscanf(f, "%llx %*s %*s", &addr) == 1; i++)
        if (addr != 0) {
            ok = true;
            break;
        }
    fclose(f);
    return ok;
}

typedef struct fp_scan {
    long total, stride, index;
    int checked, with;
} fp_scan;

/* C runtime start-up files are built without frame pointers in most distributions: they say
 * nothing about how the application was built. */
static bool is_crt_function(const char *name) {
    static const char *const crt[] = {"_start", "_init", "_fini", "deregister_tm_clones",
                                      "register_tm_clones", "__do_global_dtors_aux",
                                      "frame_dummy", "__libc_csu_init", "__libc_csu_fini"};
    for (size_t i = 0; i < sizeof crt / sizeof crt[0]; i++)
        if (strcmp(name, crt[i]) == 0) return true;
    return false;
}

/* `mov %rsp,%rbp` near the start. Not only at the entry: the compiler schedules other
 * instructions between it and `push %rbp`, and with shrink-wrapping sets the frame up after an
 * early-return test. Code built without frame pointers practically never copies %rsp into
 * %rbp. Leaf functions that need no stack frame have none even in frame-pointer builds (gcc),
 * so a frame-pointer binary scores well above a third, one without close to zero. */
#define PROLOGUE_WINDOW 64
static bool sets_up_frame_pointer(const uint8_t *p, uint64_t size) {
    uint64_t n = size < PROLOGUE_WINDOW ? size : PROLOGUE_WINDOW;
    for (uint64_t i = 0; i + 3 <= n; i++)
        if (p[i] == 0x48 && p[i + 1] == 0x89 && p[i + 2] == 0xe5) return true;
    return false;
}

static bool count_funcs(const d9_elf_funcs_entry *f, void *ctx) {
    fp_scan *s = ctx;
    if (!is_crt_function(f->name)) s->total++;
    return true;
}

static bool check_funcs(const d9_elf_funcs_entry *f, void *ctx) {
    fp_scan *s = ctx;
    if (is_crt_function(f->name)) return true;
    if (s->index++ % s->stride != 0) return true;
    s->checked++;
    if (sets_up_frame_pointer(f->code, f->size)) s->with++;
    return s->checked < FP_SAMPLE_FUNCS;
}

bool d9_host_scan_frame_pointers(const char *path, int *checked, int *with) {
    fp_scan s = {0};
    *checked = *with = 0;
    if (d9_elf_funcs_each(path, count_funcs, &s) < 0 || s.total == 0) return false;
    s.stride = s.total / FP_SAMPLE_FUNCS + 1; /* spread the sample over the whole binary */
    d9_elf_funcs_each(path, check_funcs, &s);
    *checked = s.checked;
    *with = s.with;
    return s.checked > 0;
}

static int g_self_checked, g_self_with;

static void scan_self(void) { d9_host_scan_frame_pointers("/proc/self/exe", &g_self_checked, &g_self_with); }

void d9_host_caps_detect(d9_host_caps *c, bool program_ending) {
    memset(c, 0, sizeof *c);
    if (program_ending) { /* ~0.1 ms of /proc and /sys reads that would explain nothing */
        c->paranoid = c->kptr_restrict = c->mlock_kb = D9_CAP_UNKNOWN;
        c->ncpu = 1;
        return;
    }
    c->checked = true;
    c->paranoid = read_int_file("/proc/sys/kernel/perf_event_paranoid");
    c->kptr_restrict = read_int_file("/proc/sys/kernel/kptr_restrict");
    c->mlock_kb = read_int_file("/proc/sys/kernel/perf_event_mlock_kb");
    c->perfmon = has_perfmon();
    c->kernel_symbols = kallsyms_readable();
    long n = sysconf(_SC_NPROCESSORS_CONF);
    c->ncpu = n > 0 ? (int)n : 1;
    /* the executable does not change while we run: scan it once per process */
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, scan_self);
    c->fp_scanned = true;
    c->fp_checked = g_self_checked;
    c->fp_with = g_self_with;
}

bool d9_host_kernel_frames_expected(const d9_host_caps *c) {
    return c->perfmon || (c->paranoid != D9_CAP_UNKNOWN && c->paranoid <= 1);
}

bool d9_host_has_frame_pointers(const d9_host_caps *c) {
    return c->fp_checked > 0 && c->fp_with * 3 >= c->fp_checked;
}

const char *d9_host_fp_verdict(const d9_host_caps *c, char *buf, unsigned len) {
    if (!c->fp_scanned)
        snprintf(buf, len, D9_HOST_NOT_CHECKED);
    else if (c->fp_checked == 0)
        snprintf(buf, len, "unknown (no function symbols in the main binary)");
    else
        snprintf(buf, len, "%s (%d of %d sampled functions set up a frame pointer)",
                 d9_host_has_frame_pointers(c) ? "yes" : "no", c->fp_with, c->fp_checked);
    return buf;
}
