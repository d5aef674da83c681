/* Spare final reserves (sinks/spare_reserve.h): a run that did not need its reserve leaves it in
 * a slot of the trace directory, and the next run's writer takes that very file (no new inode,
 * no new blocks); the disk budget counts it wherever it is. A slot holding anything else (a
 * symlink, a FIFO, a file with another link, a sparse or wrongly sized one) is removed without
 * being opened or followed when tried, and the writer makes a fresh reserve. Full slots: the
 * unused reserve is removed, as before spares existed. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "sinks/segment_writer.h"
#include "sinks/spare_reserve.h"
#include "trace_files_util.h"

#define RESERVE 8192u

static ino_t inode_of(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0 ? st.st_ino : 0;
}

static bool exists(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0;
}

static d9_segment_writer *open_writer(const char *dir, const char *run) {
    char err[256];
    d9_segw_config cfg = {.trace_dir = dir, .run_id = run, .max_file_size = 64 * 1024,
                          .max_total_size = 1024 * 1024};
    d9_segment_writer *w = d9_segw_open(&cfg, err, sizeof err);
    if (!w) fprintf(stderr, "d9_segw_open: %s\n", err);
    else d9_segw_set_final_reserve(w, RESERVE);
    return w;
}

static uint64_t on_disk(d9_segment_writer *w) {
    d9_segw_stats s;
    d9_segw_get_stats(w, &s);
    return s.bytes_on_disk;
}

/* One run: opens, writes 100 bytes (which takes the reserve), closes. The reserve's inode, or 0. */
static ino_t one_run(const char *dir, const char *run, bool check_budget) {
    d9_segment_writer *w = open_writer(dir, run);
    CHECK(w != NULL);
    if (!w) return 0;
    if (check_budget) CHECK_EQ_U64(on_disk(w), d9t_tree_bytes(dir, false));
    uint8_t buf[100] = {1};
    CHECK(d9_segw_write(w, buf, sizeof buf) == 0);
    CHECK(d9_segw_has_final_reserve(w));
    if (check_budget) CHECK_EQ_U64(on_disk(w), d9t_tree_bytes(dir, false));
    char reserve[512];
    snprintf(reserve, sizeof reserve, "%s/%s/" D9_SEGW_FINAL_RESERVE_NAME, dir, run);
    ino_t ino = inode_of(reserve);
    d9_segw_close(w);
    CHECK(!exists(reserve));
    return ino;
}

static void test_names(void) {
    CHECK(d9_spare_slot_of(D9_SPARE_PREFIX "0") == 0);
    CHECK(d9_spare_slot_of(D9_SPARE_PREFIX "3") == 3);
    CHECK(d9_spare_slot_of(D9_SPARE_PREFIX "4") == -1);
    CHECK(d9_spare_slot_of(D9_SPARE_PREFIX "01") == -1);
    CHECK(d9_spare_slot_of(D9_SPARE_PREFIX) == -1);
    CHECK(d9_spare_slot_of(".dial9-runs") == -1);
    char p[64];
    CHECK(d9_spare_path(p, sizeof p, "/t", 2) && strcmp(p, "/t/" D9_SPARE_PREFIX "2") == 0);
    CHECK(!d9_spare_path(p, 8, "/t", 2));
}

/* The reserve goes round: made once, then the same file from run to run. */
static void test_reuse(void) {
    char *dir = d9t_mkdtemp("spare");
    char slot0[512];
    d9_spare_path(slot0, sizeof slot0, dir, 0);
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    CHECK(d9_spare_claim(dfd, 0xf, dfd, "taken", RESERVE) == -1); /* nothing to take */
    close(dfd);

    ino_t first = one_run(dir, "run-a", true);
    CHECK(first != 0);
    CHECK(exists(slot0));
    CHECK_EQ_U64(inode_of(slot0), first);
    struct stat st;
    CHECK(lstat(slot0, &st) == 0 && st.st_size == RESERVE && (uint64_t)st.st_blocks * 512 >= RESERVE);

    ino_t second = one_run(dir, "run-b", true); /* the budget counts the slot, then the reserve */
    CHECK_EQ_U64(second, first);
    CHECK_EQ_U64(inode_of(slot0), first); /* and back again */
    ino_t third = one_run(dir, "run-c", true);
    CHECK_EQ_U64(third, first);

    /* A writer that keeps no reserve leaves the slot alone, and counts it. */
    char err[256];
    d9_segw_config cfg = {.trace_dir = dir, .run_id = "run-d", .max_file_size = 64 * 1024,
                          .max_total_size = 1024 * 1024};
    d9_segment_writer *w = d9_segw_open(&cfg, err, sizeof err);
    CHECK(w != NULL);
    if (w) {
        uint8_t buf[10] = {0};
        CHECK(d9_segw_write(w, buf, sizeof buf) == 0);
        CHECK_EQ_U64(on_disk(w), d9t_tree_bytes(dir, false));
        d9_segw_close(w);
    }
    CHECK_EQ_U64(inode_of(slot0), first);
    if (!d9t_failed) d9t_rm_rf(dir);
    free(dir);
}

/* The last words go into a reserve taken from a slot, as into a fresh one. */
static void test_final_words_in_spare(void) {
    char *dir = d9t_mkdtemp("spare-final");
    ino_t first = one_run(dir, "run-a", false);
    d9_segment_writer *w = open_writer(dir, "run-b");
    CHECK(w != NULL);
    if (w) {
        uint8_t buf[100] = {1}, last[300];
        memset(last, 7, sizeof last);
        CHECK(d9_segw_write(w, buf, sizeof buf) == 0);
        CHECK(d9_segw_write_final(w, last, sizeof last) == 0);
        char p[512];
        snprintf(p, sizeof p, "%s/run-b/trace.1.bin", dir);
        CHECK_EQ_U64(inode_of(p), first); /* the spare, now the last segment */
        struct stat st;
        CHECK(lstat(p, &st) == 0 && st.st_size == sizeof last);
        d9_segw_close(w);
    }
    char slot0[512];
    d9_spare_path(slot0, sizeof slot0, dir, 0);
    CHECK(!exists(slot0)); /* used up */
    if (!d9t_failed) d9t_rm_rf(dir);
    free(dir);
}

/* Whatever else sits in a slot is removed, never opened or followed. */
static void test_hostile_slots(void) {
    char *dir = d9t_mkdtemp("spare-hostile");
    char slot[D9_SPARE_SLOTS][512], victim[512], other[512];
    for (unsigned k = 0; k < D9_SPARE_SLOTS; k++) d9_spare_path(slot[k], sizeof slot[k], dir, k);
    snprintf(victim, sizeof victim, "%s/victim", dir);
    snprintf(other, sizeof other, "%s/other-link", dir);
    int fd = open(victim, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0 && posix_fallocate(fd, 0, RESERVE) == 0);
    if (fd >= 0) close(fd);
    CHECK(symlink(victim, slot[0]) == 0);   /* a link to a file that would pass */
    CHECK(mkfifo(slot[1], 0644) == 0);       /* opening it for writing would block */
    fd = open(other, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0 && posix_fallocate(fd, 0, RESERVE) == 0);
    if (fd >= 0) close(fd);
    CHECK(link(other, slot[2]) == 0);        /* a second name of a file */
    fd = open(slot[3], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0 && ftruncate(fd, RESERVE) == 0); /* sparse: no blocks held */
    if (fd >= 0) close(fd);

    char dest[512];
    snprintf(dest, sizeof dest, "%s/taken", dir);
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    CHECK(d9_spare_claim(dfd, 0xf, dfd, "taken", RESERVE) == -1);
    CHECK(!exists(dest));
    for (unsigned k = 0; k < D9_SPARE_SLOTS; k++) CHECK(!exists(slot[k]));
    struct stat st;
    CHECK(lstat(victim, &st) == 0 && st.st_size == RESERVE && st.st_nlink == 1); /* untouched */
    CHECK(lstat(other, &st) == 0 && st.st_size == RESERVE && st.st_nlink == 1);

    /* a good spare of another size: removed too (another budget made it) */
    fd = open(slot[0], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0 && posix_fallocate(fd, 0, RESERVE * 2) == 0);
    if (fd >= 0) close(fd);
    CHECK(d9_spare_claim(dfd, 0x1, dfd, "taken", RESERVE) == -1);
    CHECK(!exists(slot[0]) && !exists(dest));
    close(dfd);

    /* a slot the scan finds no regular file in is not tried (nor counted): the writer makes a
     * fresh reserve, and returns it to a free slot */
    CHECK(symlink(victim, slot[1]) == 0);
    ino_t ino = one_run(dir, "run-a", false);
    CHECK(ino != 0 && ino != inode_of(victim));
    CHECK_EQ_U64(inode_of(slot[0]), ino);
    CHECK(lstat(slot[1], &st) == 0 && S_ISLNK(st.st_mode));
    CHECK(lstat(victim, &st) == 0 && st.st_size == RESERVE);
    if (!d9t_failed) d9t_rm_rf(dir);
    free(dir);
}

/* Every slot taken: the unused reserve is removed, as it always was. */
static void test_slots_full(void) {
    char *dir = d9t_mkdtemp("spare-full");
    char slot[512];
    for (unsigned k = 0; k < D9_SPARE_SLOTS; k++) {
        d9_spare_path(slot, sizeof slot, dir, k);
        int fd = open(slot, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        CHECK(fd >= 0 && posix_fallocate(fd, 0, RESERVE * 2) == 0); /* not ours to take (size) */
        if (fd >= 0) close(fd);
    }
    char path[512];
    snprintf(path, sizeof path, "%s/loose", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0);
    if (fd >= 0) close(fd);
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    CHECK(!d9_spare_return(dfd, dfd, "loose"));
    CHECK(exists(path));
    d9_spare_path(slot, sizeof slot, dir, 2);
    CHECK(unlink(slot) == 0);
    CHECK(d9_spare_return(dfd, dfd, "loose")); /* the free slot */
    close(dfd);
    CHECK(!exists(path) && exists(slot));
    if (!d9t_failed) d9t_rm_rf(dir);
    free(dir);
}

int main(void) {
    test_names();
    test_reuse();
    test_final_words_in_spare();
    test_hostile_slots();
    test_slots_full();
    return d9t_summary("test_spare_reserve");
}
