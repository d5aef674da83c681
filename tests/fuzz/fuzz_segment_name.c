/* The trace file name parser (src/common/segment_name.c) on arbitrary names: never reads past
 * the name (ASan), and whatever it accepts is exactly a name the writer could have written
 * (trace., digits, one of the three suffixes): its canonical form parses back to the same N and
 * kind, and it is a trace file name to the directory search. Retention deletes what this
 * parser accepts, so "accepts only these names" is the property that matters. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/segment_name.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *name = malloc(size + 1); /* exactly the name: ASan sees any read past its NUL */
    if (!name) return 0;
    memcpy(name, data, size);
    name[size] = '\0';
    uint64_t seq;
    d9_segment_kind kind;
    if (d9_segment_name_parse(name, &seq, &kind)) {
        if (strncmp(name, "trace.", 6) != 0 || !d9_is_trace_file_name(name)) abort();
        const char *p = name + 6;
        while (*p >= '0' && *p <= '9') p++;
        if (p == name + 6 || strcmp(p, d9_segment_kind_suffix(kind)) != 0) abort();
        char canon[D9_SEGMENT_NAME_MAX];
        d9_segment_name_format(canon, sizeof canon, seq, kind);
        uint64_t seq2;
        d9_segment_kind kind2;
        if (!d9_segment_name_parse(canon, &seq2, &kind2) || seq2 != seq || kind2 != kind) abort();
        /* without leading zeros the name is its canonical form */
        if (name[6] != '0' && strcmp(canon, name) != 0) abort();
    }
    (void)d9_is_trace_file_name(name);
    free(name);
    return 0;
}
