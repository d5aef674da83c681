/* Context-switch records a source hands the collector come out as SchedSwitchEvents with their
 * fields and times exact, in time order with the thread's own records: the collector writes
 * them straight into the output (collector_merge.c: fast_switch, and inside a thread's run,
 * run_switch), past the stream's first one (the general path, which declares the schema).
 * Driven by hand: this thread records polls as a worker and its fake source hands switches of
 * it between them (in and out, preempted or not, a CPU or none, one past a 24-bit timestamp
 * delta, one of a thread that is not the recorder's: worker 255), over several drains, each
 * drain's in two runs (two CPUs' rings) for the batch's sort to merge. */
#include <inttypes.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "core/collector.h"
#include "collector_rig_util.h"
#include "core/source.h"
#include "dial9/dial9.h"
#include "test_source_util.h"
#include "trace_files_util.h"

#define STRANGER_TID 1 /* init: never one of ours */
#define MAX_SWITCHES 64

typedef struct fake {
    d9_source base;
    d9_src_event pending[MAX_SWITCHES], sent[MAX_SWITCHES];
    size_t count, sent_count;
} fake;

/* Handed over as the perf source does, one ring after the other: the even ones (one CPU's
 * ring, in time order), then the odd ones (another's), so the batch is sorted by the merge of
 * two runs. `sent` keeps them in time order, as they must come out. */
static void fake_collect(d9_source *src, d9_src_batch *out) {
    fake *f = src->ctx;
    for (size_t ring = 0; ring < 2; ring++)
        for (size_t i = ring; i < f->count; i += 2) CHECK(d9_src_batch_add(out, &f->pending[i]));
    for (size_t i = 0; i < f->count; i++) f->sent[f->sent_count++] = f->pending[i];
    f->count = 0;
}

static void fake_close(d9_source *src) { (void)src; }

static void add_switch(fake *f, uint32_t tid, uint64_t ts, bool out, bool preempted, int32_t cpu) {
    d9_src_event e = {.ts_ns = ts, .kind = D9_SRC_SWITCH, .tid = tid, .cpu = cpu};
    e.sw.out = out;
    e.sw.preempted = preempted;
    if (f->count < MAX_SWITCHES && f->sent_count + f->count < MAX_SWITCHES) f->pending[f->count++] = e;
}

typedef struct seen {
    d9_src_event got[MAX_SWITCHES];
    uint64_t worker[MAX_SWITCHES];
    size_t switches;
    uint64_t last_ts, polls;
    bool out_of_order;
} seen;

static void on_event(const d9_event *ev, void *ctx) {
    seen *s = ctx;
    if (!ev->schema->has_timestamp) return;
    if (ev->ts_ns < s->last_ts) s->out_of_order = true;
    s->last_ts = ev->ts_ns;
    if (d9t_is(ev, "PollStartEvent")) s->polls++;
    if (!d9t_is(ev, "SchedSwitchEvent") || s->switches == MAX_SWITCHES) return;
    d9_src_event *e = &s->got[s->switches];
    e->ts_ns = ev->ts_ns;
    e->tid = (uint32_t)d9t_field_u(ev, "tid");
    e->sw.out = d9t_field_u(ev, "switch_out") != 0;
    e->sw.preempted = d9t_field_u(ev, "preempted") != 0;
    uint64_t cpu = d9t_field_u(ev, "cpu");
    e->cpu = cpu == UINT64_MAX ? -1 : (int32_t)cpu;
    s->worker[s->switches++] = d9t_field_u(ev, "worker_id");
}

int main(void) {
    static tc_rig rig;
    tc_rig_init(&rig, "switchrecords");
    static fake f = {.base = {.name = "fake", .collect = fake_collect, .close = fake_close}};
    f.base.ctx = &f;
    d9_collector *col = tc_rig_open(&rig, "run1", "switchrecords", &f.base);
    if (!col) return d9t_summary("collector_switch_records");
    tc_rig_start(&rig);
    uint32_t tid = (uint32_t)gettid(), worker = d9__worker_begin("switches", 0);
    static d9_loc where = {"test_collector_switch_records.c", "main", 1, 0};
    uint64_t start = tt_now();
    add_switch(&f, STRANGER_TID, start - 1000, true, false, 0); /* before the drain's list: not held */
    for (int drain = 0; drain < 3; drain++) {
        for (int i = 0; i < 6; i++) {
            add_switch(&f, tid, tt_now(), false, false, i == 1 ? -1 : i);
            d9__unpark_wake_ready(7);
            d9__poll_begin(7, &where);
            d9__poll_end_park();
            add_switch(&f, tid, tt_now(), true, i % 2 == 0, i == 2 ? 300 : 1);
            if (i == 3) { /* a delta past 24 bits (16.7 ms): a timestamp reset before it */
                struct timespec pause = {0, 20 * 1000 * 1000};
                nanosleep(&pause, NULL);
            }
        }
        d9_collector_drain(col);
    }
    d9__worker_end();
    tc_rig_close(&rig);

    static seen s;
    CHECK(d9t_decode_run(rig.run_dir, on_event, &s) == 0);
    printf("%zu switches handed over, %zu decoded, %" PRIu64 " polls\n", f.sent_count, s.switches, s.polls);
    CHECK_EQ_U64(s.switches, f.sent_count);
    CHECK_EQ_U64(s.polls, 18);
    CHECK(!s.out_of_order);
    for (size_t i = 0; i < s.switches && i < f.sent_count; i++) {
        const d9_src_event *want = &f.sent[i], *got = &s.got[i];
        bool same = got->ts_ns == want->ts_ns && got->tid == want->tid && got->sw.out == want->sw.out &&
                    got->sw.preempted == want->sw.preempted && got->cpu == want->cpu &&
                    s.worker[i] == (want->tid == tid ? worker : 255);
        if (!same)
            printf("switch %zu: want ts %" PRIu64 " tid %u out %d preempted %d cpu %d; got ts %" PRIu64
                   " tid %u out %d preempted %d cpu %d worker %" PRIu64 "\n",
                   i, want->ts_ns, want->tid, want->sw.out, want->sw.preempted, want->cpu, got->ts_ns, got->tid,
                   got->sw.out, got->sw.preempted, got->cpu, s.worker[i]);
        CHECK(same);
    }
    tc_rig_finish(&rig);
    return d9t_summary("collector_switch_records");
}
