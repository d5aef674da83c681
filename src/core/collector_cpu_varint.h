/* The varint of a thread's CPU time (a park's or an unpark's cpu_time_ns), written from the
 * bytes of the thread's previous one. The value is 4-6 bytes long (2 ms to 9 hours of CPU) and
 * moves by micro- to milliseconds between a thread's parks and unparks, so its bytes past the
 * third do not change: those are taken from the last varint, and only the low 21 bits are
 * spread into the first three bytes (~15 instructions where the byte loop takes ~33 for five
 * bytes). Otherwise (a jump past 2^21 ns, a value under 2^21 or over 2^56, the thread's first)
 * the byte loop, whose bytes are kept for the next. The bytes are d9_raw_varint's
 * (test_collector_cpu_varint checks them over random walks and every length). */
#ifndef D9_CORE_COLLECTOR_CPU_VARINT_H
#define D9_CORE_COLLECTOR_CPU_VARINT_H

#include <stdint.h>
#include <string.h>

#include "format/encoder.h"

/* The thread's last CPU-time varint: its value, its bytes (16: a varint takes at most 10) and
 * their count - 1. All zero is the varint of 0. */
typedef struct d9_cpu_varint_memo {
    uint64_t value;
    uint8_t bytes[16];
    uint8_t len_m1;
} d9_cpu_varint_memo;

/* The varint of v at p (16 bytes of room needed there: the bytes past its length are
 * overwritten by what follows), remembered in m. */
static inline __attribute__((always_inline)) uint8_t *d9_cpu_varint(d9_cpu_varint_memo *m, uint8_t *p, uint64_t v) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    /* same bits from 21 up, and 4 to 8 bytes long (so the same length, and whole in 8 bytes) */
    if (__builtin_expect(((v ^ m->value) >> 21) == 0 && (uint8_t)(m->len_m1 - 3) <= 4, 1)) {
        uint64_t x, low = v & 0x1fffff;
        memcpy(&x, m->bytes, sizeof x);
        x = (x & ~0x7f7f7full) | (low & 0x7f) | (low << 1 & 0x7f00) | (low << 2 & 0x7f0000);
        memcpy(p, &x, sizeof x);
        memcpy(m->bytes, &x, sizeof x);
        m->value = v;
        return p + m->len_m1 + 1;
    }
#endif
    uint8_t *end = d9_raw_varint(p, v);
    memcpy(m->bytes, p, sizeof m->bytes);
    m->value = v;
    m->len_m1 = (uint8_t)(end - p - 1);
    return end;
}

#endif
