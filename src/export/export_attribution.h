/* Where each poll's time went (model/attribution.h) in the export model: the same definition
 * analyze uses, computed once the model is finished (its polls paired and clipped, its stacks
 * symbolized), for the exports' poll arguments and off-CPU causes. */
#ifndef D9_EXPORT_ATTRIBUTION_H
#define D9_EXPORT_ATTRIBUTION_H

#include <stddef.h>
#include <stdint.h>

#include "export/export_model.h"
#include "model/attribution.h"

/* A SchedSwitchEvent as read. */
typedef struct d9_xswitch {
    uint64_t ts, worker_id;
    uint64_t seq; /* arrival order: ties in time keep it */
    uint32_t tid;
    bool out, preempted;
} d9_xswitch;

/* Fill m->poll_parts, m->part_names and m->sample_cause from the switch records (sorted here),
 * the trace's coverage and the polls' exact CPU times (PollCpuEvent). Nothing when the trace
 * has no switch records at all and no poll's CPU time (its polls would be all unknown: the
 * exports then carry no parts). 0, or -1 when out of memory. */
int d9_xattribute(d9_xmodel *m, d9_xswitch *sw, size_t n, const d9m_coverage *cov);

#endif
