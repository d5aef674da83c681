/* The kernel image's symbols cached per boot (src/symbols/kallsyms_cache.c): the image part
 * answers exactly as the whole table inside [_stext, _etext) and for nothing outside; its bytes
 * come back only whole and intact; the cache file is read only from a directory and a file of
 * this user's alone, for this boot; the symbolizer names image addresses from it and reads
 * /proc/kallsyms for the rest. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "common/host_boot_id.h"
#include "symbols/kallsyms.h"
#include "symbols/kallsyms_cache.h"
#include "symbols/symbolizer.h"

/* A kallsyms as the kernel prints it: the image's text, then a module's, then a BPF program. */
static const char fake_text[] =
    "0000000000000000 A fixed_percpu_data\n"
    "ffffffff81000000 T _stext\n"
    "ffffffff81000000 T startup_64\n"
    "ffffffff81000100 t helper_a\n"
    "ffffffff81000200 T schedule\n"
    "ffffffff81000200 W schedule_alias\n"
    "ffffffff81000300 D some_data\n"
    "ffffffff81000400 T do_syscall_64\n"
    "ffffffff81001000 T _etext\n"
    "ffffffffa0000000 t ext4_read\t[ext4]\n"
    "ffffffffa0000800 t bpf_prog_6deef7357e7b4530\t[bpf]\n";

static char *write_temp(const char *text, size_t len) {
    static char path[64];
    snprintf(path, sizeof path, "/tmp/d9test-ksyms-XXXXXX");
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    CHECK(write(fd, text, len) == (ssize_t)len);
    close(fd);
    return path;
}

static void same_name(const char *a, const char *b) {
    CHECK((a == NULL) == (b == NULL));
    if (a && b) CHECK_STR(a, b);
}

static void test_image_part(void) {
    char err[256];
    char *path = write_temp(fake_text, sizeof fake_text - 1);
    d9_kallsyms *full = d9_kallsyms_load(path, err, sizeof err);
    unlink(path);
    CHECK(full != NULL);
    if (!full) return;
    d9_kallsyms *part = d9_kallsyms_image_part(full);
    CHECK(part != NULL);
    if (!part) return;
    CHECK(!d9_kallsyms_covers(full, 0xffffffff81000200ull)); /* a whole table answers for nothing */
    CHECK(!d9_kallsyms_covers(part, 0xffffffff80ffffffull));
    CHECK(d9_kallsyms_covers(part, 0xffffffff81000000ull));
    CHECK(d9_kallsyms_covers(part, 0xffffffff81000fffull));
    CHECK(!d9_kallsyms_covers(part, 0xffffffff81001000ull));
    CHECK(!d9_kallsyms_covers(part, 0xffffffffa0000010ull)); /* modules and BPF: from the whole table */
    for (uint64_t a = 0xffffffff81000000ull; a < 0xffffffff81001000ull; a += 0x40)
        same_name(d9_kallsyms_lookup(part, a), d9_kallsyms_lookup(full, a));
    CHECK_STR(d9_kallsyms_lookup(part, 0xffffffff81000210ull), "schedule");
    CHECK(d9_kallsyms_lookup(part, 0xffffffff81000310ull) == NULL); /* data */

    /* bytes and back: the same answers; every cut and a damaged symbol refused */
    size_t len;
    uint8_t *bytes = d9_kallsyms_serialize(part, &len);
    CHECK(bytes != NULL);
    d9_kallsyms *back = d9_kallsyms_from_bytes(bytes, len, false, err, sizeof err);
    CHECK(back != NULL);
    if (back) {
        CHECK_EQ_U64(d9_kallsyms_count(back), d9_kallsyms_count(part));
        CHECK(d9_kallsyms_covers(back, 0xffffffff81000400ull) && !d9_kallsyms_covers(back, 0xffffffff81001000ull));
        for (uint64_t a = 0xffffffff80fff000ull; a < 0xffffffff81002000ull; a += 0x10)
            same_name(d9_kallsyms_lookup(back, a), d9_kallsyms_lookup(part, a));
    }
    d9_kallsyms_free(back);
    for (size_t cut = 0; cut < len; cut++) CHECK(d9_kallsyms_from_bytes(bytes, cut, false, err, sizeof err) == NULL);
    uint8_t *bad = malloc(len);
    memcpy(bad, bytes, len);
    bad[40 + 8] = 0xff; /* the first symbol's name offset, past the names */
    CHECK(d9_kallsyms_from_bytes(bad, len, false, err, sizeof err) == NULL);
    memcpy(bad, bytes, len);
    memset(bad + 40, 0, 8); /* the first symbol's address: below the range's start */
    CHECK(d9_kallsyms_from_bytes(bad, len, false, err, sizeof err) == NULL);
    memcpy(bad, bytes, len);
    memcpy(bad + 40 + 16, bad + 40 + 48, 8); /* out of order: the second symbol at the fourth's address */
    CHECK(d9_kallsyms_from_bytes(bad, len, false, err, sizeof err) == NULL);
    free(bad);
    free(bytes);

    /* no _stext/_etext: no part */
    static const char no_bounds[] = "ffffffff81000000 T startup_64\n";
    path = write_temp(no_bounds, sizeof no_bounds - 1);
    d9_kallsyms *k = d9_kallsyms_load(path, err, sizeof err);
    unlink(path);
    CHECK(k != NULL && d9_kallsyms_image_part(k) == NULL);
    d9_kallsyms_free(k);
    d9_kallsyms_free(part);
    d9_kallsyms_free(full);
}

static bool exists(const char *dir, const char *name) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return access(p, F_OK) == 0;
}

static void test_cache_files(void) {
    char err[256];
    char dir_tpl[] = "/tmp/d9test-kcache-XXXXXX";
    char *base = mkdtemp(dir_tpl);
    CHECK(base != NULL);
    if (!base) return;
    char dir[256];
    snprintf(dir, sizeof dir, "%s/cache", base); /* made by the write */
    char *path = write_temp(fake_text, sizeof fake_text - 1);
    d9_kallsyms *full = d9_kallsyms_load(path, err, sizeof err);
    unlink(path);
    if (!full) return;

    CHECK(d9_kallsyms_cache_read(dir, "0123-abcd", err, sizeof err) == NULL); /* nothing yet */
    CHECK(d9_kallsyms_cache_write(dir, "0123-abcd", full));
    struct stat st;
    CHECK(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700);
    char file[512];
    snprintf(file, sizeof file, "%s/kallsyms-0123-abcd", dir);
    CHECK(stat(file, &st) == 0 && (st.st_mode & 0777) == 0600);
    CHECK(!d9_kallsyms_cache_write(dir, "../x", full)); /* a boot id is no path */

    d9_kallsyms *hit = d9_kallsyms_cache_read(dir, "0123-abcd", err, sizeof err);
    if (!hit && strstr(err, "kptr_restrict")) {
        printf("skip: cache reads: %s\n", err);
    } else {
        CHECK(hit != NULL);
        if (!hit) fprintf(stderr, "cache read: %s\n", err);
        CHECK(hit && d9_kallsyms_covers(hit, 0xffffffff81000200ull));
        if (hit) CHECK_STR(d9_kallsyms_lookup(hit, 0xffffffff81000210ull), "schedule");
        d9_kallsyms_free(hit);
        CHECK(d9_kallsyms_cache_read(dir, "4567", err, sizeof err) == NULL); /* another boot */

        /* a directory others may write to is not trusted, nor a file that is a link */
        CHECK(chmod(dir, 0770) == 0);
        CHECK(d9_kallsyms_cache_read(dir, "0123-abcd", err, sizeof err) == NULL);
        CHECK(!d9_kallsyms_cache_write(dir, "0123-abcd", full));
        CHECK(chmod(dir, 0700) == 0);
        char link[512];
        snprintf(link, sizeof link, "%s/kallsyms-beef", dir);
        CHECK(symlink(file, link) == 0);
        CHECK(d9_kallsyms_cache_read(dir, "beef", err, sizeof err) == NULL);
        unlink(link);
        /* a damaged file is refused */
        int fd = open(file, O_WRONLY);
        CHECK(fd >= 0 && pwrite(fd, "XXXX", 4, 0) == 4);
        close(fd);
        CHECK(d9_kallsyms_cache_read(dir, "0123-abcd", err, sizeof err) == NULL);
    }
    /* the next boot's file replaces this one's, and a killed writer's half-written file goes */
    char partial[512];
    snprintf(partial, sizeof partial, "%s/.kallsyms-Ab12Cd", dir);
    FILE *pf = fopen(partial, "w");
    CHECK(pf != NULL);
    if (pf) fclose(pf);
    CHECK(d9_kallsyms_cache_write(dir, "89ab", full));
    CHECK(exists(dir, "kallsyms-89ab") && !exists(dir, "kallsyms-0123-abcd"));
    CHECK(!exists(dir, ".kallsyms-Ab12Cd"));
    d9_kallsyms_free(full);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    CHECK(system(cmd) == 0);
}

/* An address of the kernel image and one outside it (init text, freed after boot), from the
 * real /proc/kallsyms; false when it shows no addresses. */
static bool real_addresses(uint64_t *in_image, uint64_t *outside) {
    FILE *f = fopen("/proc/kallsyms", "r");
    if (!f) return false;
    char line[512];
    uint64_t stext = 0, sinit = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long long a;
        char type, name[256];
        if (sscanf(line, "%llx %c %255s", &a, &type, name) != 3) continue;
        if (!strcmp(name, "_stext")) stext = a;
        if (!strcmp(name, "_sinittext")) sinit = a;
    }
    fclose(f);
    *in_image = stext + 0x10;
    *outside = sinit + 0x10;
    return stext != 0 && sinit != 0;
}

static void resolve(const char *dir, uint64_t addr, char *name, size_t len, bool *cache, bool *whole) {
    d9_sym_options opt = {.kallsyms_cache_dir = dir};
    d9_symbolizer *s = d9_symbolizer_new(&opt);
    CHECK(s != NULL);
    if (!s) return;
    d9_symbolizer_use_kallsyms(s, true);
    CHECK(d9_symbolizer_set_maps(s, NULL, 0));
    d9_sym_result r;
    d9_symbolizer_resolve(s, addr, D9_ADDR_EXACT, &r);
    snprintf(name, len, "%s", r.named ? r.frames[0].name : "");
    d9_symbolizer_kernel_sources(s, cache, whole);
    d9_symbolizer_free(s);
}

static void test_symbolizer(void) {
    uint64_t in_image, outside;
    if (!real_addresses(&in_image, &outside)) {
        printf("skip: /proc/kallsyms shows no addresses here\n");
        return;
    }
    char tpl[] = "/tmp/d9test-kcache-XXXXXX";
    char *dir = mkdtemp(tpl);
    CHECK(dir != NULL && chmod(dir, 0700) == 0);
    char first[256], second[256], third[256];
    bool cache, whole;
    resolve(dir, in_image, first, sizeof first, &cache, &whole);
    CHECK(first[0] != 0);
    CHECK(!cache && whole); /* read whole, and written for the next */
    resolve(dir, in_image, second, sizeof second, &cache, &whole);
    CHECK_STR(second, first);
    CHECK(cache && !whole); /* from the cache alone */
    resolve(dir, outside, third, sizeof third, &cache, &whole);
    CHECK(!cache && whole); /* outside the image: read whole */
    resolve("", in_image, third, sizeof third, &cache, &whole);
    CHECK_STR(third, first);
    CHECK(!cache && whole); /* no cache asked for */
    printf("kernel image address 0x%" PRIx64 ": %s\n", in_image, first);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
}

int main(void) {
    test_image_part();
    test_cache_files();
    test_symbolizer();
    return d9t_summary("test_kallsyms_cache");
}
