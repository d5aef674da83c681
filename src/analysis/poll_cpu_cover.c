/* The long polls' off-CPU accounting count (poll_cpu_cover.h). */
#include "analysis/poll_cpu_cover.h"

#include <inttypes.h>

#include "common/json_writer.h"

void d9a_poll_cpu_cover_metadata(d9a_poll_cpu_cover *c, const char *key, size_t key_len, const char *val,
                                 size_t val_len) {
    d9m_poll_cpu_metadata(key, key_len, val, val_len, &c->stated_on, &c->min_ns);
}

void d9a_poll_cpu_cover_poll(d9a_poll_cpu_cover *c, const d9m_attr_poll *p, const d9a_poll_cpu_facts *f) {
    uint64_t min = c->min_ns ? c->min_ns : 1000000;
    uint64_t elapsed = p->end - p->start;
    if (elapsed <= min) return;
    c->polls++;
    if (p->inconsistent) return;
    uint64_t gaps = p->ngaps ? d9m_attr_gap_ns(p) : 0;
    uint64_t uncaptured = 0;
    if (f->event == D9M_POLL_CPU_NONE && c->stated_on && p->cpu_known) { /* the rule's presumption */
        c->no_switch++;
    } else if (f->event == D9M_POLL_CPU_EXACT) {
        c->by_event++;
        if (gaps) uncaptured = d9m_attr_uncaptured(p, elapsed, gaps);
    } else if (!gaps) {
        c->by_switches++;
    } else {
        if (f->event == D9M_POLL_CPU_NOT_EXACT) c->inexact++;
        return;
    }
    c->accounted++;
    bool none = p->off_total == 0 && uncaptured == 0;
    if (none || (f->longest_ns && f->longest_explained && f->longest_ns >= uncaptured)) c->with_stack++;
}

static double pct(uint64_t part, uint64_t whole) { return whole ? 100.0 * (double)part / (double)whole : 0; }

void d9a_poll_cpu_cover_text(const d9a_poll_cpu_cover *c, FILE *out) {
    if (!c->polls) return;
    uint64_t min_us = (c->min_ns ? c->min_ns : 1000000) / 1000;
    fprintf(out,
            "  coverage       off-CPU of polls over %" PRIu64 " us: %" PRIu64 " of %" PRIu64 " (%.1f%%) exact (%" PRIu64
            " by their CPU time, %" PRIu64 " by switch records, %" PRIu64 " without a switch%s), %" PRIu64
            " (%.1f%%) with a stack for their longest off-CPU interval\n",
            min_us, c->accounted, c->polls, pct(c->accounted, c->polls), c->by_event, c->by_switches, c->no_switch,
            c->stated_on ? "" : "; the recording did not state poll_cpu on", c->with_stack,
            pct(c->with_stack, c->polls));
}

void d9a_poll_cpu_cover_json(const d9a_poll_cpu_cover *c, d9_json *j) {
    d9_json_key(j, "poll_cpu");
    d9_json_object_begin(j);
    d9_json_key_bool(j, "stated_on", c->stated_on);
    d9_json_key_u64(j, "min_ns", c->min_ns ? c->min_ns : 1000000);
    d9_json_key_u64(j, "polls", c->polls);
    d9_json_key_u64(j, "accounted", c->accounted);
    d9_json_key_u64(j, "by_cpu_time", c->by_event);
    d9_json_key_u64(j, "by_switch_records", c->by_switches);
    d9_json_key_u64(j, "without_switch", c->no_switch);
    d9_json_key_u64(j, "not_exact", c->inexact);
    d9_json_key_u64(j, "with_stack", c->with_stack);
    d9_json_object_end(j);
}
