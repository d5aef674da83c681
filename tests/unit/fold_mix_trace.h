/* The generated segment of dial9 fold's counted test (test_fold_instructions) and the decoder's
 * (test_decoder_instructions): 4 workers, 20 spawn locations, per round a wake and a poll,
 * every 2nd round a park and unpark around a switch-out and in, every 4th a task spawned and
 * one terminated, every 64th a CPU sample and an off-CPU sample (about the mix of a recorded
 * executor run). The same bytes every run. */
#ifndef D9_TESTS_FOLD_MIX_TRACE_H
#define D9_TESTS_FOLD_MIX_TRACE_H

#include <stdio.h>
#include <stdlib.h>

#include "test_analysis_builder.h"

static const char *const d9t_fold_mix_locs[] = {
    "src/api/handler.rs:10",   "src/api/handler.rs:42",  "src/db/pool.rs:88",      "src/db/query.rs:12",
    "src/cache/lru.rs:301",    "src/net/conn.rs:77",     "src/net/tls.rs:19",      "src/rpc/client.rs:230",
    "src/rpc/server.rs:91",    "src/auth/token.rs:55",   "src/jobs/queue.rs:140",  "src/jobs/worker.rs:33",
    "src/metrics/push.rs:8",   "src/log/ship.rs:64",     "src/http/body.rs:210",   "src/http/router.rs:17",
    "src/store/s3.rs:402",     "src/store/local.rs:5",   "src/timer/wheel.rs:120", "src/main.rs:3",
};

/* One segment of `rounds` rounds into path; its event count in *events. */
static inline int d9t_fold_mix_write(const char *path, int rounds, uint64_t *events) {
    tb t = {0};
    uint64_t n = 0;
    tb_stream_dial9_parks(&t);
    uint64_t ts = 1000000000000ull;
    const char *meta[] = {"service", "foldbench", "host", "gen", "boot_id", "b-1", "run_id", "r-1",
                          "source.off_cpu", "active: perf switch records", NULL};
    tb_metadata(&t, ts, meta);
    d9_enc_event(&t.b, &t.st, D9_SCH_CLOCK_SYNC, ts);
    d9_put_varint(&t.b, 1796558400000000000ull); /* 2026-12-06T12:00:00Z */
    n += 2;
    uint32_t locs[20];
    for (int i = 0; i < 20; i++) locs[i] = tb_string(&t, d9t_fold_mix_locs[i]);
    uint64_t stack_addrs[2][4] = {{0xffffffff81000000ull, 0xffffffff81001000ull, 0x7f0000001000ull, 0x401000ull},
                                  {0x7f0000003000ull, 0x7f0000002000ull, 0x401100ull, 0x401000ull}};
    uint32_t stacks[2] = {tb_stack(&t, stack_addrs[0], 4), tb_stack(&t, stack_addrs[1], 4)};
    uint64_t task = 1;
    for (int r = 0; r < rounds; r++) {
        uint64_t w = (uint64_t)r % 4;
        uint32_t tid = 100 + (uint32_t)w;
        ts += 1500 + (uint64_t)(r * 7919 % 3000);
        if (r % 4 == 0) {
            tb_spawn(&t, ts, task + 64, locs[r % 20]);
            tb_terminate(&t, ts + 10, task);
            n += 2;
        }
        tb_wake(&t, ts + 20, task, task + 1, (uint8_t)w);
        uint64_t dur = 2000 + (uint64_t)(r * 104729 % 40000);
        tb_poll(&t, ts + 100, dur, w, 0, task + (uint64_t)(r % 64), locs[(r * 7) % 20]);
        n += 3;
        ts += 100 + dur;
        if (r % 2 == 0) {
            tb_park(&t, ts + 50, w, 1000 + (uint64_t)r, tid);
            if (r % 64 == 0) {
                tb_sample(&t, ts + 60, w, tid, 1, stacks[1]);
                tb_sample(&t, ts + 61, w, tid, 0, stacks[0]);
                n += 2;
            }
            tb_switch(&t, ts + 70, tid, w, true, r % 6 == 0);
            tb_switch(&t, ts + 900, tid, w, false, false);
            tb_unpark(&t, ts + 950, w, 1000 + (uint64_t)r, 30 + (uint64_t)(r % 500), tid);
            n += 4;
            ts += 1000;
        }
        task++;
    }
    tb_symbol(&t, 0x401000, 0x100, "main", 0, "src/main.rs", 1);
    tb_symbol(&t, 0x7f0000001000ull, 0x100, "pthread_mutex_lock", 0, "", 0);
    n += 2;
    *events = n;
    return tb_write_file(&t, path);
}

#endif
