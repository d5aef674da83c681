/* The zero-code shim (libdial9-preload.so, loaded with LD_PRELOAD): what its parts share.
 *
 * The shim is one self-contained library: the recorder's objects, the loop adapters in
 * all-loops mode, and the interposers of this directory. It is linked with
 * -Wl,--wrap=<fn> for the libc functions it also exports (pthread_create, close, sigaction...):
 * the recorder's own calls then reach __wrap_<fn> and go straight to libc, while the
 * program's calls reach the exported interposer. So an interposer never has to ask who
 * called it. */
#ifndef D9_PRELOAD_PRELOAD_H
#define D9_PRELOAD_PRELOAD_H

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/select.h>
#include <sys/types.h>

#include "dial9/dial9.h"

#define D9P_EXPORT __attribute__((visibility("default")))
#define D9P_HIDDEN __attribute__((visibility("hidden")))

/* The next definition of libc function `name` (dlsym(RTLD_NEXT)), cached per use site; NULL
 * when libc has none (functions newer than the running glibc). */
D9P_HIDDEN void *d9p_next_symbol(void *_Atomic *slot, const char *name);
#define D9P_NEXT(name)                                                                     \
    (__extension__({                                                                       \
        static void *_Atomic d9p_slot_;                                                    \
        void *p_ = atomic_load_explicit(&d9p_slot_, memory_order_relaxed);                 \
        (__typeof__(&name))(p_ ? p_ : d9p_next_symbol(&d9p_slot_, #name));                 \
    }))

/* The same with the cache at file scope, D9P_SLOT(name), for an interposer whose fast path and
 * out-of-line twin (D9P_IO_PASS) both call libc's function. */
#define D9P_SLOT(name) d9p_next_slot_##name
#define D9P_NEXT_IN_SLOT(name)                                                             \
    (__extension__({                                                                       \
        void *p_ = atomic_load_explicit(&D9P_SLOT(name), memory_order_relaxed);            \
        (__typeof__(&name))(p_ ? p_ : d9p_next_symbol(&D9P_SLOT(name), #name));            \
    }))

/* A cache of libc's function `name` for the hot interposers that is never NULL: it starts as
 * name##_resolve, which looks the function up, keeps it in the cache and calls it (a function
 * libc lacks: -1 with ENOSYS), so a call through it (D9P_CALL_SLOT) tests nothing: 2
 * instructions a call fewer than D9P_NEXT's test for NULL. `params` and `args` in parentheses. */
#define D9P_RESOLVED_SLOT(ret, name, params, args)                                         \
    static ret name##_resolve params;                                                      \
    static _Atomic(__typeof__(&name)) D9P_SLOT(name) = name##_resolve;                     \
    static __attribute__((noinline, cold)) ret name##_resolve params {                     \
        __typeof__(&name) real_ = (__typeof__(&name))d9p_next_symbol(                      \
            (void *_Atomic *)&D9P_SLOT(name), #name);                                      \
        if (!real_) {                                                                      \
            errno = ENOSYS;                                                                \
            return (ret)-1;                                                                \
        }                                                                                  \
        return real_ args;                                                                 \
    }                                                                                      \
    _Static_assert(1, "a semicolon after the macro")
#define D9P_CALL_SLOT(name) atomic_load_explicit(&D9P_SLOT(name), memory_order_relaxed)

/* ---- the process (preload_main.c) ---- */

/* True in the process whose constructor started recording (false in a forked child until it
 * starts its own run). */
D9P_HIDDEN extern _Atomic bool d9p_recording;
/* DIAL9_TRACE_CHILDREN: exec'd children keep LD_PRELOAD, forked children record too. */
D9P_HIDDEN extern bool d9p_trace_children;
/* A forked child owes a start of its own (DIAL9_TRACE_CHILDREN=1): done lazily, in normal
 * context, by the first interposer that sees it (never inside the fork handler). */
D9P_HIDDEN extern _Atomic bool d9p_child_start_pending;
D9P_HIDDEN void d9p_child_start(void);
/* A forked child of a recording process when children are not traced: it starts a run of
 * its own only once one of its threads becomes a home-grown loop (a server's worker process,
 * as nginx forks them), never for a child that only execs or works without a loop. */
D9P_HIDDEN extern _Atomic bool d9p_loop_child_pending;
D9P_HIDDEN void d9p_loop_child_start(void);
/* A forked child's run that is owed (either kind above) starts now, synchronously: before a
 * privilege drop, while the child may still create its run in the parent's trace directory. */
D9P_HIDDEN void d9p_start_pending_child(void);
static inline void d9p_maybe_start_child(void) {
    if (__builtin_expect(atomic_load_explicit(&d9p_child_start_pending, memory_order_relaxed), 0))
        d9p_child_start();
}

/* ---- starting the recorder (preload_main.c, preload_start.c) ---- */

/* Start the run configured by cfg on this thread (the loop notes, d9_start, signals). */
D9P_HIDDEN bool d9p_start_now(const d9_config *cfg);
/* The same on a thread of its own: the program goes on meanwhile. With serve_signals, that
 * thread then stays on as the signals' stopper (d9p_signals_install_for_starter). */
D9P_HIDDEN void d9p_start_async(const d9_config *cfg, bool serve_signals);
/* Wait at most max_ms for a start in progress; true when none is in progress any more. */
D9P_HIDDEN bool d9p_start_wait(unsigned max_ms);
D9P_HIDDEN void d9p_start_forget_after_fork(void);
/* The final flush at exit, after the program's exit handlers (once per process). */
D9P_HIDDEN void d9p_start_install_exit(void);

/* ---- environment (preload_env.c) ---- */

/* Learn this library's file name and its heap library's (once; before the two below). */
D9P_HIDDEN void d9p_env_know_self(void);
/* Whether the LD_PRELOAD entry of n characters at p names this library or its heap library. */
D9P_HIDDEN bool d9p_env_entry_is_shim(const char *p, size_t n);
/* The entries of the LD_PRELOAD value `list` that are the shim's (shims) or not (!shims), as
 * given and joined by ':', into out (room for strlen(list) + 1); returns their length. */
D9P_HIDDEN size_t d9p_env_pick_entries(const char *list, bool shims, char *out);
/* Remove this library (and its heap library) from LD_PRELOAD in the process's environment, in
 * place (children that exec with it are then not traced, whatever setenv the program has). */
D9P_HIDDEN void d9p_env_drop_self_from_preload(void);
/* Whether an LD_PRELOAD entry of envp names this library or its heap library (once
 * d9p_env_know_self ran); *count is envp's number of entries and *bytes (at least 1) the room
 * those entries need. */
D9P_HIDDEN bool d9p_env_names_self(char *const *envp, size_t *count, size_t *bytes);
/* envp without this library in LD_PRELOAD into out (count + 1 entries) and strings (bytes),
 * both from d9p_env_names_self. No allocation: usable in a vfork child. */
D9P_HIDDEN void d9p_env_copy_without_self(char *const *envp, char **out, char *strings);
/* Call `call` (an expression using `env`) with envp stripped of this library when children
 * are not traced and it names it, else with envp itself as `env`. */
#define D9P_CALL_WITHOUT_SELF(envp, call)                                                  \
    do {                                                                                   \
        size_t n_, bytes_;                                                                 \
        if (!d9p_trace_children && d9p_env_names_self((envp), &n_, &bytes_)) {             \
            char *stripped_[n_ + 1], strings_[bytes_];                                      \
            d9p_env_copy_without_self((envp), stripped_, strings_);                        \
            char *const *env = stripped_;                                                  \
            return (call);                                                                 \
        }                                                                                  \
        char *const *env = (envp);                                                         \
        return (call);                                                                     \
    } while (0)
/* Make a relative DIAL9_TRACE_DIR absolute, so a program that changes directory (or a child
 * that starts elsewhere) still writes where it was asked to. */
D9P_HIDDEN void d9p_env_absolute_trace_dir(void);

/* ---- exec without fork (preload_exec.c) ---- */

/* Remember, before LD_PRELOAD loses the shim, how this run was configured: an exec by this
 * same process hands the recording on to the new image. */
D9P_HIDDEN void d9p_exec_remember(void);

/* ---- metadata notes (preload_notes.c) ---- */

/* Add `source.<name>` to every segment's metadata of the runs started from now on. */
D9P_HIDDEN void d9p_note_source(const char *name, bool active, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Add a plain metadata entry. */
D9P_HIDDEN void d9p_note(const char *key, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Hand the notes to the recorder at its plugin point (core/recorder_hooks.h): called once,
 * before the first d9_start. */
D9P_HIDDEN void d9p_notes_register(void);

/* ---- loop libraries (preload_loops.c) ---- */

/* Decide, per loop library, whether its calls reach the adapters (shared and loaded), not
 * (linked statically into the program), or it is absent; note each in the metadata. Also
 * remembers the code of the loaded loop libraries (see d9p_in_loop_library). */
D9P_HIDDEN void d9p_loops_detect(void);
/* Whether `addr` is code of a loop library the shim interposes. */
D9P_HIDDEN bool d9p_in_loop_library(const void *addr);
/* Whether any loop library is interposed (per-callback polls can happen). */
D9P_HIDDEN bool d9p_loops_interposed(void);

/* Which of the functions `names` (n <= 32) the ELF file `path` defines (not just references)
 * in its .symtab: bit k for names[k]. (.dynsym is not read: what a program exports, dlsym
 * finds.) A table larger than a bound is not scanned; a stripped file costs two preads. */
D9P_HIDDEN unsigned d9p_elf_defines(const char *path, const char *const *names, unsigned n);
/* The function of the ELF file `path`'s .symtab that holds `vaddr` (an address as the file
 * links it), its name into out; false when the file has no .symtab or none holds it. */
D9P_HIDDEN bool d9p_elf_function_at(const char *path, uint64_t vaddr, char *out, size_t size);
/* The exported function of `path` (its .dynsym) that enters the static function holding
 * `inside`, which the call returning to `call_ret` called (addresses as the file links them):
 * GCC's partial inlining leaves an exported f that tests its arguments and jumps to f's body,
 * static (f.part.0), which callers in the module call directly (redis' aeMain calls
 * aeProcessEvents' body). Its name into out; false when no one function jumps there, or the
 * call is not a direct one (x86-64 only). */
D9P_HIDDEN bool d9p_elf_entry_of(const char *path, uint64_t call_ret, uint64_t inside, char *out,
                                 size_t size);

/* ---- heap profiling (preload_heap_link.c; the interposers: libdial9-preload-heap.so) ---- */

struct d9_collector;
/* A run's sources started: one that profiles the heap while no heap library attached (it was
 * not preloaded) says in its metadata, and once on stderr, that malloc is not interposed. */
D9P_HIDDEN void d9p_heap_note_run(struct d9_collector *c);

/* ---- parks in pollers (preload_poll.c) ---- */

/* After fork in the child: the generic worker identities belong to the parent's threads. */
D9P_HIDDEN void d9p_poll_forget_after_fork(void);

/* A wait of another kind than the poller interposers' (io_uring, preload_uring.c): `waits`
 * when the program asked to wait for completions (a loop's iteration boundary), `blocks` when
 * none is there yet (a park). *home_loop says whether it is a home-grown loop's wait
 * (d9p_loop_wait_begin), the result whether it parks (end it with d9p_poller_wait_end). */
D9P_HIDDEN bool d9p_poller_wait_begin(int kind, int fd, bool waits, bool blocks,
                                      const void *caller, bool *home_loop);
D9P_HIDDEN void d9p_poller_wait_end(bool parked);

/* The worker id of this thread's generic worker identity (0: none). */
D9P_HIDDEN uint32_t d9p_poll_worker_id(void);

/* ---- work of home-grown loops (preload_loop_work.c) ---- */

struct epoll_event;
struct pollfd;
enum { D9P_WAIT_EPOLL, D9P_WAIT_POLL, D9P_WAIT_SELECT, D9P_WAIT_URING };
/* A poller is called on a thread outside any loop library: true when it is this thread's
 * loop poller (the iteration in progress ends; then call one of the wait_end below). */
D9P_HIDDEN bool d9p_loop_wait_begin(int kind, int epfd, bool has_fds, bool may_block,
                                    const void *caller);
/* The wait_end below: `parked` when the wait was recorded as a park (its unpark is recorded
 * there, with the first ready connection's readiness wake in the same record). */
D9P_HIDDEN void d9p_loop_wait_end_epoll(const struct epoll_event *events, int n, bool parked);
/* The fused path of a loop's own epoll wait (d9p_loop_io_state.home_epfd1): its iteration
 * ends before the park (with it, in one record, when a poll was open), the next starts with what the wait returned (rc), after the unpark
 * when it parked (the unpark is recorded there, with the first ready wake). */
D9P_HIDDEN bool d9p_home_wait_begins(bool park); /* true: it recorded the park too */
D9P_HIDDEN void d9p_home_wait_ends(const struct epoll_event *events, int rc, bool parked);
/* Both halves around the loop's own epoll_wait (pwait: epoll_pwait with sigmask), in one
 * function: what the epoll_wait and epoll_pwait interposers jump to on the fused path. */
D9P_HIDDEN int d9p_home_epoll_wait(int epfd, struct epoll_event *events, int maxevents, int timeout,
                                   const sigset_t *sigmask, bool pwait);
D9P_HIDDEN void d9p_loop_wait_end_poll(const struct pollfd *fds, unsigned long n, int rc, bool parked);
D9P_HIDDEN void d9p_loop_wait_end_select(int nfds, const fd_set *r, const fd_set *w,
                                         const fd_set *e, int rc, bool parked);
/* An io_uring wait of a home-grown loop returned (preload_uring_cq.c): first its unpark (parked:
 * the call was recorded as a park) with the readiness wake of fd, the first completion new
 * since the last wait (-1: none), in one hook call and record as an epoll wait's, before what
 * the completions do (accepts, closes); true when fd was woken there. Then the iteration: the
 * fd of the completion the program handles first (-1: unknown) and those of the other new
 * completions (readiness). */
D9P_HIDDEN bool d9p_loop_wait_unpark_uring(bool parked, int fd);
D9P_HIDDEN void d9p_loop_wait_end_uring(int first_fd, const int *ready, int n);
/* The wait (io_uring) returned one new ready connection fd (< D9P_LOOP_FDS), the one the
 * program handles first, and recorded nothing since it began: when fd's task is known and the
 * loop has no poll open, its unpark (parked), fd's readiness wake and fd's poll start are one
 * hook call and clock read, and the iteration has started; false, nothing done: unpark, then
 * d9p_loop_wait_end_uring. */
D9P_HIDDEN bool d9p_loop_wait_begins_one(bool parked, int fd);
/* Readiness wakes of the tasks of fds completed outside a wait (io_uring_submit). */
D9P_HIDDEN void d9p_loop_ready(const int *ready, int n);
/* At exit, on the exiting thread: a loop iteration in progress there ends its poll, so the
 * program's last poll is closed. */
D9P_HIDDEN void d9p_loop_end_at_exit(void);
/* This thread's loop name, "function (module)", once it is a home-grown loop; else NULL. */
D9P_HIDDEN const char *d9p_loop_name(void);
/* What an I/O interposer needs to know of this thread's loop, in one place: whether it is
 * between its poller's return and its next call, and the fd whose poll is in progress (-1: the
 * iteration's own, -2: none). I/O on that fd (the loop reading and answering the connection it
 * is serving, every request's case) changes nothing and stays on the fast path. */
typedef struct d9p_loop_io_state {
    bool iterating;
    int cur_fd;
    /* The loop's epoll fd + 1 once its epoll_wait may take the fused path (preload_poll.c:
     * the thread is a loop of this process with its worker identity), 0 until then and in a
     * forked child. */
    unsigned home_epfd1;
    /* The same for an io_uring loop: its ring fd + 1 once its waits may take the fused path
     * (preload_poll.c, d9p_poller_wait_begin). */
    unsigned home_ring1;
} d9p_loop_io_state;
D9P_HIDDEN extern __thread d9p_loop_io_state d9p_loop_io_now __attribute__((tls_model("initial-exec")));
D9P_HIDDEN void d9p_loop_io_slow(int fd);
/* The fds a loop may serve as connections (preload_loop_work.c): what the loop knows of each,
 * in one 32-byte slot, so that the poller's return reads an fd's event data, whether it is
 * watched, its task and where that was spawned from one cache line (they were four arrays). */
#define D9P_LOOP_FDS 65536
typedef struct d9p_fd_conn {
    _Alignas(32) _Atomic uint64_t task; /* the connection's task, 0: none */
    const d9_loc *_Atomic loc;          /* where that task was spawned */
    _Atomic uint64_t data;              /* its epoll event data */
    _Atomic bool watched;               /* added to some epoll fd */
} d9p_fd_conn;
D9P_HIDDEN extern d9p_fd_conn d9p_fd_conns[D9P_LOOP_FDS];
static inline bool d9p_fd_is_connection(int fd) {
    if ((unsigned)fd >= D9P_LOOP_FDS) return false;
    const d9p_fd_conn *c = &d9p_fd_conns[fd];
    return atomic_load_explicit(&c->watched, memory_order_relaxed) ||
           atomic_load_explicit(&c->task, memory_order_relaxed);
}
/* Whether I/O on fd may start another connection's poll: a thread's loop iterating, fd not
 * the connection being served but another one (a log file or a pipe is none). */
static inline bool d9p_loop_io_may_switch(int fd) {
    if (__builtin_expect(!d9p_loop_io_now.iterating || fd == d9p_loop_io_now.cur_fd, 1)) return false;
    return d9p_fd_is_connection(fd);
}
/* I/O on fd (read, write, recv, send, accept...): inside an iteration, a connection's first
 * I/O starts its poll. */
static inline void d9p_loop_io(int fd) {
    if (d9p_loop_io_may_switch(fd)) d9p_loop_io_slow(fd);
}
/* An interposer whose own work is d9p_loop_io(fd) before libc's call (recv, send, writev...).
 * Its fast path (no home-grown loop iterating on this thread, libc's function known) is a jump
 * into libc: no frame and no saved register. With the slow calls in its body, it kept its
 * arguments alive across them: ~24 instructions a call (4 registers saved and restored)
 * against 7 (callgrind, test_preload_shim_instructions). `params` and `args` in parentheses. */
#define D9P_IO_PASS(ret, name, fd, params, args)                                           \
    D9P_RESOLVED_SLOT(ret, name, params, args);                                            \
    static __attribute__((noinline)) ret name##_io_slow params {                           \
        d9p_loop_io(fd);                                                                   \
        return D9P_CALL_SLOT(name) args;                                                   \
    }                                                                                      \
    D9P_EXPORT ret name params {                                                           \
        if (__builtin_expect(d9p_loop_io_may_switch(fd), 0)) return name##_io_slow args;   \
        return D9P_CALL_SLOT(name) args;                                                   \
    }                                                                                      \
    _Static_assert(1, "a semicolon after the macro")
/* Connection tasks: a new one per fd lifetime. */
D9P_HIDDEN void d9p_conn_accepted(int listen_fd, int fd);
D9P_HIDDEN void d9p_conn_created(int fd);
D9P_HIDDEN void d9p_conn_closed(int fd);
D9P_HIDDEN void d9p_epoll_ctl_seen(int epfd, int op, int fd, const struct epoll_event *ev);
D9P_HIDDEN void d9p_conns_forget_after_fork(void);

/* ---- signals (preload_signals.c) ---- */

/* Put dial9's flush-then-die handler on SIGINT and SIGTERM where the program has none. */
D9P_HIDDEN void d9p_signals_install(void);
/* The same before the shim's asynchronous start, without a thread of its own: true when the
 * caller must run d9p_signals_serve() on the starter thread once the start is done (or, when
 * that thread cannot be created, d9p_signals_spawn_stopper()). */
D9P_HIDDEN bool d9p_signals_install_for_starter(void);
D9P_HIDDEN void d9p_signals_serve(void);
D9P_HIDDEN bool d9p_signals_spawn_stopper(void);
/* In a forked child: give SIGINT/SIGTERM back their default action. */
D9P_HIDDEN void d9p_signals_forget_after_fork(void);

/* ---- file descriptors (preload_fds.c) ---- */

/* The recorder's fds are protected: the program cannot close them (a close-all-fds daemon
 * would otherwise hand their numbers to its own files, which the recorder would then write
 * into). The recorder's opens are adopted as they happen (--wrap=open/openat/syscall). */
D9P_HIDDEN void d9p_fds_protect(int fd);
D9P_HIDDEN bool d9p_fds_protected(int fd);
D9P_HIDDEN void d9p_fds_forget_after_fork(void);

/* ---- wakes through notification fds (preload_fd_wakes.c) ---- */

D9P_HIDDEN void d9p_fd_wakes_forget(int fd);
D9P_HIDDEN void d9p_fd_wakes_forget_after_fork(void);

/* ---- threads (preload_threads.c) ---- */

/* Register the calling thread with the recorder now (CPU and off-CPU sampling cover the
 * threads that have a buffer). */
D9P_HIDDEN void d9p_thread_register_self(void);
/* Count the program's threads from now on (the caller is the main thread), to end the process
 * when the last one ends, as glibc would without the recorder's threads. */
D9P_HIDDEN void d9p_threads_count_start(void);
D9P_HIDDEN void d9p_threads_forget_after_fork(void);

#endif
