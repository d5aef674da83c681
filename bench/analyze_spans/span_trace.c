/* d9_bench_span_trace DIR SPANS [nospans]: records into DIR SPANS rounds of
 *   span begin, poll, wake, poll, span end   (with "nospans": the same without the span marks)
 * on one worker: two polls per span, every poll inside one, as a server whose requests each take
 * two callbacks. Flushes every 4096 rounds so that nothing is dropped. For bench/analyze_spans/run.sh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dial9/dial9.h"

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: d9_bench_span_trace DIR SPANS [nospans]\n");
        return 2;
    }
    long rounds = atol(argv[2]);
    int spans = !(argc > 3 && strcmp(argv[3], "nospans") == 0);
    d9_config cfg;
    d9_config_init(&cfg);
    cfg.trace_dir = argv[1];
    if (d9_start(&cfg) != 0) {
        fprintf(stderr, "d9_start failed\n");
        return 1;
    }
    d9_worker_begin("bench", 0);
    const d9_loc *name = D9_SPAN_NAME("request");
    for (long i = 0; i < rounds; i++) {
        uint64_t task = 1 + (uint64_t)(i % 64);
        if (spans) d9_span_begin(name, (uint64_t)i);
        d9_poll_begin(task, D9_HERE);
        d9_wake(task);
        d9_poll_end();
        d9_poll_begin(task, D9_HERE);
        if (spans) d9_span_end(name, (uint64_t)i);
        d9_poll_end();
        if (i % 4096 == 4095) d9_flush();
    }
    d9_worker_end();
    d9_stop();
    return 0;
}
