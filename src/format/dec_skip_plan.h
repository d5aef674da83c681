/* How the decoder in scan mode (d9_dec_set_scan) steps over an event its reader has no use
 * for, without reading its values.
 *
 * Most events of a segment (polls, parks, unparks, wakes, spawns) carry nothing the symbolizer
 * needs, and their fields are all fixed-width or varints. Reading them value by value through
 * the generic field reader cost more than recording them did. Instead, when the schema is
 * registered, its layout is compiled into a few ops, each "step over N bytes of fixed-width
 * fields, then a varint" (or an optional varint, or the end of the event), so stepping over
 * an event is a few additions and a scan for the varints' last bytes.
 *
 * It only steps over an event that the generic reader would read in full: a malformed event,
 * like one near the end of the data (see d9_skip_event), is left to that reader to report. */
#ifndef D9_FORMAT_DEC_SKIP_PLAN_H
#define D9_FORMAT_DEC_SKIP_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* An op: bytes of fixed-width fields to step over, then what comes next. Two full words rather
 * than flag bits in one: the step is then a single add from memory and the test a single
 * compare with memory, which matters at a handful of instructions per event. */
enum d9_skip_then { D9_SKIP_VARINT, D9_SKIP_OPTIONAL_VARINT, D9_SKIP_END };
typedef struct d9_skip_op {
    size_t bytes;
    size_t then; /* enum d9_skip_then */
} d9_skip_op;

typedef struct d9_skip_plan {
    d9_skip_op *ops; /* the last one is D9_SKIP_END */
    size_t max_size; /* the most bytes an event can take: every varint 10 bytes long */
} d9_skip_plan;

/* Compile an event layout (the u24 timestamp delta when has_ts, then the fields' wire types).
 * False when some field's size is only known by reading it (strings, stacks, maps, lists,
 * optional fixed-width values) or on no memory: such events take the generic reader. */
bool d9_skip_plan_build(d9_skip_plan *pl, bool has_ts, const uint8_t *types, uint16_t nfields);
void d9_skip_plan_free(d9_skip_plan *pl);

/* Step over the values of one event at p (just after its type id). The caller guarantees that
 * pl->max_size bytes can be read from p, so no field needs a bounds check: that is most of the
 * saving. Returns the end of the event, or NULL when it is malformed (a varint of more than 10
 * bytes, a presence byte other than 0 or 1), for the generic reader to report. Inline: it runs
 * once per event, and a call would be a sizeable part of that. d9_skip_ops takes the plan's
 * ops (the decoder's scan loop keeps those, one load fewer per event). */
static inline const uint8_t *d9_skip_ops(const d9_skip_op *op, const uint8_t *p) {
    for (;; op++) {
        p += op->bytes;
        if (op->then != D9_SKIP_VARINT) { /* one test for both: plain varints are the common case */
            if (op->then == D9_SKIP_END) return p;
            if (*p > 1) return NULL; /* the presence byte */
            if (*p++ == 0) continue;
        }
        /* A varint ends at its first byte without the high bit, the 10th at the latest, and
         * that one holds bit 63 only (as the decoder requires). */
        const uint8_t *last = p + 9;
        for (; *p & 0x80; p++)
            if (p == last) return NULL;
        if (p == last && *p > 1) return NULL;
        p++;
    }
}

static inline const uint8_t *d9_skip_event(const d9_skip_plan *pl, const uint8_t *p) {
    return d9_skip_ops(pl->ops, p);
}

#endif
