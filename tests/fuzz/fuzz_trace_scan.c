/* The in-process symbolizer's trace reader (src/symbols/trace_scan.c) on arbitrary bytes:
 * never reads out of bounds (ASan), its fast path over uninteresting events agrees with the
 * field-by-field reader on everything (status, where it stopped, why, what it collected), and
 * the prefix up to good_bytes scans cleanly to the same event count. */
#include <stdlib.h>
#include <string.h>

#include "symbols/trace_scan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool same_input(const d9_sym_input *a, const d9_sym_input *b) {
    if (a->addrs.count != b->addrs.count || a->map_count != b->map_count || strcmp(a->boot_id, b->boot_id) != 0)
        return false;
    uint64_t k, v;
    for (size_t pos = 0; d9_u64_map_next(&a->addrs, &pos, &k, &v);) {
        uint64_t *w = d9_u64_map_get(&b->addrs, k);
        if (!w || *w != v) return false;
    }
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    d9_sym_input fast, slow;
    d9_scan_result rf, rs;
    d9_sym_input_init(&fast);
    d9_sym_input_init(&slow);
    d9_trace_scan(data, size, &fast, &rf);
    d9_trace_scan_field_by_field(data, size, &slow, &rs);
    if (rf.status != rs.status || rf.good_bytes != rs.good_bytes || rf.events != rs.events ||
        strcmp(rf.message, rs.message) != 0 || !same_input(&fast, &slow) || rf.good_bytes > size)
        abort();
    d9_sym_input_free(&fast);
    d9_sym_input_free(&slow);

    /* an exact-size copy, so ASan sees a read past good_bytes */
    uint8_t *copy = malloc(rf.good_bytes ? rf.good_bytes : 1);
    if (!copy) return 0;
    memcpy(copy, data, rf.good_bytes);
    d9_sym_input whole;
    d9_scan_result rw;
    d9_sym_input_init(&whole);
    d9_trace_scan(copy, rf.good_bytes, &whole, &rw);
    if (!whole.oom && (rw.status != D9_SCAN_END || rw.events != rf.events || rw.good_bytes != rf.good_bytes))
        abort();
    d9_sym_input_free(&whole);
    free(copy);
    return 0;
}
