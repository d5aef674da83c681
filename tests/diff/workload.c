/* The recorded program of test_diff_recorded.sh (workload.h): `diff_workload DIR [ROUNDS]`
 * records ROUNDS rounds (default 300) of four handlers into a run under DIR. */
#include <stdio.h>
#include <stdlib.h>

#include "dial9/dial9.h"
#include "workload.h"

uint64_t workload_work(uint64_t state, unsigned iterations) {
    for (unsigned i = 0; i < iterations; i++) state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state;
}

static uint64_t handle_parse(uint64_t s) { return workload_work(s, 2000); }
static uint64_t handle_render(uint64_t s) { return workload_work(s, 3000); }
static uint64_t handle_log(uint64_t s) { return workload_work(s, 1000); }

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s TRACE_DIR [ROUNDS]\n", argv[0]);
        return 2;
    }
    int rounds = argc > 2 ? atoi(argv[2]) : 300;
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = argv[1];
    /* polls are what the test compares: the kernel sources stay off, so a busy machine costs
     * the run less */
    cfg.schedule_profile = false;
    cfg.task_dumps = false;
    cfg.symbolize = false;
    if (d9_start(&cfg) != 0) {
        fprintf(stderr, "diff_workload: d9_start: %s\n", d9_last_error());
        return 1;
    }
    static const char *const names[] = {"handle_parse", "handle_lookup", "handle_render", "handle_log"};
    uint64_t (*const handlers[])(uint64_t) = {handle_parse, handle_lookup, handle_render, handle_log};
    const d9_loc *locs[4];
    uint64_t tasks[4];
    d9_worker_begin("diff_workload", 0);
    for (int h = 0; h < 4; h++) {
        locs[h] = d9_loc_intern(names[h]);
        tasks[h] = d9_task_id_new();
        d9_task_spawn(tasks[h], locs[h]);
    }
    uint64_t state = 1;
    for (int r = 0; r < rounds; r++) {
        d9_unpark();
        for (int h = 0; h < 4; h++) {
            d9_poll_begin(tasks[h], locs[h]);
            state = handlers[h](state);
            d9_poll_end();
        }
        d9_park();
    }
    d9_worker_end();
    d9_stop();
    printf("%s\n%llu\n", d9_run_dir() ? d9_run_dir() : "", (unsigned long long)(state & 1));
    return 0;
}
