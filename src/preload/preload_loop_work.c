/* The work of a home-grown event loop (redis' ae, nginx, haproxy, in-house servers): what a
 * thread does from its poller's return to its next call is work for what the poller
 * returned, recorded as polls.
 *
 *   - A thread is a loop once it blocks in a poller with fds registered (an epoll fd that saw
 *     EPOLL_CTL_ADD, a poll set or select set that is not empty): threads that only sleep,
 *     wait on condition variables or poll nothing are not loops. Its iterations are bounded
 *     by calls of that same poller (the same epoll fd; poll or select again), so a handler
 *     that polls another fd of its own does not cut an iteration.
 *   - Each iteration starts as a poll of the first connection the poller returned ready,
 *     when its fd is known (poll, select, epoll event data that is the fd or was registered
 *     for it with epoll_ctl), else of the loop's own task. The first read, write, recv,
 *     send, accept... on another connection ends the poll in progress and starts that
 *     connection's poll: one poll per connection where the split can be seen, one per
 *     iteration where it cannot. A LoopEvent says which, per loop, and names it (the first
 *     named function up the stack from the poller's caller), as do its polls' locations.
 *   - A connection is a task per fd lifetime: a new id at accept / accept4 (spawned at
 *     "accept on <listening address>"), or when the loop first sees it ready or uses it (a
 *     socket ends what its number stood for); ended at close (after its poll in progress).
 *     What the poller returned ready, when its fd is known, is a readiness wake of its task.
 * Threads of a loop library the adapters interpose never come here: their callbacks are the
 * polls (preload_poll.c decides), so nothing is counted twice. */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <link.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "preload.h"
#include "thread_state.h"

#define MAX_FDS D9P_LOOP_FDS

d9p_fd_conn d9p_fd_conns[MAX_FDS] D9P_HIDDEN;          /* each fd's task, spawn, event data */
static const d9_loc *_Atomic g_listen_loc[MAX_FDS];    /* "accept on <address>" of a listener */
static _Atomic uint64_t g_epfd_used[MAX_FDS / 64];     /* epoll fds that saw an ADD */

/* Event data -> fd, for loops whose event data is a pointer (nginx): direct-mapped, a later
 * registration overwrites; a lookup is checked against the fd's event data, so a collision or a
 * stale slot is a miss (the iteration then starts as the loop's own poll). */
#define DATA_SLOTS 16384
static struct {
    _Atomic uint64_t data;
    _Atomic int32_t fd;
} g_by_data[DATA_SLOTS];

static unsigned data_slot(uint64_t data) {
    return (unsigned)((data * 0x9e3779b97f4a7c15ull) >> 50) & (DATA_SLOTS - 1);
}

static bool in_set(_Atomic uint64_t *set, int fd) {
    return (unsigned)fd < MAX_FDS &&
           (atomic_load_explicit(&set[fd >> 6], memory_order_relaxed) >> (fd & 63)) & 1;
}
static void set_add(_Atomic uint64_t *set, int fd) {
    if ((unsigned)fd < MAX_FDS && !in_set(set, fd))
        atomic_fetch_or_explicit(&set[fd >> 6], 1ull << (fd & 63), memory_order_relaxed);
}
static void set_del(_Atomic uint64_t *set, int fd) {
    if (in_set(set, fd))
        atomic_fetch_and_explicit(&set[fd >> 6], ~(1ull << (fd & 63)), memory_order_relaxed);
}

/* fd is no longer watched: written only when it was (closefrom's close_range passes every fd
 * number; a store to each slot would dirty the whole table) */
static void unwatch(int fd) {
    if (atomic_load_explicit(&d9p_fd_conns[fd].watched, memory_order_relaxed))
        atomic_store_explicit(&d9p_fd_conns[fd].watched, false, memory_order_relaxed);
}

/* ---------------------------------------------------------------- the loop thread */

typedef struct loop_thread {
    uint32_t generation;  /* fork generation this state belongs to */
    bool is_loop;
    int kind;             /* D9P_WAIT_EPOLL, _POLL, _SELECT */
    int epfd;             /* the loop's epoll fd (epoll loops) */
    uint64_t task;        /* the loop's own task: polls of iterations not split */
    const d9_loc *loc;    /* the loop's name */
    char name[200];       /* "function (module)", or "module poller loop" when not exact */
    char function[160];   /* LoopEvent's: the function, or where the loop was seen from */
    char module[64];
    uint64_t caller_offset; /* the poller's caller in its module, for offline names */
    const char *named_by; /* how the name was found (name_loop) */
    bool spawned;         /* the loop task's spawn recorded (in this run) */
    bool said_iteration, said_connection;
    bool in_poll;
    uint64_t cur_task;
    uint64_t owed_terminate; /* a connection closed inside its own poll */
} loop_thread;

/* Whether the thread iterates and the fd of its poll in progress (preload.h): read by every
 * I/O interposer, so kept apart from the rest of the loop's state. */
__thread d9p_loop_io_state d9p_loop_io_now __attribute__((tls_model("initial-exec"))) D9P_HIDDEN;
static __thread loop_thread t_loop __attribute__((tls_model("initial-exec")));
static _Atomic uint32_t g_generation;

static const d9_event_type *g_loop_event;
static pthread_once_t g_loop_event_once = PTHREAD_ONCE_INIT;
static void define_loop_event(void) {
    static const d9_field fields[] = {{"worker_id", D9_U64},        {"function", D9_STRING},
                                      {"module", D9_STRING},        {"caller_offset", D9_U64},
                                      {"poller", D9_STATIC_STRING}, {"polls", D9_STATIC_STRING},
                                      {"named_by", D9_STATIC_STRING}};
    g_loop_event = d9_event_type_define("LoopEvent", fields, 7);
}

static const char *const k_poller[] = {"epoll", "poll", "select", "io_uring"};

/* The loop says what it is: once per run when its iterations are polls, again when it
 * splits them per connection. */
static void say_loop(loop_thread *l, bool split) {
    pthread_once(&g_loop_event_once, define_loop_event);
    if (!g_loop_event) return;
    D9_EMIT(g_loop_event, {.u = d9p_poll_worker_id()}, {.s = l->function}, {.s = l->module},
            {.u = l->caller_offset}, {.s = k_poller[l->kind]},
            {.s = split ? "connection" : "iteration"}, {.s = l->named_by});
}

/* Whether addr is in the program's own file (the first object, the one without a name). */
static int main_has(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    uintptr_t addr = *(uintptr_t *)arg;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && addr >= start && addr - start < ph->p_memsz) return 1;
    }
    return -1; /* the first object only */
}

/* The program's name as it was started (argv[0]'s last part), read before main: servers
 * rewrite argv[0] as their title, and /proc/self/exe is where a link points (Debian's
 * redis-server is a link to redis-check-rdb). */
static char g_program[64];
__attribute__((constructor)) static void remember_program_name(void) {
    const char *name = program_invocation_name ? program_invocation_name : "";
    const char *slash = strrchr(name, '/');
    snprintf(g_program, sizeof g_program, "%s", slash ? slash + 1 : name);
}

static const char *module_name(const char *path, const void *addr) {
    uintptr_t a = (uintptr_t)addr;
    if (dl_iterate_phdr(main_has, &a) != 1 && path && path[0])
        return strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    return g_program[0] ? g_program : "?"; /* the program itself */
}

/* The loop's name, and how its function was found:
 *   - "dynamic symbol": the caller is in a function its module exports (dladdr);
 *   - "symbol table": a function of the module's .symtab holds it (a static function of a
 *     program that is not stripped, or a test's);
 *   - "exported entry": stripped, the caller's function is static, and the one function the
 *     module exports that jumps to it is its entry (GCC's partial inlining: redis' exported
 *     aeProcessEvents tests its flags and jumps to its static body, which aeMain calls);
 * then the name is "function (module)" ("aeProcessEvents (redis-server)"). Otherwise the
 * function is not known, and the name says only what is: the module and its poller ("nginx
 * epoll loop"), while LoopEvent's function keeps where the loop was seen from:
 *   - "nearest exported caller": the module is stripped and the caller's function is static
 *     (redis' aeApiPoll, nginx's ngx_epoll_process_events): the first exported function up the
 *     stack in the caller's module, with the return address's offset in it, a frame above the
 *     loop's own function ("ngx_spawn_process+0x1f3");
 *   - "none": "module+0xoffset" of the caller.
 * The caller's offset is kept too, for a name from its debug symbols offline. Once per loop
 * thread: backtrace() reads the unwind tables, never the frames themselves. */
static void name_loop(loop_thread *l, const void *caller) {
    Dl_info di = {0};
    struct link_map *lm = NULL;
    if (!dladdr1(caller, &di, (void **)&lm, RTLD_DL_LINKMAP) || !di.dli_fname) {
        snprintf(l->function, sizeof l->function, "%p", caller);
        snprintf(l->module, sizeof l->module, "?");
        snprintf(l->name, sizeof l->name, "%s loop", k_poller[l->kind]);
        l->named_by = "none";
        l->loc = d9_loc_intern(l->name);
        return;
    }
    const char *mod = module_name(di.dli_fname, caller);
    snprintf(l->module, sizeof l->module, "%s", mod);
    l->caller_offset = (uint64_t)((const char *)caller - (const char *)di.dli_fbase);
    const char *file = di.dli_fname[0] && strcmp(mod, g_program) != 0 ? di.dli_fname : "/proc/self/exe";
    uintptr_t bias = lm ? lm->l_addr : 0;
    /* the call instruction is just before the return address */
    uint64_t vaddr = (uint64_t)((uintptr_t)caller - bias) - 1;
    char fn[160] = "";
    void *frames[16];
    int n = 0, at = 0;
    if (di.dli_sname) {
        snprintf(fn, sizeof fn, "%s", di.dli_sname);
        l->named_by = "dynamic symbol";
    } else if (d9p_elf_function_at(file, vaddr, fn, sizeof fn)) {
        l->named_by = "symbol table";
    } else {
        n = backtrace(frames, 16);
        while (at < n && frames[at] != caller) at++;
        Dl_info up = {0};
        if (at + 1 < n && dladdr(frames[at + 1], &up) && up.dli_fbase == di.dli_fbase &&
            d9p_elf_entry_of(file, (uint64_t)((uintptr_t)frames[at + 1] - bias), vaddr, fn, sizeof fn))
            l->named_by = "exported entry";
    }
    if (fn[0]) {
        /* GCC's clones (f.constprop.0, f.isra.0, f.part.0, f.cold) are f's code: a C name has
         * no dot */
        fn[strcspn(fn, ".")] = 0;
        snprintf(l->function, sizeof l->function, "%s", fn);
        if (snprintf(l->name, sizeof l->name, "%s (%s)", fn, mod) >= (int)sizeof l->name)
            l->name[sizeof l->name - 2] = '~'; /* cut: a long module path; still names the loop */
        l->loc = d9_loc_intern(l->name);
        return;
    }
    for (int i = at + 1; !fn[0] && i < n; i++) {
        Dl_info up = {0};
        if (!dladdr(frames[i], &up) || up.dli_fbase != di.dli_fbase) break;
        if (up.dli_sname)
            snprintf(fn, sizeof fn, "%s+0x%lx", up.dli_sname,
                     (unsigned long)((const char *)frames[i] - (const char *)up.dli_saddr));
    }
    if (fn[0]) {
        l->named_by = "nearest exported caller";
        snprintf(l->function, sizeof l->function, "%s", fn);
    } else {
        l->named_by = "none";
        snprintf(l->function, sizeof l->function, "%s+0x%lx", mod, (unsigned long)l->caller_offset);
    }
    snprintf(l->name, sizeof l->name, "%s %s loop", mod, k_poller[l->kind]);
    l->loc = d9_loc_intern(l->name);
}

static void install_exit_hook(void);

/* A forked child: the parent's loop state is not this process's run. */
static __attribute__((noinline)) void forget_parent_loop(loop_thread *l, uint32_t gen) {
    memset(l, 0, sizeof *l);
    l->generation = gen;
    d9p_loop_io_now.iterating = false;
    d9p_loop_io_now.home_epfd1 = d9p_loop_io_now.home_ring1 = 0;
}

static inline loop_thread *self(void) {
    loop_thread *l = &t_loop;
    uint32_t gen = atomic_load_explicit(&g_generation, memory_order_relaxed);
    if (__builtin_expect(l->generation != gen, 0)) forget_parent_loop(l, gen);
    return l;
}

static void end_poll(loop_thread *l) {
    if (!l->in_poll) return;
    d9_poll_end();
    l->in_poll = false;
    if (l->owed_terminate) {
        d9_task_terminate(l->owed_terminate);
        l->owed_terminate = 0;
    }
}

/* ---------------------------------------------------------------- connection tasks */

static const d9_loc *first_seen_loc(void) {
    static const d9_loc *_Atomic loc;
    const d9_loc *l = atomic_load_explicit(&loc, memory_order_acquire);
    if (!l) {
        l = d9_loc_intern("connection first seen by the loop");
        atomic_store_explicit(&loc, l, memory_order_release);
    }
    return l;
}

/* A new task for fd's new lifetime (the previous one, if close was not seen, ends). */
static uint64_t new_task(int fd, const d9_loc *where) {
    uint64_t id = d9_task_id_new();
    atomic_store_explicit(&d9p_fd_conns[fd].loc, where, memory_order_relaxed);
    uint64_t old = atomic_exchange_explicit(&d9p_fd_conns[fd].task, id, memory_order_relaxed);
    if (old) d9_task_terminate(old);
    if (where) d9_task_spawn(id, where);
    return id;
}

/* fd's task, made at first sight ("connection first seen by the loop") */
static __attribute__((noinline)) uint64_t task_first_seen(int fd) {
    uint64_t id = d9_task_id_new();
    uint64_t expected = 0;
    if (!atomic_compare_exchange_strong(&d9p_fd_conns[fd].task, &expected, id)) return expected;
    atomic_store_explicit(&d9p_fd_conns[fd].loc, first_seen_loc(), memory_order_relaxed);
    d9_task_spawn(id, first_seen_loc());
    return id;
}

static inline uint64_t task_of(int fd) {
    uint64_t id = atomic_load_explicit(&d9p_fd_conns[fd].task, memory_order_relaxed);
    return __builtin_expect(id != 0, 1) ? id : task_first_seen(fd);
}

/* "accept on 127.0.0.1:6379", once per listening fd. */
static const d9_loc *listen_loc(int lfd) {
    if ((unsigned)lfd >= MAX_FDS) return first_seen_loc();
    const d9_loc *loc = atomic_load_explicit(&g_listen_loc[lfd], memory_order_acquire);
    if (loc) return loc;
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    char addr[128] = "?", name[160];
    if (getsockname(lfd, (struct sockaddr *)&ss, &len) == 0) {
        if (ss.ss_family == AF_INET) {
            const struct sockaddr_in *in = (const struct sockaddr_in *)&ss;
            char ip[INET_ADDRSTRLEN];
            inet_ntop(AF_INET, &in->sin_addr, ip, sizeof ip);
            snprintf(addr, sizeof addr, "%s:%u", ip, ntohs(in->sin_port));
        } else if (ss.ss_family == AF_INET6) {
            const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&ss;
            char ip[INET6_ADDRSTRLEN];
            inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof ip);
            snprintf(addr, sizeof addr, "[%s]:%u", ip, ntohs(in6->sin6_port));
        } else if (ss.ss_family == AF_UNIX) {
            const struct sockaddr_un *un = (const struct sockaddr_un *)&ss;
            snprintf(addr, sizeof addr, "%.*s", (int)sizeof un->sun_path, un->sun_path);
        }
    }
    snprintf(name, sizeof name, "accept on %s", addr);
    loc = d9_loc_intern(name);
    atomic_store_explicit(&g_listen_loc[lfd], loc, memory_order_release);
    return loc;
}

void d9p_conn_accepted(int lfd, int fd) {
    if ((unsigned)fd >= MAX_FDS) return;
    new_task(fd, D9__ACTIVE() ? listen_loc(lfd) : NULL);
}

/* A new socket on a number whose old connection's close was not seen (fclose, a raw
 * syscall): that task ends; the new one begins when the loop first sees it. */
void d9p_conn_created(int fd) {
    if ((unsigned)fd >= MAX_FDS || !atomic_load_explicit(&d9p_fd_conns[fd].task, memory_order_relaxed)) return;
    uint64_t old = atomic_exchange_explicit(&d9p_fd_conns[fd].task, 0, memory_order_relaxed);
    if (old) d9_task_terminate(old);
}

void d9p_conn_closed(int fd) {
    if ((unsigned)fd >= MAX_FDS) return;
    unwatch(fd);
    set_del(g_epfd_used, fd);
    if (atomic_load_explicit(&g_listen_loc[fd], memory_order_relaxed))
        atomic_store_explicit(&g_listen_loc[fd], NULL, memory_order_relaxed);
    if (!atomic_load_explicit(&d9p_fd_conns[fd].task, memory_order_relaxed)) return;
    uint64_t task = atomic_exchange_explicit(&d9p_fd_conns[fd].task, 0, memory_order_relaxed);
    if (!task) return;
    loop_thread *l = self();
    if (l->in_poll && l->cur_task == task) l->owed_terminate = task; /* after its poll */
    else d9_task_terminate(task);
    /* the number may come back as another connection */
    if (d9p_loop_io_now.cur_fd == fd) d9p_loop_io_now.cur_fd = -2;
}

void d9p_conns_forget_after_fork(void) {
    atomic_fetch_add(&g_generation, 1);
    /* the forking thread, the child's only one: its loop is the parent's (the fused path of
     * its epoll_wait would skip the child's start and its first wait) */
    d9p_loop_io_now.home_epfd1 = d9p_loop_io_now.home_ring1 = 0;
    for (int fd = 0; fd < MAX_FDS; fd++)
        if (atomic_load_explicit(&d9p_fd_conns[fd].task, memory_order_relaxed))
            atomic_store_explicit(&d9p_fd_conns[fd].task, 0, memory_order_relaxed);
}

void d9p_epoll_ctl_seen(int epfd, int op, int fd, const struct epoll_event *ev) {
    if ((unsigned)fd >= MAX_FDS) return;
    if (op == EPOLL_CTL_DEL) {
        unwatch(fd);
        return;
    }
    set_add(g_epfd_used, epfd);
    atomic_store_explicit(&d9p_fd_conns[fd].watched, true, memory_order_relaxed);
    if (!ev) return;
    atomic_store_explicit(&d9p_fd_conns[fd].data, ev->data.u64, memory_order_relaxed);
    if (ev->data.u64 != (uint64_t)fd) {
        unsigned k = data_slot(ev->data.u64);
        atomic_store_explicit(&g_by_data[k].fd, fd, memory_order_relaxed);
        atomic_store_explicit(&g_by_data[k].data, ev->data.u64, memory_order_relaxed);
    }
}

/* An event whose data is no fd of its own (nginx's pointers): the fd registered with it, if
 * that fd is still watched with it; else -1. */
static __attribute__((noinline)) int event_fd_by_data(uint64_t data) {
    unsigned k = data_slot(data);
    if (atomic_load_explicit(&g_by_data[k].data, memory_order_relaxed) != data) return -1;
    int fd = atomic_load_explicit(&g_by_data[k].fd, memory_order_relaxed);
    if ((unsigned)fd >= MAX_FDS || atomic_load_explicit(&d9p_fd_conns[fd].data, memory_order_relaxed) != data)
        return -1;
    return atomic_load_explicit(&d9p_fd_conns[fd].watched, memory_order_relaxed) ? fd : -1;
}

/* The fd an epoll event stands for, or -1 when it cannot be told: its data is the fd (redis'
 * ae, inline: one slot read) or was registered for one (above), and that fd is still watched
 * with it. */
static inline int event_fd(uint64_t data) {
    if (__builtin_expect(data < MAX_FDS, 1)) {
        const d9p_fd_conn *c = &d9p_fd_conns[data];
        if (__builtin_expect(atomic_load_explicit(&c->data, memory_order_relaxed) == data, 1))
            return atomic_load_explicit(&c->watched, memory_order_relaxed) ? (int)data : -1;
    }
    return event_fd_by_data(data);
}

/* ---------------------------------------------------------------- iterations */

/* The thread's first blocking poller call with fds registered: it becomes a loop (false when
 * it does not, or no recording runs). Out of line: every later call saves no register. */
static __attribute__((noinline)) bool become_loop(loop_thread *l, int kind, int epfd, bool has_fds,
                                                  bool may_block, const void *caller) {
    if (kind == D9P_WAIT_EPOLL) has_fds = in_set(g_epfd_used, epfd);
    if (!may_block || !has_fds) return false;
    /* a forked worker process (children not traced) records once it runs a loop */
    if (atomic_load_explicit(&d9p_loop_child_pending, memory_order_relaxed))
        d9p_loop_child_start();
    if (!D9__ACTIVE()) return false;
    l->is_loop = true;
    l->kind = kind;
    l->epfd = epfd;
    l->task = d9_task_id_new();
    d9p_loop_io_now.cur_fd = -1;
    name_loop(l, caller);
    install_exit_hook();
    return true;
}

/* Whether this call of the loop's poller is its iteration's end (not a handler's wait). */
static inline bool loops_own_wait(const loop_thread *l, int kind, int epfd, bool has_fds) {
    if (kind != l->kind) return false;
    if (kind == D9P_WAIT_EPOLL || kind == D9P_WAIT_URING) return epfd == l->epfd;
    return has_fds;
}

/* The iteration's poll ends with the park of the wait that follows (preload_poll.c's
 * park_begin: one hook call and record, d9__poll_end_park), unless a close inside it owes its
 * task's terminate after it: the end is owed as a loop library's last callback owes it
 * (thread_state.h), and the wait pays it alone when it does not park. */
static inline void iteration_ends(loop_thread *l) {
    if (l->in_poll && !l->owed_terminate) {
        l->in_poll = false;
        d9a_self.end_owed = true;
    } else {
        end_poll(l);
    }
    d9p_loop_io_now.iterating = false;
}

/* The rare cases: a forked child's start, a thread's first wait. */
static __attribute__((noinline)) bool wait_begin_slow(int kind, int epfd, bool has_fds, bool may_block,
                                                      const void *caller) {
    d9p_maybe_start_child(); /* a forked child's run starts before its first iteration */
    loop_thread *l = self();
    if (!l->is_loop) {
        if (!become_loop(l, kind, epfd, has_fds, may_block, caller)) return false;
    } else if (!loops_own_wait(l, kind, epfd, has_fds)) {
        return false; /* a handler waiting on something of its own, inside an iteration */
    }
    iteration_ends(l);
    return true;
}

bool d9p_loop_wait_begin(int kind, int epfd, bool has_fds, bool may_block, const void *caller) {
    loop_thread *l = &t_loop;
    if (__builtin_expect(atomic_load_explicit(&d9p_child_start_pending, memory_order_relaxed) ||
                             l->generation != atomic_load_explicit(&g_generation, memory_order_relaxed) ||
                             !l->is_loop,
                         0))
        return wait_begin_slow(kind, epfd, has_fds, may_block, caller);
    if (!loops_own_wait(l, kind, epfd, has_fds)) return false; /* a handler's wait of its own */
    iteration_ends(l);
    return true;
}

const char *d9p_loop_name(void) {
    const loop_thread *l = self();
    return l->is_loop ? l->name : NULL;
}

/* A poll of connection fd, or of the loop's own task (fd -1). The loop says once that its
 * polls are per connection, at the first. */
static inline __attribute__((always_inline)) void begin_poll(loop_thread *l, int fd, uint64_t task) {
    if (fd >= 0 && !l->said_connection) {
        end_poll(l); /* the note goes between the polls */
        say_loop(l, true);
        l->said_connection = true;
    }
    /* a connection's poll names where its task was spawned ("accept on <address>"), as a
     * poll's location does; the loop's own, the loop */
    const d9_loc *loc =
        (unsigned)fd < MAX_FDS ? atomic_load_explicit(&d9p_fd_conns[fd].loc, memory_order_relaxed) : NULL;
    if (!loc) loc = l->loc;
    /* the poll in progress ends here, with nothing owed between: one clock read for both */
    if (l->in_poll && !l->owed_terminate) d9_poll_end_begin(task, loc);
    else d9_poll_begin(task, loc);
    l->in_poll = true;
    d9p_loop_io_now.cur_fd = fd;
    l->cur_task = task;
}

/* The poller returned: readiness wakes of what it returned that is known by fd, then a poll
 * of the first of those (so an iteration that serves one connection is one poll of it) or,
 * when none is known, of the loop's own task, until the first I/O on another connection. */
static inline __attribute__((always_inline)) void iteration_starts(loop_thread *l, int first_ready,
                                                                 uint64_t first_task) {
    if (!l->spawned) {
        d9_task_spawn(l->task, l->loc);
        l->spawned = true;
    }
    if (!l->said_iteration) {
        say_loop(l, false);
        l->said_iteration = true;
    }
    d9p_loop_io_now.iterating = true;
    /* one call: inlined twice, gcc -O0 would warn about the load at index -1 it never runs */
    begin_poll(l, first_ready >= 0 ? first_ready : -1, first_ready >= 0 ? first_task : l->task);
}

/* What the poller returned ready, fd by fd: a readiness wake of its task; the first is
 * remembered, with its task, for the iteration's first poll. */
typedef struct first_ready {
    int fd;
    uint64_t task;
} first_ready;

static inline __attribute__((always_inline)) void ready(int fd, first_ready *first) {
    uint64_t task = task_of(fd);
    d9_wake_ready(task);
    if (first->fd < 0) *first = (first_ready){fd, task};
}

/* The poller returned (parked: the call was recorded as a park): its unpark with the readiness
 * wake of the first ready connection fd (-1: none) in one hook call and one ring record when
 * fd's task is known (d9_unpark_wake_ready: the same two events, at the same tick, as d9_unpark
 * then d9_wake_ready, which stamped the wake with the unpark's tick anyway); a task made at
 * first sight spawns after the unpark, and its wake follows. Returns fd's task (0: no fd). */
static uint64_t unpark_first_wake(bool parked, int fd) {
    uint64_t task = fd >= 0 ? atomic_load_explicit(&d9p_fd_conns[fd].task, memory_order_relaxed) : 0;
    if (parked) d9_unpark_wake_ready(task);
    else if (task) d9_wake_ready(task);
    if (fd >= 0 && !task) {
        task = task_first_seen(fd);
        d9_wake_ready(task);
    }
    return task;
}

/* The fused path's halves (preload.h): the thread is this process's loop already, so no
 * fork generation, start or first-wait test; a run that stopped during the wait starts
 * nothing, as above. The iteration's poll ends with the hook as the last call (a jump: no
 * frame here), unless a close inside it owes its task's end after it. */
static inline __attribute__((always_inline)) bool home_wait_begins(bool park) {
    loop_thread *l = &t_loop;
    d9p_loop_io_now.iterating = false;
    if (__builtin_expect(!l->in_poll || l->owed_terminate, 0)) {
        end_poll(l);
        return false;
    }
    l->in_poll = false;
    if (park) { /* recording was tested on entry (home_fast): the end and the park, one record */
        d9__poll_end_park();
        return true;
    }
    d9_poll_end();
    return false;
}

/* An epoll wait returned n events: the unpark with the first known connection's readiness
 * wake (unpark_first_wake), the others' wakes, the iteration's first poll. The general case of
 * d9p_home_wait_ends (no event, several, one whose fd or task is not known yet, the loop's first
 * iterations: it has not said yet what it is), and the loop's first waits. */
static __attribute__((noinline)) void epoll_wait_ends(loop_thread *l, const struct epoll_event *events,
                                                      int n, bool parked) {
    int i = 0, fd = -1;
    while (i < n && (fd = event_fd(events[i].data.u64)) < 0) i++;
    first_ready first = {i < n ? fd : -1, 0};
    first.task = unpark_first_wake(parked, first.fd);
    for (i++; i < n; i++) {
        int other = event_fd(events[i].data.u64);
        if (other >= 0) ready(other, &first);
    }
    iteration_starts(l, first.fd, first.task);
}

void d9p_loop_wait_end_epoll(const struct epoll_event *events, int n, bool parked) {
    loop_thread *l = self();
    if (!D9__ACTIVE()) {
        if (parked) d9_unpark(); /* a pause owes the end of a park it saw begin */
        return;
    }
    epoll_wait_ends(l, events, n, parked);
}

/* The poller returned one ready connection fd (-1: none) whose task is known, to a loop that
 * said its polls are per connection and has none open (the common case of a server's wait):
 * the unpark, fd's readiness wake and its poll's start are one hook call, one clock read and
 * one commit (d9__unpark_wake_ready_poll_begin: the same three events at one tick). A redis GET
 * on one connection: 5 hook calls (poll end, park, unpark, wake, poll start) -> 2 (the end with
 * the park, d9__poll_end_park; the rest here), the same 5 events in the trace. The loop's state
 * is set first, so that the hook is a jump. Not parked (a wait that did not block): the wake,
 * then the poll's start. False, nothing done: the general path's case. */
static inline __attribute__((always_inline)) bool one_known_ready_begins(loop_thread *l, int fd, bool parked) {
    uint64_t task = fd >= 0 ? atomic_load_explicit(&d9p_fd_conns[fd].task, memory_order_relaxed) : 0;
    /* said_connection: the loop's task is spawned and both its notes are said (iteration_starts,
     * begin_poll); in_poll is false after the wait's begin ended the iteration's poll */
    if (__builtin_expect(!task || !l->said_connection || l->in_poll, 0)) return false;
    const d9_loc *loc = atomic_load_explicit(&d9p_fd_conns[fd].loc, memory_order_relaxed);
    if (!loc) loc = l->loc;
    d9p_loop_io_now.iterating = true;
    d9p_loop_io_now.cur_fd = fd;
    l->in_poll = true;
    l->cur_task = task;
    /* the hooks themselves: recording was tested on entry (a stop since is the same race as
     * between any wrapper's test and its hook) */
    if (parked) {
        d9__unpark_wake_ready_poll_begin(task, task, loc);
    } else {
        d9__wake_ready(task);
        d9__poll_begin(task, loc);
    }
    return true;
}

/* The wait returned rc events (parked: the call was recorded as a park). */
static inline __attribute__((always_inline)) void home_wait_ends(const struct epoll_event *events, int rc,
                                                                 bool parked) {
    if (!D9__ACTIVE()) {
        if (parked) d9_unpark(); /* a pause owes the end of a park it saw begin */
        return;
    }
    loop_thread *l = &t_loop;
    if (!one_known_ready_begins(l, rc == 1 ? event_fd(events[0].data.u64) : -1, parked))
        epoll_wait_ends(l, events, rc > 0 ? rc : 0, parked);
}

bool d9p_home_wait_begins(bool park) { return home_wait_begins(park); }
void d9p_home_wait_ends(const struct epoll_event *events, int rc, bool parked) {
    home_wait_ends(events, rc, parked);
}

/* The loop's own epoll_wait / epoll_pwait whole, here beside the iteration's state: its end
 * with the park, the call, the unpark with the next iteration's start, errno kept. The
 * interposer jumps here before its own frame; each half inline (callgrind, d9p_home_pairs: the
 * interposer's frame of six saved registers and two calls with their own frames and thread-local
 * lookups were 72 + 21 + 59 instructions a wait). */
D9P_RESOLVED_SLOT(int, epoll_wait, (int epfd, struct epoll_event *events, int maxevents, int timeout),
                  (epfd, events, maxevents, timeout));
D9P_RESOLVED_SLOT(int, epoll_pwait,
                  (int epfd, struct epoll_event *events, int maxevents, int timeout, const sigset_t *sigmask),
                  (epfd, events, maxevents, timeout, sigmask));

int d9p_home_epoll_wait(int epfd, struct epoll_event *events, int maxevents, int timeout,
                        const sigset_t *sigmask, bool pwait) {
    int *err = &errno;
    int saved = *err;
    bool park = timeout != 0;
    if (!home_wait_begins(park) && park) d9__park();
    *err = saved;
    int rc = pwait ? D9P_CALL_SLOT(epoll_pwait)(epfd, events, maxevents, timeout, sigmask)
                   : D9P_CALL_SLOT(epoll_wait)(epfd, events, maxevents, timeout);
    saved = *err;
    home_wait_ends(events, rc, park);
    *err = saved;
    return rc;
}

static inline bool poll_ready(const struct pollfd *p) { return p->fd >= 0 && p->fd < MAX_FDS && p->revents; }

void d9p_loop_wait_end_poll(const struct pollfd *fds, nfds_t n, int rc, bool parked) {
    loop_thread *l = self();
    if (!D9__ACTIVE()) {
        if (parked) d9_unpark();
        return;
    }
    nfds_t i = 0;
    while (rc > 0 && i < n && !poll_ready(&fds[i])) i++;
    bool any = rc > 0 && i < n;
    if (rc == 1 && any && one_known_ready_begins(l, fds[i].fd, parked)) return;
    first_ready first = {any ? fds[i].fd : -1, 0};
    first.task = unpark_first_wake(parked, first.fd);
    for (i++; any && i < n; i++)
        if (poll_ready(&fds[i])) ready(fds[i].fd, &first);
    iteration_starts(l, first.fd, first.task);
}

static inline bool select_ready(int fd, const fd_set *r, const fd_set *w, const fd_set *e) {
    return (r && FD_ISSET(fd, r)) || (w && FD_ISSET(fd, w)) || (e && FD_ISSET(fd, e));
}

void d9p_loop_wait_end_select(int nfds, const fd_set *r, const fd_set *w, const fd_set *e, int rc,
                              bool parked) {
    loop_thread *l = self();
    if (!D9__ACTIVE()) {
        if (parked) d9_unpark();
        return;
    }
    int end = rc > 0 ? (nfds < FD_SETSIZE ? nfds : FD_SETSIZE) : 0, fd = 0;
    while (fd < end && !select_ready(fd, r, w, e)) fd++;
    first_ready first = {fd < end ? fd : -1, 0};
    first.task = unpark_first_wake(parked, first.fd);
    for (fd++; fd < end; fd++)
        if (select_ready(fd, r, w, e)) ready(fd, &first);
    iteration_starts(l, first.fd, first.task);
}

void d9p_loop_ready(const int *ready_fds, int n) {
    if (!D9__ACTIVE()) return;
    for (int i = 0; i < n; i++)
        if ((unsigned)ready_fds[i] < MAX_FDS) d9_wake_ready(task_of(ready_fds[i]));
}

bool d9p_loop_wait_unpark_uring(bool parked, int fd) {
    if (!D9__ACTIVE()) {
        if (parked) d9_unpark(); /* a pause owes the end of a park it saw begin */
        return false;
    }
    if ((unsigned)fd >= MAX_FDS) fd = -1;
    unpark_first_wake(parked, fd);
    return fd >= 0;
}

bool d9p_loop_wait_begins_one(bool parked, int fd) {
    return D9__ACTIVE() && one_known_ready_begins(self(), fd, parked);
}

void d9p_loop_wait_end_uring(int first_fd, const int *ready_fds, int n) {
    loop_thread *l = self();
    if (!D9__ACTIVE()) return;
    if (n) d9p_loop_ready(ready_fds, n);
    bool known = (unsigned)first_fd < MAX_FDS;
    iteration_starts(l, known ? first_fd : -1, known ? task_of(first_fd) : 0);
}

void d9p_loop_end_at_exit(void) {
    loop_thread *l = self();
    if (!l->is_loop || !D9__ACTIVE()) return;
    end_poll(l);
    d9p_loop_io_now.iterating = false;
}

/* A program ends from inside its loop (redis' SHUTDOWN, a handler that exits): its last poll
 * gets its end before the recorder's stop. Registered once per process when a thread first
 * becomes a loop, so after the recorder's own exit handler (d9_start's): atexit runs it first. */
static _Atomic uint32_t g_exit_hook_generation = UINT32_MAX;
static void end_at_exit(void) { d9p_loop_end_at_exit(); }
static void install_exit_hook(void) {
    uint32_t gen = atomic_load_explicit(&g_generation, memory_order_relaxed);
    if (atomic_exchange(&g_exit_hook_generation, gen) != gen) atexit(end_at_exit);
}

/* I/O on fd by a loop thread inside an iteration: a connection's first I/O starts its poll. */
void d9p_loop_io_slow(int fd) {
    loop_thread *l = self();
    if (!d9p_loop_io_now.iterating || fd == d9p_loop_io_now.cur_fd || (unsigned)fd >= MAX_FDS ||
        !D9__ACTIVE())
        return;
    /* a connection: an fd with a task (accepted, seen ready) or one an epoll fd watches;
     * files the handler writes (logs) are not */
    if (!d9p_fd_is_connection(fd)) return;
    uint64_t task = task_of(fd);
    if (l->owed_terminate) end_poll(l); /* else begin_poll ends it */
    begin_poll(l, fd, task);
}
