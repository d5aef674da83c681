/* The metadata's `sources` list names each active source once, however often a source is
 * noted again: the perf source restates its stacks' state once a second while their pacing
 * holds them, and each note used to append the name again (~86 k names a day, in every
 * segment's metadata). A name that is part of another ("stacks" in "switch_stacks") is its
 * own entry. */
#include "check.h"
#include "core/collector.h"
#include "core/run_metadata.h"
#include "trace_files_util.h"

#define HOOKS "polls,parks,wakes,tasks," /* what the hooks record: listed at open */

static const char *meta(d9_collector *c, const char *key) {
    const d9_run_metadata *m = d9_collector_metadata(c);
    for (int i = 0; i < m->count; i++)
        if (strcmp(m->keys[i], key) == 0) return m->vals[i];
    return "";
}

int main(void) {
    char *dir = d9t_mkdtemp("note-source");
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = dir;
    d9_collector_config cc = {.cfg = &cfg, .run_id = "note-source-run", .service = "t",
                              .clock_name = "monotonic", .schedstat_active = true};
    char err[256];
    d9_collector *c = d9_collector_open(&cc, err, sizeof err);
    CHECK(c != NULL);
    if (!c) return d9t_summary("collector_note_source");

    CHECK_STR(meta(c, "sources"), HOOKS "schedstat");
    d9_collector_note_source(c, "switch_stacks", true, "paced");
    for (int i = 0; i < 5; i++) d9_collector_note_source(c, "switch_stacks", true, "paused by pacing");
    CHECK_STR(meta(c, "sources"), HOOKS "schedstat,switch_stacks");
    CHECK_STR(meta(c, "source.switch_stacks"), "active: paused by pacing"); /* the latest note */
    d9_collector_note_source(c, "stacks", true, NULL);
    d9_collector_note_source(c, "schedstat", true, "again");
    d9_collector_note_source(c, "switch", true, NULL);
    CHECK_STR(meta(c, "sources"), HOOKS "schedstat,switch_stacks,stacks,switch");
    d9_collector_note_source(c, "cpu_profile", false, "disabled by configuration");
    CHECK_STR(meta(c, "sources"), HOOKS "schedstat,switch_stacks,stacks,switch");
    CHECK_STR(meta(c, "source.cpu_profile"), "inactive: disabled by configuration");

    d9_collector_close(c, NULL);
    d9t_rm_rf(dir);
    free(dir);
    return d9t_summary("collector_note_source");
}
