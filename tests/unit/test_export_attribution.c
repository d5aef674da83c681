/* The per-poll attribution in the export model (export/export_attribution.h) on the hand-built
 * trace of attribution_trace.h: every poll's parts equal those analyze reports for its spawn
 * location (one poll each: one definition, two readers), Perfetto poll slices carry them as
 * arguments, folded --by-cause roots off-CPU stacks at their cause, and a trace without switch
 * records carries no parts (they would all be unknown). */
#include <stdio.h>

#include "attribution_trace.h"
#include "check.h"
#include "export/export.h"
#include "export_model_of.h"

static char *export_to_string(const d9_xmodel *m, d9_xformat f, const d9_xopts *o, size_t *len) {
    char *buf = NULL;
    FILE *out = open_memstream(&buf, len);
    char err[256];
    CHECK(out && d9_export_write(m, f, o, out, err, sizeof err) == 0);
    if (out) fclose(out);
    return buf;
}

static bool has_bytes(const char *buf, size_t len, const char *s) {
    return buf && memmem(buf, len, s, strlen(s)) != NULL;
}

static void test_same_parts_as_analyze(void) {
    tb t = {0};
    attribution_trace(&t, true);
    d9a_analysis *a;
    const d9a_report *r = tb_analyze(&a, &t, NULL);
    d9_xmodel *m = d9t_xmodel_of(&t.b, NULL);
    CHECK(r != NULL && m != NULL && m->poll_parts != NULL);
    if (r && m && m->poll_parts) {
        CHECK_EQ_U64(m->poll_count, 5);
        size_t matched = 0;
        for (size_t i = 0; i < m->poll_count; i++) {
            const char *name = d9_xm_str(m, m->polls[i].loc);
            for (size_t k = 0; k < r->nlocations; k++) {
                if (strcmp(r->locations[k].location, name) != 0) continue;
                matched++;
                for (int p = 0; p < D9M_PARTS; p++) {
                    if (m->poll_parts[i].ns[p] != r->locations[k].parts.ns[p])
                        fprintf(stderr, "%s %s: export %llu, analyze %llu\n", name, d9m_part_names[p],
                                (unsigned long long)m->poll_parts[i].ns[p],
                                (unsigned long long)r->locations[k].parts.ns[p]);
                    CHECK_EQ_U64(m->poll_parts[i].ns[p], r->locations[k].parts.ns[p]);
                }
            }
        }
        CHECK_EQ_U64(matched, 5);

        size_t len = 0;
        d9_xopts o;
        d9_xopts_init(&o);
        char *pf = export_to_string(m, D9_XF_PERFETTO, &o, &len);
        CHECK(has_bytes(pf, len, "lock_ns") && has_bytes(pf, len, "on_cpu_ns") &&
              has_bytes(pf, len, "unknown_ns"));
        free(pf);

        o.stacks = D9_XSTACKS_OFFCPU;
        o.by_cause = true;
        char *folded = export_to_string(m, D9_XF_FOLDED, &o, &len);
        CHECK(folded && strstr(folded, "[lock];handler;__lll_lock_wait;do_syscall_64;futex_wait_queue;__schedule 1\n"));
        CHECK(folded && strstr(folded, "[sleep];handler;clock_nanosleep;") != NULL);
        CHECK(folded && strstr(folded, "[io];handler;read;") != NULL);
        free(folded);
    }
    d9_xmodel_free(m);
    d9a_free(a);
    d9_buf_free(&t.b);
}

static void test_no_switch_records(void) {
    tb t = {0};
    attribution_trace(&t, false);
    d9_xmodel *m = d9t_xmodel_of(&t.b, NULL);
    CHECK(m != NULL);
    if (m) {
        CHECK(m->poll_parts == NULL);
        size_t len = 0;
        d9_xopts o;
        d9_xopts_init(&o);
        char *pf = export_to_string(m, D9_XF_PERFETTO, &o, &len);
        CHECK(pf && !has_bytes(pf, len, "on_cpu_ns"));
        free(pf);
    }
    d9_xmodel_free(m);
    d9_buf_free(&t.b);
}

int main(void) {
    test_same_parts_as_analyze();
    test_no_switch_records();
    return d9t_summary("export_attribution");
}
