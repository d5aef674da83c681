/* DIAL9_THREAD_CPU=lazy: a thread's page from its first long poll (thread_cpu_clock_lazy.h). */
#include "core/thread_cpu_clock_lazy.h"

#include "core/poll_cpu.h"
#include "core/thread_buffer.h"
#include "dial9/dial9.h"

const struct perf_event_mmap_page d9_tcc_lazy_page = {.lock = 3};

static bool g_on;
static uint32_t g_pages;  /* pages opened lazily, this recording */
static uint32_t g_closes; /* ... closed again after a quiet period */
static const d9_event_type *g_type;

int d9_tcc_lazy_start(bool on) {
    __atomic_store_n(&g_pages, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&g_closes, 0, __ATOMIC_RELAXED);
    if (on && !g_type) {
        static const d9_field fields[] = {{"worker_id", D9_U64}, {"open", D9_BOOL}};
        g_type = d9_event_type_define("ThreadCpuPageEvent", fields, 2);
        if (!g_type) return -1;
    }
    __atomic_store_n(&g_on, on, __ATOMIC_RELAXED);
    return 0;
}

bool d9_tcc_lazy_on(void) { return __atomic_load_n(&g_on, __ATOMIC_RELAXED); }

void d9_tcc_lazy_begin(d9_tcc_state *s) {
    s->poll_page = &d9_tcc_lazy_page;
    s->poll_lock = s->lock; /* a poll under way ends in the slow twin, which sees it is not this recording's */
}

void d9_tcc_lazy_long_poll(uint64_t end_ticks) {
    d9_poll_cpu_record_unknown();
    /* the page now (perf_event_open, mmap, two reads: once a thread); refused, the thread reads
     * by system call for the rest of the recording, its long polls then unaccounted as before */
    d9_thread_cpu_clock_slow(&d9__tls_cpu_clock, D9_TCC_OPEN, end_ticks);
}

static void say_page(bool open) {
    const d9_thread *t = d9__tls_thread;
    uint64_t worker = t ? atomic_load_explicit(&t->worker_id, memory_order_relaxed) : 255;
    d9_arg args[2] = {{.u = worker}, {.b = open}};
    if (g_type) d9__emit(g_type, args);
}

void d9_tcc_lazy_opened(d9_tcc_state *s, uint64_t now_ticks) {
    __atomic_add_fetch(&g_pages, 1, __ATOMIC_RELAXED);
    s->lazy_opened = true;
    s->long_poll_ticks = now_ticks;
    say_page(true);
}

bool d9_tcc_lazy_quiet(const d9_tcc_state *s, uint64_t now_ticks, double ns_per_tick) {
    if (!s->lazy_opened || !(ns_per_tick > 0)) return false;
    const d9_thread *t = d9__tls_thread;
    if (t && __atomic_load_n(&t->in_poll, __ATOMIC_RELAXED)) return false; /* its end needs the page */
    int64_t ticks = (int64_t)(now_ticks - s->long_poll_ticks);
    return ticks > 0 && (double)ticks * ns_per_tick >= (double)D9_TCC_LAZY_QUIET_NS;
}

void d9_tcc_lazy_close(d9_tcc_state *s, uint32_t gen) {
    __atomic_add_fetch(&g_closes, 1, __ATOMIC_RELAXED);
    s->lazy_opened = false;
    s->gen = gen | D9_TCC_LAZY;
    d9_tcc_lazy_begin(s);
    say_page(false);
}

uint32_t d9_tcc_lazy_closes(void) { return __atomic_load_n(&g_closes, __ATOMIC_RELAXED); }

uint32_t d9_tcc_lazy_pages(void) { return __atomic_load_n(&g_pages, __ATOMIC_RELAXED); }

bool d9_tcc_lazy_thread(void) {
    return d9_tcc_lazy_is(&d9__tls_cpu_clock, __atomic_load_n(&d9_thread_cpu_clock_gen, __ATOMIC_RELAXED));
}
