/* Which context-switch sample is which off-CPU interval's (model/switch_stack_match.h), the
 * rule analyze, the export and the viewer share: a sample after its switch-out, one before it
 * (the kernel writes it first), the 1 ms window either side, an interval that had ended, the
 * oldest waiting sample first, a sample inside an interval that has one already, and the bound
 * on waiting samples. */
#include "check.h"
#include "model/switch_stack_match.h"

#define MS 1000000ull
#define NONE D9M_SWITCH_NO_SAMPLE

static void test_after_and_before(void) {
    d9m_switch_match m = {0};
    /* no interval yet: a sample waits */
    CHECK(!d9m_switch_match_sample(&m, 10 * MS, 1));
    /* the next switch-out 0.9 ms later takes it */
    CHECK_EQ_U64(d9m_switch_match_interval(&m, 10 * MS + 900000, 12 * MS), 1);
    /* that interval has a sample: the next one inside it waits */
    CHECK(!d9m_switch_match_sample(&m, 11 * MS, 2));
    /* the next switch-out 1 ms after that sample takes it (the window's edge counts) */
    CHECK_EQ_U64(d9m_switch_match_interval(&m, 12 * MS, 13 * MS), 2);
    /* a switch-out with nothing waiting: the sample 0.7 ms after it, before its switch-in, is its */
    CHECK_EQ_U64(d9m_switch_match_interval(&m, 20 * MS, 22 * MS), NONE);
    CHECK(d9m_switch_match_sample(&m, 20 * MS + 700000, 3));
    /* only one: a second sample waits */
    CHECK(!d9m_switch_match_sample(&m, 21 * MS, 4));
    CHECK_EQ_U64(d9m_switch_match_interval(&m, 21 * MS + 500000, 23 * MS), 4);
}

static void test_window_and_ended(void) {
    d9m_switch_match m = {0};
    /* a sample 1.1 ms before the switch-out: too old, dropped */
    CHECK(!d9m_switch_match_sample(&m, 1 * MS, 1));
    CHECK_EQ_U64(d9m_switch_match_interval(&m, 2 * MS + 100000, 3 * MS), NONE);
    /* the interval ended before the sample was taken: refused, and it waits */
    CHECK(!d9m_switch_match_sample(&m, 3 * MS, 2));
    /* a sample 1.1 ms after an interval's switch-out, still inside it: outside the window */
    CHECK_EQ_U64(d9m_switch_match_interval(&m, 10 * MS, 20 * MS), NONE); /* sample 2 is too old */
    CHECK(!d9m_switch_match_sample(&m, 11 * MS + 100000, 3));
    /* at the same time as the switch-out (the sample comes first in time order): taken */
    CHECK(!d9m_switch_match_sample(&m, 30 * MS, 4));
    CHECK_EQ_U64(d9m_switch_match_interval(&m, 30 * MS, 31 * MS), 4);
}

static void test_oldest_first_and_bound(void) {
    d9m_switch_match m = {0};
    CHECK(!d9m_switch_match_sample(&m, 10 * MS, 1));
    CHECK(!d9m_switch_match_sample(&m, 10 * MS + 100000, 2));
    CHECK_EQ_U64(d9m_switch_match_interval(&m, 10 * MS + 500000, 10 * MS + 600000), 1);
    CHECK_EQ_U64(d9m_switch_match_interval(&m, 10 * MS + 700000, 10 * MS + 800000), 2);
    CHECK_EQ_U64(d9m_switch_match_interval(&m, 10 * MS + 900000, 11 * MS), NONE);
    /* more samples than may wait: the oldest go first */
    for (uint32_t i = 0; i < D9M_SWITCH_WAITING + 2; i++) CHECK(!d9m_switch_match_sample(&m, 20 * MS + i, 100 + i));
    CHECK_EQ_U64(m.nwait, D9M_SWITCH_WAITING);
    CHECK_EQ_U64(d9m_switch_match_interval(&m, 20 * MS + 500000, 20 * MS + 600000), 102);
}

int main(void) {
    test_after_and_before();
    test_window_and_ended();
    test_oldest_first_and_bound();
    return d9t_summary("model_switch_stack_match");
}
