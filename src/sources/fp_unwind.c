#include "sources/fp_unwind.h"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

/* The walk reads other functions' frame slots (saved frame pointer, return address): memory
 * the sanitizers did not see written by this code. Nothing here is racy (a thread walks its
 * own stack), so keep their instrumentation out. */
#if defined(__clang__)
#define D9_NO_SANITIZE __attribute__((no_sanitize("address", "thread", "undefined")))
#else
#define D9_NO_SANITIZE __attribute__((no_sanitize_address, no_sanitize_thread, no_sanitize_undefined))
#endif

D9_NO_SANITIZE
size_t d9_fp_walk(uint64_t pc, uint64_t fp, uint64_t sp, const d9_stack_bounds *b, uint64_t *out,
                  size_t max) {
    size_t n = 0;
    if (max == 0) return 0;
    if (pc) out[n++] = pc;
    if (!b || b->hi <= b->lo) return n;
    uint64_t floor = sp > b->lo ? sp : b->lo; /* frames live at or above the stack pointer */
    uint64_t prev = floor;
    while (n < max) {
        if (fp & 7) break;
        if (fp < floor || fp > b->hi - 16) break;
        if (fp < prev || fp - prev > D9_FP_MAX_FRAME_BYTES) break;
        const uint64_t *frame = (const uint64_t *)(uintptr_t)fp;
        uint64_t ret = frame[1];
        uint64_t next = frame[0];
        if (!d9_fp_plausible_pc(ret)) break;
        out[n++] = ret;
        if (next <= fp) break; /* the chain must climb strictly */
        prev = fp;
        fp = next;
    }
    return n;
}

D9_NO_SANITIZE
uint32_t d9_fp_copy_stack(uint8_t *dst, uint64_t sp, const d9_stack_bounds *b, uint32_t max) {
    if (!b || sp < b->lo || sp >= b->hi || (sp & 7)) return 0;
    uint64_t len = b->hi - sp < max ? b->hi - sp : max;
    len &= ~7ull;
    const volatile uint64_t *src = (const volatile uint64_t *)(uintptr_t)sp;
    for (uint64_t i = 0; i < len / 8; i++) {
        uint64_t w = src[i];
        __builtin_memcpy(dst + i * 8, &w, 8); /* 8 bytes: inlined, never a call */
    }
    return (uint32_t)len;
}

bool d9_stack_bounds_of_self(d9_stack_bounds *b) {
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) != 0) return false;
    void *addr = NULL;
    size_t size = 0;
    int rc = pthread_attr_getstack(&attr, &addr, &size);
    pthread_attr_destroy(&attr);
    if (rc != 0 || !addr || size == 0) return false;
    b->lo = (uint64_t)(uintptr_t)addr;
    b->hi = b->lo + size;
    return true;
}

static uint64_t parse_hex(const char **p, const char *end) {
    uint64_t v = 0;
    while (*p < end) {
        char c = **p;
        unsigned d;
        if (c >= '0' && c <= '9') d = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') d = (unsigned)(c - 'a' + 10);
        else break;
        v = v << 4 | d;
        (*p)++;
    }
    return v;
}

/* Does the maps line [p, end) cover `addr` with a readable mapping? */
static bool line_covers(const char *p, const char *end, uint64_t addr, d9_stack_bounds *b) {
    uint64_t lo = parse_hex(&p, end);
    if (p >= end || *p != '-') return false;
    p++;
    uint64_t hi = parse_hex(&p, end);
    bool readable = p + 1 < end && p[1] == 'r'; /* " rw-p": permissions follow the range */
    if (!readable || addr < lo || addr >= hi) return false;
    b->lo = lo;
    b->hi = hi;
    return true;
}

/* Lines look like "7ffd1c0d2000-7ffd1c0f3000 rw-p 00000000 00:00 0   [stack]". Read in chunks
 * into a stack buffer, carrying a cut line over to the next chunk. */
bool d9_stack_bounds_from_maps(uint64_t addr, d9_stack_bounds *b) {
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    char buf[4096];
    size_t have = 0;
    bool found = false;
    while (!found) {
        ssize_t got = read(fd, buf + have, sizeof buf - have);
        if (got <= 0) break;
        have += (size_t)got;
        size_t start = 0;
        for (size_t i = 0; i < have && !found; i++) {
            if (buf[i] != '\n') continue;
            found = line_covers(buf + start, buf + i, addr, b);
            start = i + 1;
        }
        if (start == 0 && have == sizeof buf) break; /* a line longer than the buffer */
        for (size_t i = start; i < have; i++) buf[i - start] = buf[i];
        have -= start;
    }
    close(fd);
    return found;
}
