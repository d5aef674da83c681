/* Significance tests on histograms (diff_stats.h). */
#include "analysis/diff_stats.h"

double d9d_sqrt(double x) {
    if (!(x > 0)) return 0;
    /* Newton from a power-of-two guess: converges quadratically, 8 steps are plenty from a
     * start within a factor of 2 (the exponent halved) */
    double g = 1;
    double y = x;
    while (y > 4) { y /= 4; g *= 2; }
    while (y < 0.25) { y *= 4; g /= 2; }
    for (int i = 0; i < 8; i++) g = 0.5 * (g + x / g);
    return g;
}

static uint64_t bucket(const d9a_hist *h, uint32_t i) { return i < h->nbuckets ? h->buckets[i] : 0; }

double d9d_mann_whitney_z(const d9a_hist *a, const d9a_hist *b, double *superiority) {
    if (superiority) *superiority = 0.5;
    double na = (double)a->count, nb = (double)b->count;
    if (a->count == 0 || b->count == 0) return 0;
    uint32_t n = a->nbuckets > b->nbuckets ? a->nbuckets : b->nbuckets;
    double u = 0, below_a = 0, ties = 0;
    for (uint32_t i = 0; i < n; i++) {
        double ca = (double)bucket(a, i), cb = (double)bucket(b, i);
        u += cb * (below_a + 0.5 * ca);
        below_a += ca;
        double t = ca + cb;
        ties += t * t * t - t;
    }
    double total = na + nb;
    double mean = na * nb / 2;
    double var = na * nb / 12 * ((total + 1) - ties / (total * (total - 1)));
    if (superiority) *superiority = u / (na * nb);
    if (!(var > 0)) return 0;
    double d = u - mean;
    d = d > 0.5 ? d - 0.5 : d < -0.5 ? d + 0.5 : 0; /* continuity */
    return d / d9d_sqrt(var);
}

double d9d_proportion_z(uint64_t ka, uint64_t na, uint64_t kb, uint64_t nb) {
    if (na == 0 || nb == 0) return 0;
    double p = (double)(ka + kb) / (double)(na + nb);
    if (!(p > 0) || !(p < 1)) return 0;
    double se = d9d_sqrt(p * (1 - p) * (1.0 / (double)na + 1.0 / (double)nb));
    if (!(se > 0)) return 0;
    return ((double)kb / (double)nb - (double)ka / (double)na) / se;
}

double d9d_tail_z(const d9a_hist *a, const d9a_hist *b, double q) {
    if (a->count == 0 || b->count == 0) return 0;
    uint32_t n = a->nbuckets > b->nbuckets ? a->nbuckets : b->nbuckets;
    uint64_t total = a->count + b->count;
    /* the pooled quantile's bucket: the first where the running count reaches ceil(q N) */
    double r = q * (double)total;
    uint64_t rank = (uint64_t)r;
    if ((double)rank < r) rank++;
    if (rank == 0) rank = 1;
    uint64_t seen = 0;
    uint32_t at = n;
    for (uint32_t i = 0; i < n; i++) {
        seen += bucket(a, i) + bucket(b, i);
        if (seen >= rank) {
            at = i;
            break;
        }
    }
    uint64_t ka = 0, kb = 0;
    for (uint32_t i = at + 1; i < n; i++) {
        ka += bucket(a, i);
        kb += bucket(b, i);
    }
    return d9d_proportion_z(ka, a->count, kb, b->count);
}
