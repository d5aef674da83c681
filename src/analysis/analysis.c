/* Lifecycle of an analysis: options, creation, feeding events, finishing, freeing. */
#include <stdlib.h>
#include <string.h>

#include "analysis/internal.h"

void d9a_options_init(d9a_options *opt) {
    memset(opt, 0, sizeof *opt);
    opt->top_n = 10;
    opt->window_records = 1u << 19;
    opt->long_poll_warn_ns = 10000000;
    opt->long_poll_crit_ns = 50000000;
    opt->sched_delay_warn_ns = 1000000;
    opt->sched_delay_crit_ns = 10000000;
    opt->wake_delay_warn_ns = 5000000;
    opt->wake_delay_crit_ns = 50000000;
}

d9a_analysis *d9a_new(const d9a_options *opt) {
    d9a_analysis *a = calloc(1, sizeof *a);
    if (!a) return NULL;
    if (opt) a->opt = *opt;
    else d9a_options_init(&a->opt);
    if (a->opt.window_records < 2) a->opt.window_records = 2;
    a->buf.window = a->opt.window_records;
    a->symtab.strings = &a->strings;
    a->free_task = D9A_NO_ID;
    a->win = (d9_time_window){0, UINT64_MAX};
    a->live_slot_ns = 10000000; /* 10 ms; doubles as the trace gets longer */
    d9m_heap_init(&a->heap);
    if (a->opt.trace_span_known && a->opt.trace_end_ts > a->opt.trace_start_ts)
        a->heap.mid_ts = a->opt.trace_start_ts + (a->opt.trace_end_ts - a->opt.trace_start_ts) / 2;
    size_t n = a->opt.top_n;
    if (d9a_topn_init(&a->long_polls, n, sizeof(long_poll_entry)) != 0 ||
        d9a_topn_init(&a->sched_top, n, sizeof(sched_entry)) != 0 ||
        d9a_topn_init(&a->wake_top, n, sizeof(wake_entry)) != 0 ||
        d9a_topn_init(&a->migr_top, n, sizeof(migr_entry)) != 0 ||
        d9a_topn_init(&a->queued_top, n, sizeof(queued_entry)) != 0) {
        d9a_free(a);
        return NULL;
    }
    return a;
}

const d9a_report *d9a_finish(d9a_analysis *a) {
    if (a->failed) return NULL;
    if (a->finished) return &a->report;
    a->finished = true;
    if (d9a_sweep_finish(a) != 0 || d9a_build_report(a) != 0 || d9a_add_red_flags(a) != 0) {
        a->failed = true;
        return NULL;
    }
    return &a->report;
}

void d9a_free(d9a_analysis *a) {
    if (!a) return;
    d9a_begin_file(a);
    d9_u64_map_free(&a->loc_cache);
    d9_u64_map_free(&a->stack_cache);
    d9_u64_set_free(&a->truncated_stacks);
    d9a_symtab_free(&a->symtab);
    d9a_strings_free(&a->strings);
    d9a_stacks_free(&a->stacks);
    free(a->drop_reason);
    free(a->drop_count);
    free(a->meta);
    d9_u64_map_free(&a->meta_by_key);
    d9a_coverage_free(&a->coverage);
    d9a_span_stats_free(&a->spans);
    d9m_coverage_free(&a->swcov);
    d9_u64_map_free(&a->attr_stacks);
    free(a->stack_cause);
    for (size_t i = 0; a->lp_stk && i < a->long_polls.cap; i++) free(a->lp_stk[i]);
    free(a->lp_stk);
    free(a->lp_stk_cap);
    d9a_upload_loss_free(&a->upload_loss);
    d9m_heap_free(&a->heap);
    for (size_t i = 0; i < a->workers_cap; i++) {
        if (!a->workers[i]) continue;
        d9a_hist_free(&a->workers[i]->sched_wait);
        free(a->workers[i]->at_stk);
        free(a->workers[i]);
    }
    free(a->workers);
    free(a->wlist);
    free(a->tasks);
    d9_u64_map_free(&a->task_index);
    free(a->tids);
    d9_u64_map_free(&a->tid_index);
    d9m_thread_workers_free(&a->thread_workers);
    for (uint32_t i = 0; i < a->locs_cap; i++) d9a_hist_free(&a->locs[i].polls);
    free(a->locs);
    free(a->stk);
    d9a_rec_buf_free(&a->buf);
    d9a_span_marks_free(&a->marks);
    d9a_hist_free(&a->polls);
    d9a_hist_free(&a->sched_wait);
    d9a_hist_free(&a->wake_delay);
    d9a_topn_free(&a->long_polls);
    d9a_topn_free(&a->sched_top);
    d9a_topn_free(&a->wake_top);
    d9a_topn_free(&a->migr_top);
    d9a_topn_free(&a->queued_top);
    d9_arena_free(&a->report_arena);
    free(a->views);
    free(a);
}

const char *d9a_severity_name(d9a_severity s) {
    switch (s) {
    case D9A_INFO: return "info";
    case D9A_WARNING: return "warning";
    case D9A_CRITICAL: return "critical";
    }
    return "?";
}
