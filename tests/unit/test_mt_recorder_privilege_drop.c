/* The library across a privilege drop (as root; skips otherwise): a program records on a
 * worker thread, calls d9_hand_over_files(65534, 65534), then setgid/setuid(65534) while the
 * worker keeps recording, with small segments and a small disk budget, so that rotation,
 * sealing and eviction of the run's own segments all happen as uid 65534. No write fails,
 * every file ends up owned by 65534 and none is writable by others. The drop happens in a
 * child process, so the test itself stays root and can clean up. */
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "dial9/dial9.h"
#include "quiet_recorder.h"
#include "trace_files_util.h"

static atomic_int g_phase; /* 0: before the drop, 1: after it, 2: stop */

static void *worker_main(void *arg) {
    (void)arg;
    d9_worker_begin("drop", 0);
    for (uint64_t i = 1; atomic_load(&g_phase) < 2; i++) {
        d9_poll_begin(i % 64 + 1, D9_HERE);
        d9_poll_end();
        d9_park();
        d9_unpark();
        if (i % 256 == 0) usleep(200);
    }
    d9_worker_end();
    return NULL;
}

/* The child: exit status 0 when everything was recorded and written as uid 65534. */
static int child(const char *dir) {
    d9_config cfg;
    d9t_quiet_config(&cfg, dir);
    cfg.rotation_secs = 0;
    cfg.max_file_size = 64 * 1024;
    cfg.max_total_size = 256 * 1024;
    if (d9_start(&cfg) != 0) return 10;
    pthread_t th;
    if (pthread_create(&th, NULL, worker_main, NULL) != 0) return 11;
    d9_flush(); /* the run directory and a first segment exist, made by root */
    if (d9_hand_over_files(65534, 65534) != 0) return 12;
    if (setgid(65534) != 0 || setuid(65534) != 0 || geteuid() != 65534) return 13;
    atomic_store(&g_phase, 1);
    d9_stats st;
    /* Enough events after the drop for several rotations and evictions (counted; the bound
     * only keeps a broken writer from hanging the test). */
    int rounds = 0;
    do {
        usleep(10 * 1000);
        d9_flush();
        d9_get_stats(&st);
    } while (st.files_deleted < 4 && st.write_errors == 0 && ++rounds < 6000);
    atomic_store(&g_phase, 2);
    pthread_join(th, NULL);
    d9_stop();
    d9_get_stats(&st);
    if (st.write_errors != 0) return 14; /* (a full thread buffer may drop events on a busy machine: not ours) */
    if (st.segments_sealed < 5) return 15;
    return 0;
}

/* Files the writer creates after the hand-over but before the drop (a rotation racing the
 * program's setuid) get the new owner too: here the process stays root throughout. */
static void test_files_created_after_hand_over(void) {
    char *dir = d9t_mkdtemp("handover");
    d9_config cfg;
    d9t_quiet_config(&cfg, dir);
    cfg.rotation_secs = 0;
    cfg.max_file_size = 16 * 1024;
    CHECK(d9_start(&cfg) == 0);
    d9_worker_begin("handover", 0);
    d9_flush();
    CHECK(d9_hand_over_files(65534, 65534) == 0);
    d9_stats st;
    int rounds = 0;
    do { /* until segments were created after the hand-over (bounded: a broken writer fails) */
        for (int i = 0; i < 256; i++) {
            d9_poll_begin((uint64_t)i + 1, D9_HERE);
            d9_poll_end();
        }
        d9_flush();
        d9_get_stats(&st);
    } while (st.segments_sealed < 3 && st.write_errors == 0 && ++rounds < 10000);
    d9_worker_end();
    d9_stop();
    char **files;
    int n = d9t_list_segments(d9_run_dir(), &files);
    CHECK(n >= 3);
    for (int i = 0; i < n; i++) {
        struct stat sb;
        CHECK(stat(files[i], &sb) == 0 && sb.st_uid == 65534 && sb.st_gid == 65534);
    }
    d9t_free_list(files, n);
    d9t_rm_rf(dir);
    free(dir);
}

int main(void) {
    if (geteuid() != 0) {
        printf("SKIP: needs root\n");
        return 0;
    }
    test_files_created_after_hand_over();
    char *dir = d9t_mkdtemp("privdrop");
    chmod(dir, 0755); /* uid 65534 must reach it */
    pid_t pid = fork();
    if (pid == 0) _exit(child(dir));
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK_EQ_U64(WEXITSTATUS(status), 0);

    /* the run's directory and files: all owned by 65534, none writable by others, all sealed */
    DIR *top = opendir(dir);
    CHECK(top != NULL);
    int runs = 0, files = 0, active = 0;
    struct dirent *e;
    while (top && (e = readdir(top)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char run[4096];
        snprintf(run, sizeof run, "%s/%s", dir, e->d_name);
        struct stat sb;
        CHECK(stat(run, &sb) == 0 && sb.st_uid == 65534 && !(sb.st_mode & S_IWOTH));
        runs++;
        DIR *d = opendir(run);
        struct dirent *f;
        while (d && (f = readdir(d)) != NULL) {
            if (!strcmp(f->d_name, ".") || !strcmp(f->d_name, "..")) continue;
            char path[8192];
            snprintf(path, sizeof path, "%s/%s", run, f->d_name);
            CHECK(lstat(path, &sb) == 0 && sb.st_uid == 65534 && !(sb.st_mode & S_IWOTH));
            if (strstr(f->d_name, ".active")) active++;
            if (strstr(f->d_name, "trace.")) files++;
        }
        if (d) closedir(d);
    }
    if (top) closedir(top);
    CHECK_EQ_U64(runs, 1);
    CHECK(files >= 1);
    CHECK_EQ_U64(active, 0);
    printf("files left after eviction: %d\n", files);
    d9t_rm_rf(dir);
    free(dir);
    return d9t_summary("test_mt_recorder_privilege_drop");
}
