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

/* How many of h's values lie in buckets above the one holding h's quantile q of `of`. */
static uint32_t quantile_bucket(const d9a_hist *h, double q) {
    double r = q * (double)h->count;
    uint64_t rank = (uint64_t)r;
    if ((double)rank < r) rank++;
    if (rank == 0) rank = 1;
    uint64_t seen = 0;
    for (uint32_t i = 0; i < h->nbuckets; i++) {
        seen += h->buckets[i];
        if (seen >= rank) return i;
    }
    return h->nbuckets;
}

static uint64_t count_above_bucket(const d9a_hist *h, uint32_t at) {
    uint64_t k = 0;
    for (uint32_t i = at + 1; i < h->nbuckets; i++) k += h->buckets[i];
    return k;
}

double d9d_tail_z(const d9a_hist *a, const d9a_hist *b, double q) {
    if (a->count == 0 || b->count == 0) return 0;
    /* up: B's share above A's quantile against A's own; down: A's share above B's quantile
     * against B's own. Each side's threshold is its own base's, so a tail that grew past 1 %
     * of the values still shows (a pooled quantile would move into it) */
    uint32_t ta = quantile_bucket(a, q), tb = quantile_bucket(b, q);
    double up = d9d_proportion_z(count_above_bucket(a, ta), a->count, count_above_bucket(b, ta), b->count);
    double down = -d9d_proportion_z(count_above_bucket(b, tb), b->count, count_above_bucket(a, tb), a->count);
    return up >= -down ? up : down;
}
