/* A program that does what breaks preloaded tools: threads, fork, exec, closing every fd,
 * changing directory, exiting from a signal handler, from another thread, or by
 * pthread_exit in main, and dying of a signal. test_preload_behaviour.sh runs each mode with
 * and without libdial9-preload.so and compares output and exit status.
 *
 *   d9p_behave full FILE      everything in turn, exits 7 from its SIGTERM handler
 *   d9p_behave thread-exit    a thread calls exit(5) while main blocks in poll
 *   d9p_behave pthread-exit   main calls pthread_exit; the last thread ends the process (0)
 *   d9p_behave default-term   dies of SIGTERM, which it does not handle
 *   d9p_behave early-term     dies of SIGTERM first thing in main, while the shim starts
 *   d9p_behave epoll-loop     a home-grown epoll loop woken through an eventfd
 *   d9p_behave signals        installs its own SIGINT handler; reports what it sees
 *   d9p_behave echo WORD      prints WORD
 * With the shim, every mode but early-term and echo first waits for its recorder to run (it
 * starts on a thread of its own, later on a busy machine), so that what the mode does is
 * recorded and the counts the test checks do not depend on the machine's load. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "wait_for_recorder.h"

static char g_self[4096];

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static void say(const char *s) {
    fputs(s, stdout);
    fputc('\n', stdout);
    fflush(stdout);
}

/* A thread that blocks in poll on a pipe until it has read `n` bytes. */
typedef struct poller {
    int fd, n, got;
} poller;

static void *poll_reader(void *arg) {
    poller *p = arg;
    while (p->got < p->n) {
        struct pollfd pfd = {p->fd, POLLIN, 0};
        int rc = poll(&pfd, 1, 200);
        if (rc > 0) {
            char c;
            if (read(p->fd, &c, 1) == 1) p->got++;
        }
    }
    return NULL;
}

static void threads_and_pipes(void) {
    enum { N = 3, PER = 5 };
    pthread_t th[N];
    poller p[N];
    int fds[N][2];
    for (int i = 0; i < N; i++) {
        if (pipe(fds[i]) != 0) exit(90);
        p[i] = (poller){fds[i][0], PER, 0};
        pthread_create(&th[i], NULL, poll_reader, &p[i]);
    }
    for (int k = 0; k < PER; k++) {
        sleep_ms(3);
        for (int i = 0; i < N; i++)
            if (write(fds[i][1], "x", 1) != 1) exit(91);
    }
    int total = 0;
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        total += p[i].got;
        close(fds[i][0]);
        close(fds[i][1]);
    }
    printf("threads read %d bytes\n", total);
    fflush(stdout);
}

static void fork_and_exec(void) {
    pid_t pid = fork();
    if (pid == 0) {
        say("child runs");
        _exit(3);
    }
    int st;
    waitpid(pid, &st, 0);
    printf("child exited %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    fflush(stdout);

    pid = fork();
    if (pid == 0) {
        execl(g_self, g_self, "echo", "exec'd child says hello", (char *)NULL);
        _exit(127);
    }
    waitpid(pid, &st, 0);
    printf("exec child exited %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    fflush(stdout);
}

/* Close every fd but stdio, the way daemons do, then open many files (so that one of them
 * would get any number the recorder held) and write them while parking, so the recorder
 * writes meanwhile: each file must hold exactly what the program wrote. */
enum { N_FILES = 40, N_LINES = 300 };

static void close_everything_then_write(const char *path) {
    for (int fd = 3; fd < 256; fd++) close(fd);
    closefrom(256);
    if (chdir("/") != 0) exit(92);
    int fds[N_FILES];
    char name[4200], line[64];
    for (int f = 0; f < N_FILES; f++) {
        snprintf(name, sizeof name, "%s.%d", path, f);
        fds[f] = open(name, O_CREAT | O_TRUNC | O_RDWR, 0644);
        if (fds[f] < 0) exit(93);
    }
    for (int i = 0; i < N_LINES; i++) {
        for (int f = 0; f < N_FILES; f++) {
            int n = snprintf(line, sizeof line, "file %d line %d\n", f, i);
            if (write(fds[f], line, (size_t)n) != n) exit(94);
        }
        if (i % 30 == 0) poll(NULL, 0, 5); /* parks: the recorder has things to write */
    }
    sleep_ms(60); /* longer than the recorder's flush interval */
    int intact = 0;
    for (int f = 0; f < N_FILES; f++) {
        close(fds[f]);
        snprintf(name, sizeof name, "%s.%d", path, f);
        FILE *in = fopen(name, "r");
        if (!in) exit(95);
        int ok = 1, i = 0;
        char expect[64], got[128];
        while (fgets(got, sizeof got, in)) {
            snprintf(expect, sizeof expect, "file %d line %d\n", f, i++);
            if (strcmp(got, expect) != 0) ok = 0;
        }
        fseek(in, 0, SEEK_END);
        long size = ftell(in);
        fclose(in);
        long want = 0;
        for (int k = 0; k < N_LINES; k++) want += snprintf(line, sizeof line, "file %d line %d\n", f, k);
        if (ok && i == N_LINES && size == want) intact++;
        else printf("file %s.%d CORRUPTED (%d lines, %ld bytes)\n", path, f, i, size);
    }
    printf("%d of %d files intact after closing every fd\n", intact, N_FILES);
    fflush(stdout);
}

static void exit_from_handler(int sig) {
    (void)sig;
    say("SIGTERM handler exits");
    exit(7);
}

static int mode_full(const char *path) {
    say("start");
    threads_and_pipes();
    fork_and_exec();
    close_everything_then_write(path);
    signal(SIGTERM, exit_from_handler);
    raise(SIGTERM);
    say("not reached");
    return 1;
}

static void *exit_later(void *arg) {
    (void)arg;
    for (int i = 0; i < 10; i++) poll(NULL, 0, 10);
    say("thread calls exit(5)");
    exit(5);
}

static int mode_thread_exit(void) {
    pthread_t th;
    pthread_create(&th, NULL, exit_later, NULL);
    for (int i = 0; i < 3000; i++) poll(NULL, 0, 20);
    return 1;
}

static void *last_thread(void *arg) {
    (void)arg;
    for (int i = 0; i < 5; i++) poll(NULL, 0, 10);
    say("last thread returns");
    return NULL;
}

static int mode_pthread_exit(void) {
    pthread_t th;
    pthread_create(&th, NULL, last_thread, NULL);
    say("main calls pthread_exit");
    pthread_exit(NULL);
}

static void *poll_forever(void *arg) {
    (void)arg;
    for (;;) poll(NULL, 0, 7);
    return NULL;
}

static int mode_default_term(void) {
    pthread_t th[2];
    for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, poll_forever, NULL);
    for (int i = 0; i < 10; i++) poll(NULL, 0, 10);
    say("raising SIGTERM");
    raise(SIGTERM);
    sleep_ms(5000); /* the signal may be handled on another thread */
    say("still alive");
    return 0;
}

static int mode_early_term(void) {
    raise(SIGTERM);
    sleep_ms(5000);
    say("still alive");
    return 0;
}

static int g_efd, g_ack_efd;

/* 50 notifications, each written only once the loop has read the previous one (g_ack_efd), so
 * the loop wakes 50 times however loaded the machine is: none coalesce in the eventfd. */
static void *notifier(void *arg) {
    (void)arg;
    for (int i = 0; i < 50; i++) {
        sleep_ms(2);
        uint64_t one = 1, ack;
        if (write(g_efd, &one, sizeof one) != sizeof one) exit(96);
        if (read(g_ack_efd, &ack, sizeof ack) != sizeof ack) exit(96);
    }
    return NULL;
}

static int mode_epoll_loop(void) {
    g_efd = eventfd(0, 0);
    g_ack_efd = eventfd(0, 0);
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = g_efd};
    epoll_ctl(ep, EPOLL_CTL_ADD, g_efd, &ev);
    pthread_t th;
    pthread_create(&th, NULL, notifier, NULL);
    uint64_t total = 0;
    while (total < 50) {
        struct epoll_event out;
        if (epoll_wait(ep, &out, 1, 1000) == 1) {
            uint64_t v;
            if (read(g_efd, &v, sizeof v) == sizeof v) total += v;
            uint64_t one = 1;
            if (write(g_ack_efd, &one, sizeof one) != sizeof one) exit(96);
        }
    }
    pthread_join(th, NULL);
    printf("loop got %llu notifications\n", (unsigned long long)total);
    return 0;
}

static volatile sig_atomic_t g_got_int;
static void on_int(int sig) {
    (void)sig;
    g_got_int = 1;
}

static int mode_signals(void) {
    struct sigaction cur;
    sigaction(SIGTERM, NULL, &cur);
    say(cur.sa_handler == SIG_DFL ? "SIGTERM shows SIG_DFL" : "SIGTERM shows a handler");
    if (signal(SIGINT, on_int) != SIG_DFL) say("SIGINT was not SIG_DFL");
    sigaction(SIGINT, NULL, &cur);
    say(cur.sa_handler == on_int ? "SIGINT shows our handler" : "SIGINT shows something else");
    raise(SIGINT);
    say(g_got_int ? "SIGINT handled by the program" : "SIGINT lost");
    signal(SIGINT, SIG_DFL);
    sigaction(SIGINT, NULL, &cur);
    say(cur.sa_handler == SIG_DFL ? "SIGINT back to SIG_DFL" : "SIGINT not default");
    return 0;
}

int main(int argc, char **argv) {
    ssize_t n = readlink("/proc/self/exe", g_self, sizeof g_self - 1);
    g_self[n > 0 ? n : 0] = 0;
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "early-term") != 0 && strcmp(mode, "echo") != 0) d9p_wait_for_recorder();
    if (!strcmp(mode, "full") && argc > 2) return mode_full(argv[2]);
    if (!strcmp(mode, "thread-exit")) return mode_thread_exit();
    if (!strcmp(mode, "pthread-exit")) return mode_pthread_exit();
    if (!strcmp(mode, "default-term")) return mode_default_term();
    if (!strcmp(mode, "early-term")) return mode_early_term();
    if (!strcmp(mode, "epoll-loop")) return mode_epoll_loop();
    if (!strcmp(mode, "signals")) return mode_signals();
    if (!strcmp(mode, "echo") && argc > 2) {
        say(argv[2]);
        return 0;
    }
    fprintf(stderr, "usage: d9p_behave full FILE | thread-exit | pthread-exit | default-term | "
                    "early-term | epoll-loop | signals | echo WORD\n");
    return 2;
}
