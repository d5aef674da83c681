/* The unbiased weight of a heap sample (sources/heap_sampler.h): an allocation of `size` bytes
 * is sampled with probability p = 1 - e^(-size/rate) when the sampler counts down exponential
 * intervals of mean `rate` bytes, so one sample stands for 1/p allocations and size/p bytes.
 * Every reader weights each sample by it before summing (summing sizes first and weighting
 * the sum under-counts small blocks). rate 0 or 1: every allocation was recorded (weight 1). */
#ifndef D9_COMMON_HEAP_WEIGHT_H
#define D9_COMMON_HEAP_WEIGHT_H

#include <stdint.h>

#include "common/exp_log.h"

static inline double d9_heap_weight(uint64_t size, uint64_t rate) {
    if (rate <= 1 || size == 0) return 1;
    double p = d9_one_minus_exp_neg((double)size / (double)rate);
    return p > 0 ? 1 / p : 1;
}

#endif
