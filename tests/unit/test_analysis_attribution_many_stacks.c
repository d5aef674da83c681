/* A poll blocked under 40 distinct stacks (every request a different call path into a lock or
 * a read): analyze splits its blocked time by cause exactly as the export does (one definition,
 * model/attribution.h), for its spawn location and for its entry among the longest polls.
 * analyze once kept 16 distinct stacks a poll and left the rest in blocked_other.
 *
 * Worker 0 (tid 100), one poll of 40 ms; in its ms i, blocked 100 .. 600 us under stack i:
 * a futex lock wait for even i, a pipe read for odd i, each below its own handler_i. */
#include <stdio.h>

#include "attribution_trace.h"
#include "check.h"
#include "export/export.h"
#include "export_model_of.h"

#define NSTACKS 40
#define U_HANDLERS 0x500000ull /* handler_i at U_HANDLERS + i * 0x100 */

static void many_stacks_trace(tb *t) {
    tb_stream(t);
    const char *meta[] = {"source.off_cpu", "active: perf switch records", NULL};
    tb_metadata(t, ATTR_T0, meta);
    tb_coverage(t, ATTR_T0, "full");
    uint32_t stacks[NSTACKS];
    for (uint32_t i = 0; i < NSTACKS; i++) {
        uint64_t frames[] = {K_SCHED, i % 2 ? K_PIPE : K_FUTEX, K_SYSCALL, i % 2 ? U_READ : U_LOCK,
                             U_HANDLERS + i * 0x100ull};
        stacks[i] = tb_stack(t, frames, 5);
    }
    tb_poll(t, ATTR_T0, NSTACKS * MS, 0, 0, 1, tb_string(t, "many.c:1"));
    for (uint32_t i = 0; i < NSTACKS; i++)
        blocked(t, ATTR_T0 + i * MS + 100 * US, ATTR_T0 + i * MS + 600 * US, stacks[i]);
    tb_symbol(t, K_SCHED, 0x100, "__schedule", 0, "", 0);
    tb_symbol(t, K_FUTEX, 0x100, "futex_wait_queue", 0, "", 0);
    tb_symbol(t, K_PIPE, 0x100, "pipe_read", 0, "", 0);
    tb_symbol(t, K_SYSCALL, 0x100, "do_syscall_64", 0, "", 0);
    tb_symbol(t, U_LOCK, 0x100, "__lll_lock_wait", 0, "", 0);
    tb_symbol(t, U_READ, 0x100, "read", 0, "", 0);
    for (uint32_t i = 0; i < NSTACKS; i++) {
        char name[32];
        snprintf(name, sizeof name, "handler_%u", i);
        tb_symbol(t, U_HANDLERS + i * 0x100ull, 0x100, name, 0, "app.c", 10 + i);
    }
}

static void check_split(const char *what, const d9m_parts *p) {
    /* 20 lock waits and 20 reads of 500 us; the other 20 ms on CPU */
    fprintf(stderr, "%s: lock %llu io %llu blocked_other %llu on_cpu %llu\n", what,
            (unsigned long long)p->ns[D9M_PART_LOCK], (unsigned long long)p->ns[D9M_PART_IO],
            (unsigned long long)p->ns[D9M_PART_BLOCKED_OTHER], (unsigned long long)p->ns[D9M_PART_ON_CPU]);
    CHECK_EQ_U64(p->ns[D9M_PART_LOCK], 10 * MS);
    CHECK_EQ_U64(p->ns[D9M_PART_IO], 10 * MS);
    CHECK_EQ_U64(p->ns[D9M_PART_BLOCKED_OTHER], 0);
    CHECK_EQ_U64(p->ns[D9M_PART_ON_CPU], 20 * MS);
    CHECK_EQ_U64(p->ns[D9M_PART_UNKNOWN], 0);
    CHECK_EQ_U64(d9m_parts_total(p), NSTACKS * MS);
}

static void forty_stacks(void) {
    tb t = {0};
    many_stacks_trace(&t);
    d9a_analysis *a;
    const d9a_report *r = tb_analyze(&a, &t, NULL);
    d9_xmodel *m = d9t_xmodel_of(&t.b, NULL);
    CHECK(r != NULL && m != NULL && m->poll_parts != NULL);
    if (r && m && m->poll_parts) {
        CHECK_EQ_U64(m->poll_count, 1);
        check_split("export", &m->poll_parts[0]);
        CHECK_EQ_U64(r->nlocations, 1);
        if (r->nlocations == 1) {
            check_split("analyze, its location", &r->locations[0].parts);
            for (int p = 0; p < D9M_PARTS; p++) CHECK_EQ_U64(r->locations[0].parts.ns[p], m->poll_parts[0].ns[p]);
        }
        CHECK_EQ_U64(r->nlong_polls, 1);
        if (r->nlong_polls == 1) check_split("analyze, its long poll", &r->long_polls[0].parts);
    }
    d9_xmodel_free(m);
    d9a_free(a);
    d9_buf_free(&t.b);
}

int main(void) {
    forty_stacks();
    return d9t_summary("analysis_attribution_many_stacks");
}
