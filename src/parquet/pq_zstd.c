/* A page's zstd compression by mode (pq_zstd.h). */
#include "parquet/pq_zstd.h"

#include <stdlib.h>
#include <string.h>

int pq_zstd_init(pq_zstd *z, int level) {
    *z = (pq_zstd){.lib = d9_libzstd_get(), .level = level};
    return z->lib ? 0 : -1;
}

pq_zstd_mode pq_zstd_effective(const pq_zstd *z, pq_zstd_mode mode) {
    if (z->level >= 10 || mode >= PQ_ZSTD_MODES) return PQ_ZSTD_LEVEL;
    if (mode == PQ_ZSTD_ENTROPY && !z->lib->compressSequences) return PQ_ZSTD_FAST;
    return mode;
}

static ZSTD_CCtx *context(pq_zstd *z, pq_zstd_mode mode) {
    if (z->cctx[mode]) return z->cctx[mode];
    ZSTD_CCtx *c = z->lib->createCCtx();
    if (!c) return NULL;
    const d9_libzstd *l = z->lib;
    switch (mode) {
    case PQ_ZSTD_LEVEL: l->setParameter(c, ZSTD_c_compressionLevel, z->level); break;
    case PQ_ZSTD_FAST:
        l->setParameter(c, ZSTD_c_compressionLevel, 1);
        l->setParameter(c, ZSTD_c_minMatch, 5);
        break;
    case PQ_ZSTD_FAST_WIDE:
        l->setParameter(c, ZSTD_c_compressionLevel, 1);
        l->setParameter(c, ZSTD_c_minMatch, 5);
        l->setParameter(c, ZSTD_c_hashLog, 16);
        break;
    default:
        /* level 1's entropy coding; Huffman literals even where a future default would not */
        l->setParameter(c, ZSTD_c_compressionLevel, 1);
        l->setParameter(c, ZSTD_c_literalCompressionMode, ZSTD_ps_enable);
        /* a wrong sequence is an error, not a page that reads back other bytes (a few
         * compares a sequence: a page has a sequence per run of zeros) */
        l->setParameter(c, ZSTD_c_validateSequences, 1);
        break;
    }
    z->cctx[mode] = c;
    return c;
}

/* Runs of zero bytes as matches at offset 1 (the run's first zero stays a literal, the one
 * the match copies), found by 8-byte words: a run of 24 or more holds two words at a
 * multiple of 8 from the start; a shorter one may stay literals. Returns the count. */
static size_t zero_run_sequences(ZSTD_Sequence *seqs, const uint8_t *p, size_t n) {
    size_t ns = 0, lit0 = 0, i = 0;
    while (i + 16 <= n) {
        uint64_t a, b;
        memcpy(&a, p + i, 8);
        memcpy(&b, p + i + 8, 8);
        if (b) { /* the next window holds b too */
            i += 16;
            continue;
        }
        if (a) {
            i += 8;
            continue;
        }
        size_t s = i;
        while (s > lit0 && p[s - 1] == 0) s--;
        size_t e = i + 16;
        for (uint64_t x; e + 8 <= n; e += 8) {
            memcpy(&x, p + e, 8);
            if (x) break;
        }
        while (e < n && p[e] == 0) e++;
        seqs[ns++] = (ZSTD_Sequence){.litLength = (unsigned)(s + 1 - lit0), .offset = 1, .matchLength = (unsigned)(e - s - 1)};
        lit0 = e;
        i = e;
    }
    return ns;
}

int pq_zstd_compress(pq_zstd *z, pq_zstd_mode mode, const uint8_t *src, size_t n, pq_buf *out, const char **why) {
    mode = pq_zstd_effective(z, mode);
    if (mode == PQ_ZSTD_NONE) mode = PQ_ZSTD_ENTROPY; /* the writer compresses no such page */
    ZSTD_CCtx *c = context(z, mode);
    size_t bound = z->lib->compressBound(n);
    out->len = 0;
    if (!c || !pq_buf_reserve(out, bound)) {
        *why = "out of memory";
        return -1;
    }
    size_t r;
    if (mode == PQ_ZSTD_ENTROPY) {
        /* a match per run of >= 16 zero bytes, a nonzero byte between two: at most n / 16 + 1;
         * a page is below 2 GiB (the format's sizes are 32-bit), so each length fits */
        size_t need = n / 16 + 1;
        if (need > z->seqs_cap) {
            ZSTD_Sequence *s = realloc(z->seqs, need * sizeof *s);
            if (!s) {
                *why = "out of memory";
                return -1;
            }
            z->seqs = s;
            z->seqs_cap = need;
        }
        size_t ns = zero_run_sequences(z->seqs, src, n);
        r = z->lib->compressSequences(c, out->p, bound, z->seqs, ns, src, n);
    } else {
        ZSTD_inBuffer in = {src, n, 0};
        ZSTD_outBuffer o = {out->p, bound, 0};
        r = z->lib->compressStream2(c, &o, &in, ZSTD_e_end);
        if (!z->lib->isError(r) && r == 0) r = o.pos;
        else if (!z->lib->isError(r)) r = (size_t)-ZSTD_error_dstSize_tooSmall;
    }
    if (z->lib->isError(r)) {
        *why = z->lib->getErrorName(r);
        return -1;
    }
    out->len = r;
    return 0;
}

void pq_zstd_free(pq_zstd *z) {
    for (int i = 0; i < PQ_ZSTD_MODES; i++)
        if (z->cctx[i]) z->lib->freeCCtx(z->cctx[i]);
    free(z->seqs);
    *z = (pq_zstd){0};
}
