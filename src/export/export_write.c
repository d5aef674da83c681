/* d9_export_write: the format dispatch (see export.h). Kept apart from the helpers in
 * export.c so that a program using one writer links only that writer. */
#include "export/export.h"

int d9_export_write(const d9_xmodel *m, d9_xformat f, const d9_xopts *o, FILE *out, char *err,
                    size_t errlen) {
    if (m->build) {
        snprintf(err, errlen, "the export model was not finished");
        return D9_XWRITE_ERROR;
    }
    switch (f) {
    case D9_XF_PERFETTO: return d9_export_perfetto(m, o, out, err, errlen);
    case D9_XF_CHROME: return d9_export_chrome(m, o, out, err, errlen);
    case D9_XF_FOLDED: return d9_export_folded(m, o, out, err, errlen);
    case D9_XF_PPROF: return d9_export_pprof(m, o, out, err, errlen);
    case D9_XF_SPEEDSCOPE: return d9_export_speedscope(m, o, out, err, errlen);
    }
    snprintf(err, errlen, "unknown export format");
    return D9_XWRITE_ERROR;
}
