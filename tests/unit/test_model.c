/* The trace model's shared pieces (src/model): the pairing and wake-linking rules the analysis
 * and the export both use, and the symbol table both apply. The end-to-end proof is that analyze and export
 * give the same answers as before (tests/goldens, test_export_fixture). */
#include "check.h"
#include "model/pairing.h"
#include "model/symtab.h"
#include "model/wake_link.h"

static d9m_mark mark(uint8_t kind, uint64_t ts) { return (d9m_mark){.kind = kind, .ts = ts, .task = ts}; }

static void test_pairing(void) {
    d9m_pair_state s = {0};
    d9m_mark k;
    const d9m_mark *start;
    k = mark(D9M_POLL_END, 1);
    CHECK(d9m_pair(&s, &k, &start) == D9M_PAIR_STRAY_END);
    k = mark(D9M_POLL_START, 2);
    CHECK(d9m_pair(&s, &k, &start) == D9M_PAIR_OPENED);
    k = mark(D9M_POLL_START, 3); /* the start at 2 loses its end */
    CHECK(d9m_pair(&s, &k, &start) == D9M_PAIR_REOPENED);
    k = mark(D9M_PARK, 4); /* parks pair on their own */
    CHECK(d9m_pair(&s, &k, &start) == D9M_PAIR_OPENED);
    k = mark(D9M_POLL_END, 5);
    CHECK(d9m_pair(&s, &k, &start) == D9M_PAIR_CLOSED);
    CHECK_EQ_U64(start->ts, 3);
    CHECK_EQ_U64(start->task, 3);
    CHECK(!s.in_poll && s.parked);
    k = mark(D9M_UNPARK, 6);
    CHECK(d9m_pair(&s, &k, &start) == D9M_PAIR_CLOSED);
    CHECK_EQ_U64(start->ts, 4);
    k = mark(D9M_UNPARK, 7);
    CHECK(d9m_pair(&s, &k, &start) == D9M_PAIR_STRAY_END);
}

static void test_wake_link(void) {
    d9m_wake_state s = {0};
    d9m_wake_link l;
    CHECK(!d9m_wake_poll(&s, 5, 8, &l)); /* no wake: nothing to link */
    d9m_wake_note(&s, 10);
    CHECK(d9m_wake_pending(&s));
    CHECK(d9m_wake_poll(&s, 15, 20, &l));
    CHECK_EQ_U64(l.runnable_since, 10);
    CHECK_EQ_U64(l.delay_ns, 5);
    CHECK_EQ_U64(l.wakes, 1);
    CHECK(!d9m_wake_pending(&s));
    /* a wake while that poll still ran: runnable from its end */
    d9m_wake_note(&s, 18);
    CHECK(d9m_wake_poll(&s, 30, 35, &l));
    CHECK_EQ_U64(l.runnable_since, 20);
    CHECK_EQ_U64(l.delay_ns, 10);
    /* several wakes before one poll: all lead to it, the delay from the first */
    d9m_wake_note(&s, 40);
    d9m_wake_note(&s, 42);
    CHECK(d9m_wake_poll(&s, 50, 51, &l));
    CHECK_EQ_U64(l.wakes, 2);
    CHECK_EQ_U64(l.delay_ns, 10);
    /* a poll that started before the wake (a late record) leaves it pending */
    d9m_wake_note(&s, 100);
    CHECK(!d9m_wake_poll(&s, 90, 95, &l));
    CHECK(d9m_wake_pending(&s));
    CHECK(d9m_wake_poll(&s, 100, 120, &l)); /* a poll at the wake's timestamp is its poll */
    CHECK_EQ_U64(l.runnable_since, 100);
    CHECK_EQ_U64(l.delay_ns, 0);
    /* overlapping polls of one task: runnable from the end of the other, no negative delay */
    d9m_wake_note(&s, 110);
    CHECK(d9m_wake_poll(&s, 115, 130, &l));
    CHECK_EQ_U64(l.runnable_since, 120);
    CHECK_EQ_U64(l.delay_ns, 0);
}

static void test_symtab(void) {
    d9m_symtab t = {0};
    CHECK(d9m_symtab_add(&t, 0x1000, 0, 1, 0, 10, 0) == 0);
    CHECK(d9m_symtab_add(&t, 0x1000, 0, 2, 0, 11, 1) == 0);
    CHECK(d9m_symtab_add(&t, 0x1000, 0, 3, 0, 12, 1) == 0); /* repeated depth: the first wins */
    CHECK(d9m_symtab_add(&t, 0x2000, 0x100, 4, 0, 0, 0) == 0);
    CHECK(d9m_symtab_add(&t, 0x2080, 0, 5, 0, 0, 0) == 0); /* exact, inside that range */
    const d9m_sym *out[8];
    CHECK_EQ_U64(d9m_symtab_lookup(&t, 0x1000, out, 8), 2);
    CHECK_EQ_U64(out[0]->name, 2); /* deepest inline level first */
    CHECK_EQ_U64(out[1]->name, 1);
    CHECK_EQ_U64(d9m_symtab_lookup(&t, 0x1000, out, 1), 1);
    CHECK_EQ_U64(d9m_symtab_lookup(&t, 0x20ff, out, 8), 1);
    CHECK_EQ_U64(out[0]->name, 4); /* the range, past the exact entry below it */
    CHECK_EQ_U64(d9m_symtab_lookup(&t, 0x2080, out, 8), 1);
    CHECK_EQ_U64(out[0]->name, 5);
    CHECK_EQ_U64(d9m_symtab_lookup(&t, 0x2100, out, 8), 0);
    /* mappings: repeats dropped, sorted, the closest start below that holds the address */
    CHECK(d9m_symtab_add_mapping(&t, 0x9000, 0xa000, 0, 7, 0) == 0);
    CHECK(d9m_symtab_add_mapping(&t, 0x8000, 0x10000, 0x1000, 6, 0) == 0);
    CHECK(d9m_symtab_add_mapping(&t, 0x9000, 0xa000, 0, 7, 0) == 0);
    CHECK(d9m_symtab_add_mapping(&t, 0x9000, 0x9000, 0, 8, 0) == 0); /* empty */
    uint32_t n;
    const d9m_mapping *maps = d9m_symtab_mappings(&t, &n);
    CHECK_EQ_U64(n, 2);
    CHECK_EQ_U64(maps[0].path, 6);
    CHECK_EQ_U64(d9m_symtab_mapping_of(&t, 0x9800), 1);
    CHECK_EQ_U64(d9m_symtab_mapping_of(&t, 0xb000), 0); /* past the inner one: the outer */
    CHECK_EQ_U64(d9m_symtab_mapping_of(&t, 0x7000), D9M_NONE);
    d9m_symtab_free(&t);
}

int main(void) {
    test_pairing();
    test_wake_link();
    test_symtab();
    return d9t_summary("test_model");
}
