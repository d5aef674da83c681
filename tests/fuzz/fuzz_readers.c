/* libFuzzer target for what reads a trace after the decoder: the analysis behind `dial9
 * analyze` and `dial9 check` (its report, in JSON) and the export model behind `dial9 export`
 * (every format, CPU and off-CPU stacks, by location or not). A trace from outside is any
 * sequence of well-formed frames: schemas with the known names but other fields, pool ids
 * used before, after or without their definition, StackOriginEvents for stacks no sample uses,
 * timestamps anywhere. None of it may crash, hang or leak; what is wrong is reported.
 * Decoding itself is fuzz_decoder's. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/report_json.h"
#include "export/export.h"
#include "export/export_model.h"
#include "format/decoder.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *g_null;

static void analyze(const uint8_t *data, size_t size, const d9_dec_options *opt) {
    d9_decoder *d = d9_dec_open_mem(data, size, opt, NULL, 0);
    if (!d) return;
    d9a_options aopt;
    d9a_options_init(&aopt);
    d9a_analysis *a = d9a_new(&aopt);
    if (!a) {
        d9_dec_close(d);
        return;
    }
    d9a_feeder feeder = {.a = a};
    d9_event ev;
    while (d9_dec_next(d, &ev) > 0)
        if (d9a_feeder_event(&feeder, &ev, d, 0) != 0) break;
    d9_dec_close(d);
    const d9a_report *r = d9a_finish(a);
    if (r && !r->window_error) d9a_report_write_json(g_null, r, &aopt, NULL, 0);
    d9a_free(a);
}

static void export_all(const uint8_t *data, size_t size, const d9_dec_options *opt, uint8_t choice) {
    d9_decoder *d = d9_dec_open_mem(data, size, opt, NULL, 0);
    if (!d) return;
    d9_xmodel *m = d9_xmodel_new();
    if (!m) {
        d9_dec_close(d);
        return;
    }
    d9_event ev;
    while (d9_dec_next(d, &ev) > 0)
        if (d9_xmodel_add(m, &ev) != 0) break;
    d9_dec_close(d);
    char err[256];
    if (d9_xmodel_finish(m, NULL, err, sizeof err) == 0) {
        d9_xopts o;
        d9_xopts_init(&o);
        o.stacks = 1 + choice % 3;          /* CPU, off-CPU, all */
        o.by_location = (choice >> 2) & 1;
        o.speedscope_polls = (choice >> 3) & 1;
        o.max_events = 100000;
        static const d9_xformat formats[] = {D9_XF_PERFETTO, D9_XF_CHROME, D9_XF_FOLDED, D9_XF_PPROF,
                                             D9_XF_SPEEDSCOPE};
        for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
            (void)d9_export_write(m, formats[i], &o, g_null, err, sizeof err);
    }
    d9_xmodel_free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!g_null) g_null = fopen("/dev/null", "w");
    if (!g_null) return 0;
    d9_dec_options opt; /* small limits so that absurd lengths hit them quickly */
    d9_dec_options_init(&opt);
    opt.max_frame_bytes = 1 << 20;
    opt.max_pool_bytes = 8 << 20;
    opt.max_schema_bytes = 4 << 20;
    analyze(data, size, &opt);
    export_all(data, size, &opt, size ? data[size - 1] : 0);
    return 0;
}
