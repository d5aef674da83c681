/* A span's poll part by cause in the export model (export_spans.c over export_attribution.c),
 * on the hand-built trace of attribution_span_trace.h: every span's parts equal those analyze
 * reports for its name (one definition, two readers), Perfetto span slices carry the nonzero
 * ones as poll_<part>_ns arguments, and a trace without switch records carries none. */
#include <stdio.h>

#include "attribution_span_trace.h"
#include "check.h"
#include "export/export.h"
#include "export_model_of.h"

static char *perfetto_of(const d9_xmodel *m, size_t *len) {
    char *buf = NULL;
    FILE *out = open_memstream(&buf, len);
    char err[256];
    d9_xopts o;
    d9_xopts_init(&o);
    CHECK(out && d9_export_write(m, D9_XF_PERFETTO, &o, out, err, sizeof err) == 0);
    if (out) fclose(out);
    return buf;
}

static void test_same_as_analyze(void) {
    tb t = {0};
    attribution_span_trace(&t, true);
    d9a_analysis *a;
    const d9a_report *r = tb_analyze(&a, &t, NULL);
    d9_xmodel *m = d9t_xmodel_of(&t.b, NULL);
    CHECK(r != NULL && m != NULL && m->poll_parts != NULL);
    if (r && m) {
        CHECK_EQ_U64(m->span_count, 4);
        size_t matched = 0;
        for (size_t i = 0; i < m->span_count; i++) {
            const d9_xspan *s = &m->spans[i];
            const char *name = d9_xm_str(m, s->name);
            for (size_t k = 0; k < r->nspans; k++) {
                if (strcmp(r->spans[k].name, name) != 0) continue;
                matched++;
                CHECK_EQ_U64(s->parts.poll_ns, r->spans[k].poll_ns);
                CHECK_EQ_U64(s->parts.unknown_ns, r->spans[k].unknown_ns);
                for (int p = 0; p < D9M_PARTS; p++)
                    if (s->poll_parts.ns[p] != r->spans[k].poll_parts.ns[p]) {
                        fprintf(stderr, "%s %s: export %llu, analyze %llu\n", name, d9m_part_names[p],
                                (unsigned long long)s->poll_parts.ns[p],
                                (unsigned long long)r->spans[k].poll_parts.ns[p]);
                        CHECK(false);
                    }
            }
            CHECK_EQ_U64(d9m_parts_total(&s->poll_parts), s->parts.poll_ns);
        }
        CHECK_EQ_U64(matched, 4);
        size_t len = 0;
        char *pf = perfetto_of(m, &len);
        CHECK(pf && memmem(pf, len, "poll_lock_ns", 12) != NULL);
        CHECK(pf && memmem(pf, len, "poll_sleep_ns", 13) != NULL);
        free(pf);
    }
    d9_xmodel_free(m);
    d9a_free(a);
    d9_buf_free(&t.b);
}

static void test_no_switch_records(void) {
    tb t = {0};
    attribution_span_trace(&t, false);
    d9_xmodel *m = d9t_xmodel_of(&t.b, NULL);
    CHECK(m != NULL && m->poll_parts == NULL);
    if (m) {
        CHECK_EQ_U64(m->span_count, 4);
        size_t len = 0;
        char *pf = perfetto_of(m, &len);
        CHECK(pf && memmem(pf, len, "poll_on_cpu_ns", 14) == NULL);
        free(pf);
    }
    d9_xmodel_free(m);
    d9_buf_free(&t.b);
}

int main(void) {
    test_same_as_analyze();
    test_no_switch_records();
    return d9t_summary("export_span_attribution");
}
