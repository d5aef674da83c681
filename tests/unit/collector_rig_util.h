/* The rig the collector tests share: a collector driven by hand (no timing) on a fresh trace
 * directory, with one source the test writes itself. In steps, so that a test can set what it
 * needs between them: tc_rig_init (the directory and the config: set r->cfg's fields after it),
 * tc_rig_open (the collector opened and the source added, not started: set the collector's
 * fields, then tc_rig_start), tc_rig_close (the run directory kept in r->run_dir, the collector
 * closed), tc_rig_finish (the directory removed, or kept when a check failed). Header-only. */
#ifndef D9_TESTS_COLLECTOR_RIG_UTIL_H
#define D9_TESTS_COLLECTOR_RIG_UTIL_H

#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "core/collector.h"
#include "core/source.h"
#include "dial9/dial9.h"
#include "trace_files_util.h"

typedef struct tc_rig {
    char *dir; /* the trace directory (d9t_mkdtemp's, freed by tc_rig_finish) */
    d9_config cfg;
    d9_collector *c;
    char run_dir[4096]; /* the run's directory under dir, once closed */
} tc_rig;

static inline void tc_rig_init(tc_rig *r, const char *tag) {
    r->dir = d9t_mkdtemp(tag);
    d9_config_init(&r->cfg);
    r->cfg.trace_dir = r->dir;
    r->c = NULL;
    r->run_dir[0] = '\0';
}

/* The collector, opened as `service` with `src` (its ctx set by the caller) added; NULL, with a
 * failed check and the reason printed, when it cannot open. */
static inline d9_collector *tc_rig_open(tc_rig *r, const char *run_id, const char *service, d9_source *src) {
    d9_collector_config cc = {.cfg = &r->cfg, .run_id = run_id, .service = service, .clock_name = "monotonic"};
    char err[512];
    r->c = d9_collector_open(&cc, err, sizeof err);
    CHECK(r->c != NULL);
    if (!r->c) {
        printf("collector not opened: %s\n", err);
        return NULL;
    }
    CHECK(d9_collector_add_source(r->c, src));
    return r->c;
}

static inline void tc_rig_start(tc_rig *r) {
    char err[512];
    int rc = d9_collector_start(r->c, err, sizeof err);
    CHECK(rc == 0);
    if (rc != 0) printf("collector not started: %s\n", err);
}

static inline void tc_rig_close(tc_rig *r) {
    snprintf(r->run_dir, sizeof r->run_dir, "%s", d9_collector_run_dir(r->c));
    d9_collector_close(r->c, NULL);
    r->c = NULL;
}

/* The directory removed when every check passed, kept (and said) otherwise. */
static inline void tc_rig_finish(tc_rig *r) {
    if (!d9t_failed) d9t_rm_rf(r->dir);
    else printf("trace kept in %s\n", r->dir);
    free(r->dir);
    r->dir = NULL;
}

#endif
