/* A Parquet page's zstd compression, by how much of zstd a column's values need
 * (pq_column_def.zstd). One compression context per mode, so that a page of another mode does
 * not change a context's parameters (zstd re-sizes and clears its tables when they change).
 *
 * PQ_ZSTD_ENTROPY hands zstd the page's sequences itself (ZSTD_compressSequences): every run of
 * at least 24 zero bytes as a match at offset 1, everything else literals, which zstd codes
 * with Huffman as it always does. zstd then searches nothing: for values whose low bytes are
 * noise (times' deltas, durations' dictionary indexes) its search finds ~1-2 % of the bytes at
 * 1.3-3.5 times the instructions of the entropy coding (docs/fleet-tables.md, "Measured"). Without
 * ZSTD_compressSequences (libzstd before 1.5.4) it is PQ_ZSTD_FAST. */
#ifndef D9_PARQUET_PQ_ZSTD_H
#define D9_PARQUET_PQ_ZSTD_H

#include <stddef.h>
#include <stdint.h>

#include "common/libzstd_loader.h"
#include "parquet/pq_buf.h"

typedef enum pq_zstd_mode {
    PQ_ZSTD_LEVEL,   /* the writer's level (default 3): matches searched (strings, sorted
                        dictionaries, task ids' repeating deltas, small indexes) */
    PQ_ZSTD_FAST,    /* level 1 with 5-byte matches below a writer's level 10 */
    PQ_ZSTD_ENTROPY, /* below a writer's level 10: literals and runs of zeros, no search */
    PQ_ZSTD_FAST_WIDE, /* below a writer's level 10: level 1 with 5-byte matches and a hash
                          table of 64 Ki entries (level 1's: 8-16 Ki): a dictionary's indexes of
                          two bytes, whose repeats lie far apart (the writer's choice) */
    PQ_ZSTD_NONE,    /* below a writer's level 10: the column chunk UNCOMPRESSED, for values
                        already packed to their bits, where zstd's entropy coding saves a few
                        percent at ~17 instructions a byte (pq_column_def.zstd) */
    PQ_ZSTD_MODES
} pq_zstd_mode;

typedef struct pq_zstd {
    const d9_libzstd *lib;
    int level;
    ZSTD_CCtx *cctx[PQ_ZSTD_MODES];
    ZSTD_Sequence *seqs;
    size_t seqs_cap;
} pq_zstd;

/* libzstd's contexts come when a mode is first used. 0, or -1 when libzstd cannot be loaded. */
int pq_zstd_init(pq_zstd *z, int level);
/* The mode a page of `mode` is compressed in: the writer's level from level 10 on (asked for
 * its bytes), PQ_ZSTD_FAST for PQ_ZSTD_ENTROPY without ZSTD_compressSequences. */
pq_zstd_mode pq_zstd_effective(const pq_zstd *z, pq_zstd_mode mode);
/* src's n bytes as one zstd frame into out (emptied first); PQ_ZSTD_NONE as PQ_ZSTD_ENTROPY. 0, or -1 with zstd's reason (or
 * "out of memory") in *why. */
int pq_zstd_compress(pq_zstd *z, pq_zstd_mode mode, const uint8_t *src, size_t n, pq_buf *out, const char **why);
void pq_zstd_free(pq_zstd *z);

#endif
