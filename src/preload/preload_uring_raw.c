/* io_uring without liburing: a program that sets its ring up and enters it through glibc's
 * syscall() (preload_syscall.c hands those calls here) and maps the rings itself with mmap.
 *
 *   - io_uring_setup: the ring's fd and the offsets the kernel wrote into its params
 *     (where head, tail, mask, entries, the SQ array and the CQEs sit in the mappings);
 *   - mmap of that fd at IORING_OFF_SQ_RING, IORING_OFF_CQ_RING, IORING_OFF_SQES: where the
 *     rings are (IORING_FEAT_SINGLE_MMAP: one mapping for both); munmap forgets them;
 *   - io_uring_enter with IORING_ENTER_GETEVENTS and min_complete > 0 is the loop's wait, as
 *     liburing's (preload_uring_cq.c: park -> unpark, the iteration a poll of the first
 *     completion's connection, new completions readiness wakes); before it the SQEs being
 *     submitted (the kernel's SQ head to the program's tail, through the SQ array) name
 *     (fd, opcode) by user_data; an enter that only submits reads what completed at once.
 * Every read is inside the program's own call on its own thread, within the lengths it
 * mapped, read-only. A ring whose mappings were not seen (mmap made by the program's own
 * system call instruction) is still a wait, without completions to read.
 *
 * What cannot be seen: io_uring_enter issued by the program's own syscall instruction. Where
 * its ring was set up through syscall() and mapped, but no wait on it was ever seen (nor any
 * through liburing), the shim says so at exit, on stderr and in an IoUringRingEvent, rather
 * than record nothing silently. An IORING_SETUP_SQPOLL ring is not reported: its loop may
 * never need to enter the kernel. */
#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload.h"
#include "preload_uring_cq.h"
#include "thread_state.h"

#ifndef IORING_SETUP_NO_MMAP
#define IORING_SETUP_NO_MMAP (1U << 14)
#endif
#ifndef IORING_SETUP_NO_SQARRAY
#define IORING_SETUP_NO_SQARRAY (1U << 16)
#endif

/* A ring set up through syscall(). Written under g_lock; the mappings are published last
 * (release) and read by the enter path without the lock. */
typedef struct raw_ring {
    _Atomic int fd_plus1; /* 0: a free slot */
    pid_t pid;            /* the process that set it up (a forked child shares the ring) */
    unsigned flags, features, sq_entries, cq_entries;
    struct io_sqring_offsets sq_off;
    struct io_cqring_offsets cq_off;
    char *_Atomic sq_map, *_Atomic cq_map, *_Atomic sqes_map;
    size_t sq_len, cq_len, sqes_len;
    _Atomic unsigned waits; /* waits seen on it, through any interposer */
    const void *setup_caller;
} raw_ring;

#define RAW_RINGS 16
static raw_ring g_rings[RAW_RINGS];
static _Atomic int g_ring_count; /* slots ever used: 0 keeps mmap / munmap at one compare */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

static raw_ring *find(int fd) {
    int n = atomic_load_explicit(&g_ring_count, memory_order_acquire);
    for (int i = 0; i < n; i++)
        if (atomic_load_explicit(&g_rings[i].fd_plus1, memory_order_relaxed) == fd + 1)
            return &g_rings[i];
    return NULL;
}

void d9p_uring_waited(int ring_fd) {
    raw_ring *r = atomic_load_explicit(&g_ring_count, memory_order_relaxed) ? find(ring_fd) : NULL;
    if (r) atomic_fetch_add_explicit(&r->waits, 1, memory_order_relaxed);
}

/* ---------------------------------------------------------------- what the shim says */

static const d9_event_type *g_ring_event;
static pthread_once_t g_ring_event_once = PTHREAD_ONCE_INIT;
static void define_ring_event(void) {
    static const d9_field fields[] = {{"ring_fd", D9_U64},
                                      {"set_up_by", D9_STATIC_STRING},
                                      {"waits_seen", D9_U64},
                                      {"state", D9_STATIC_STRING}};
    /* format/schemas.c's D9_SCH_IO_URING_RING: readers know it by this name and these fields */
    g_ring_event = d9_event_type_define("IoUringRingEvent", fields, 4);
}

static void say_ring(const raw_ring *r, int fd, const char *state) {
    if (!D9__ACTIVE()) return;
    pthread_once(&g_ring_event_once, define_ring_event);
    if (g_ring_event)
        D9_EMIT(g_ring_event, {.u = (uint64_t)fd}, {.s = "syscall()"},
                {.u = atomic_load_explicit(&r->waits, memory_order_relaxed)}, {.s = state});
}

/* The ring's fd still names an io_uring (not closed, nor its number reused). */
static bool still_a_ring(int fd) {
    char path[48], target[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(path, target, sizeof target - 1);
    if (n <= 0) return false;
    target[n] = 0;
    return strstr(target, "io_uring") != NULL;
}

/* At exit: rings this process set up and mapped, not SQPOLL, with no wait ever seen. */
static void report_unseen(void) {
    int n = atomic_load_explicit(&g_ring_count, memory_order_acquire);
    for (int i = 0; i < n; i++) {
        raw_ring *r = &g_rings[i];
        int fd = atomic_load_explicit(&r->fd_plus1, memory_order_relaxed) - 1;
        if (fd < 0 || r->pid != getpid() || (r->flags & IORING_SETUP_SQPOLL) ||
            atomic_load_explicit(&r->waits, memory_order_relaxed) ||
            !atomic_load_explicit(&r->sq_map, memory_order_relaxed) || !still_a_ring(fd))
            continue;
        say_ring(r, fd, "never waited through a call the shim sees");
        fprintf(stderr, "dial9: io_uring ring (fd %d) was set up through syscall() but never "
                        "waited on through a call the shim sees (io_uring_enter made with the "
                        "program's own system call instruction?): its loop's iterations are not "
                        "recorded\n", fd);
    }
}

static _Atomic pid_t g_exit_hook_pid;
static void install_exit_hook(void) {
    pid_t self = getpid();
    if (atomic_exchange(&g_exit_hook_pid, self) != self) atexit(report_unseen);
}

/* ---------------------------------------------------------------- setup and mappings */

static void ring_set_up(int fd, const struct io_uring_params *p, const void *caller) {
    if (fd < 0 || !p || (p->flags & IORING_SETUP_NO_MMAP)) return;
    pthread_mutex_lock(&g_lock);
    raw_ring *r = find(fd);
    if (!r) {
        int n = atomic_load_explicit(&g_ring_count, memory_order_relaxed);
        for (int i = 0; i < n && !r; i++)
            if (!atomic_load_explicit(&g_rings[i].fd_plus1, memory_order_relaxed)) r = &g_rings[i];
        if (!r && n < RAW_RINGS) r = &g_rings[n];
    }
    if (r) {
        atomic_store_explicit(&r->fd_plus1, 0, memory_order_relaxed); /* unusable meanwhile */
        atomic_store_explicit(&r->sq_map, NULL, memory_order_relaxed);
        atomic_store_explicit(&r->cq_map, NULL, memory_order_relaxed);
        atomic_store_explicit(&r->sqes_map, NULL, memory_order_relaxed);
        atomic_store_explicit(&r->waits, 0, memory_order_relaxed);
        r->pid = getpid();
        r->flags = p->flags;
        r->features = p->features;
        r->sq_entries = p->sq_entries;
        r->cq_entries = p->cq_entries;
        r->sq_off = p->sq_off;
        r->cq_off = p->cq_off;
        r->setup_caller = caller;
        atomic_store_explicit(&r->fd_plus1, fd + 1, memory_order_release);
        if (r == &g_rings[atomic_load_explicit(&g_ring_count, memory_order_relaxed)])
            atomic_fetch_add_explicit(&g_ring_count, 1, memory_order_release);
    }
    pthread_mutex_unlock(&g_lock);
    if (r) {
        say_ring(r, fd, "set up");
        install_exit_hook();
    }
}

static void ring_mapped(int fd, off_t off, void *addr, size_t len) {
    pthread_mutex_lock(&g_lock);
    raw_ring *r = find(fd);
    if (r) {
        if ((uint64_t)off == IORING_OFF_SQ_RING) {
            r->sq_len = len;
            atomic_store_explicit(&r->sq_map, (char *)addr, memory_order_release);
        } else if ((uint64_t)off == IORING_OFF_CQ_RING) {
            r->cq_len = len;
            atomic_store_explicit(&r->cq_map, (char *)addr, memory_order_release);
        } else if ((uint64_t)off == IORING_OFF_SQES) {
            r->sqes_len = len;
            atomic_store_explicit(&r->sqes_map, (char *)addr, memory_order_release);
        }
    }
    pthread_mutex_unlock(&g_lock);
}

static bool overlaps(const char *map, size_t map_len, const char *addr, size_t len) {
    return map && addr < map + map_len && map < addr + len;
}

static void ring_unmapped(void *addr, size_t len) {
    pthread_mutex_lock(&g_lock);
    int n = atomic_load_explicit(&g_ring_count, memory_order_relaxed);
    for (int i = 0; i < n; i++) {
        raw_ring *r = &g_rings[i];
        if (overlaps(atomic_load(&r->sq_map), r->sq_len, addr, len)) atomic_store(&r->sq_map, NULL);
        if (overlaps(atomic_load(&r->cq_map), r->cq_len, addr, len)) atomic_store(&r->cq_map, NULL);
        if (overlaps(atomic_load(&r->sqes_map), r->sqes_len, addr, len))
            atomic_store(&r->sqes_map, NULL);
    }
    pthread_mutex_unlock(&g_lock);
}

D9P_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    void *p = D9P_NEXT(mmap)(addr, len, prot, flags, fd, off);
    if (__builtin_expect(fd >= 0 && atomic_load_explicit(&g_ring_count, memory_order_relaxed), 0) &&
        p != MAP_FAILED) {
        int saved = errno;
        ring_mapped(fd, off, p, len);
        errno = saved;
    }
    return p;
}

D9P_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off64_t off) {
    void *p = D9P_NEXT(mmap64)(addr, len, prot, flags, fd, off);
    if (__builtin_expect(fd >= 0 && atomic_load_explicit(&g_ring_count, memory_order_relaxed), 0) &&
        p != MAP_FAILED) {
        int saved = errno;
        ring_mapped(fd, (off_t)off, p, len);
        errno = saved;
    }
    return p;
}

D9P_EXPORT int munmap(void *addr, size_t len) {
    if (__builtin_expect(atomic_load_explicit(&g_ring_count, memory_order_relaxed) != 0, 0))
        ring_unmapped(addr, len);
    return D9P_NEXT(munmap)(addr, len);
}

/* ---------------------------------------------------------------- reading the rings */

/* A field of a mapping at `off`, when the mapping holds it. */
static const unsigned *field(const char *map, size_t len, uint32_t off) {
    return map && (size_t)off + sizeof(unsigned) <= len ? (const unsigned *)(map + off) : NULL;
}

/* The completion ring as mapped (SINGLE_MMAP: inside the SQ ring's mapping), or false. */
static bool cq_view(const raw_ring *r, d9p_cq_view *v) {
    const char *map = atomic_load_explicit(&r->cq_map, memory_order_acquire);
    size_t len = r->cq_len;
    if (!map && (r->features & IORING_FEAT_SINGLE_MMAP)) {
        map = atomic_load_explicit(&r->sq_map, memory_order_acquire);
        len = r->sq_len;
    }
    unsigned shift = r->flags & IORING_SETUP_CQE32 ? 1 : 0;
    size_t cqes_end = (size_t)r->cq_off.cqes + ((size_t)r->cq_entries << (4 + shift));
    if (!map || cqes_end > len) return false;
    *v = (d9p_cq_view){.key = r,
                       .khead = field(map, len, r->cq_off.head),
                       .ktail = field(map, len, r->cq_off.tail),
                       .kring_mask = field(map, len, r->cq_off.ring_mask),
                       .kring_entries = field(map, len, r->cq_off.ring_entries),
                       .cqes = map + r->cq_off.cqes,
                       .cqe_shift = shift};
    return d9p_cq_view_usable(v) && v->entries == r->cq_entries;
}

/* The SQEs about to be submitted: the kernel's head to the program's tail, at most
 * to_submit, through the SQ array (IORING_SETUP_NO_SQARRAY: in order). */
static void note_submitted(const raw_ring *r, unsigned to_submit) {
    const char *sq = atomic_load_explicit(&r->sq_map, memory_order_acquire);
    const char *sqes = atomic_load_explicit(&r->sqes_map, memory_order_acquire);
    if (!sq || !sqes || !to_submit || !D9__ACTIVE()) return;
    const unsigned *head = field(sq, r->sq_len, r->sq_off.head);
    const unsigned *tail = field(sq, r->sq_len, r->sq_off.tail);
    const unsigned *mask = field(sq, r->sq_len, r->sq_off.ring_mask);
    bool no_array = r->flags & IORING_SETUP_NO_SQARRAY;
    unsigned shift = r->flags & IORING_SETUP_SQE128 ? 1 : 0;
    if (!head || !tail || !mask || *mask + 1 != r->sq_entries ||
        ((size_t)r->sq_entries << (6 + shift)) > r->sqes_len ||
        (!no_array && (size_t)r->sq_off.array + r->sq_entries * sizeof(unsigned) > r->sq_len))
        return;
    const unsigned *array = no_array ? NULL : (const unsigned *)(sq + r->sq_off.array);
    unsigned from = atomic_load_explicit((_Atomic unsigned *)head, memory_order_acquire);
    unsigned to = atomic_load_explicit((_Atomic unsigned *)tail, memory_order_acquire);
    if (to - from > r->sq_entries) return; /* not a state the kernel would submit from */
    if (to - from > to_submit) to = from + to_submit;
    for (unsigned i = from; i != to; i++) {
        unsigned index = array ? array[i & *mask] : i & *mask;
        if (index >= r->sq_entries) continue;
        const struct io_uring_sqe *sqe =
            (const struct io_uring_sqe *)(sqes + ((size_t)index << (6 + shift)));
        if ((sqe->flags & IOSQE_FIXED_FILE) || sqe->fd < 0) continue;
        d9p_uring_note_request(sqe->user_data, sqe->fd, sqe->opcode);
    }
}

/* ---------------------------------------------------------------- the system calls */

typedef struct raw_call {
    long number, a[6];
} raw_call;

static long call_raw(void *p) {
    const raw_call *c = p;
    return D9P_NEXT(syscall)(c->number, c->a[0], c->a[1], c->a[2], c->a[3], c->a[4], c->a[5]);
}

/* A thread inside a loop library's run function: that library's own ring (libuv's, for its
 * epoll_ctl batches) is no wait of a loop the shim would record. */
static bool inside_loop_library(void) {
    const d9a_thread *s = &d9a_self;
    return s->loop || s->worker_loop || s->depth;
}

static long enter(raw_call *c, const void *caller) {
    int fd = (int)c->a[0];
    unsigned to_submit = (unsigned)c->a[1], min_complete = (unsigned)c->a[2];
    unsigned flags = (unsigned)c->a[3];
    bool waits = (flags & IORING_ENTER_GETEVENTS) && min_complete > 0;
    if (d9p_uring_depth || inside_loop_library()) {
        if (waits) d9p_uring_waited(fd);
        return call_raw(c);
    }
    raw_ring *r = find(fd);
    d9p_cq_view cq;
    bool have_cq = r && cq_view(r, &cq);
    if (r) note_submitted(r, to_submit);
    if (waits) return d9p_uring_wait(have_cq ? &cq : NULL, fd, caller, call_raw, c);
    if (!have_cq) return call_raw(c);
    /* a submit: what completes at once (a close, a send that fits) may be consumed by the
     * program before any wait */
    d9p_uring_catch_up(&cq);
    long rc = call_raw(c);
    if (D9__ACTIVE()) {
        int saved = errno;
        d9p_uring_completions(&cq);
        errno = saved;
    }
    return rc;
}

long d9p_uring_syscall(long number, const long a[6], const void *caller) {
    raw_call c = {number, {a[0], a[1], a[2], a[3], a[4], a[5]}};
    if (number == SYS_io_uring_enter) return enter(&c, caller);
    long rc = call_raw(&c);
    if (number == SYS_io_uring_setup && rc >= 0) {
        int saved = errno;
        ring_set_up((int)rc, (const struct io_uring_params *)a[1], caller);
        errno = saved;
    }
    return rc;
}
