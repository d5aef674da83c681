/* Decoder throughput on small events (the common case: PollStart/PollEnd pairs), decoded from
 * memory. Prints M events/s of CPU time; the target for an optimized build is >= 30 M/s on one
 * core. The check itself is only a loose floor, so sanitizer and debug builds pass too. */
#include <time.h>

#include "check.h"
#include "format/decoder.h"
#include "format/encoder.h"
#include "format/schemas.h"

static double cpu_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(void) {
    enum { N = 2000000 };
    d9_buf b;
    d9_buf_init(&b);
    d9_stream_state ss;
    d9_enc_header(&b, &ss);
    d9_enc_schema(&b, D9_SCH_POLL_START, &d9_builtin_schemas[D9_SCH_POLL_START]);
    d9_enc_schema(&b, D9_SCH_POLL_END, &d9_builtin_schemas[D9_SCH_POLL_END]);
    d9_pool_frame pf;
    d9_enc_string_pool_begin(&b, &pf);
    d9_enc_string_pool_entry(&b, &pf, 1, "src/server.c:120", 16);
    d9_enc_pool_end(&b, &pf);
    uint64_t ts = 1000000000;
    for (uint32_t i = 0; i < N; i += 2) {
        ts += 150 + i % 64;
        d9_enc_event(&b, &ss, D9_SCH_POLL_START, ts);
        d9_put_varint(&b, i & 3);
        d9_put_u8(&b, 2);
        d9_put_varint(&b, i & 1023);
        d9_put_u32(&b, 1);
        ts += 900;
        d9_enc_event(&b, &ss, D9_SCH_POLL_END, ts);
        d9_put_varint(&b, i & 3);
    }
    CHECK(!b.failed);

    double best = 0;
    for (int rep = 0; rep < 3; rep++) {
        double t0 = cpu_seconds();
        d9_decoder *d = d9_dec_open_mem(b.data, b.len, NULL, NULL, 0);
        d9_event ev;
        uint64_t n = 0, sum = 0;
        while (d9_dec_next(d, &ev) > 0) {
            sum += ev.values[0].u;
            n++;
        }
        double dt = cpu_seconds() - t0;
        CHECK_EQ_U64(n, N);
        CHECK(d9_dec_state(d) == D9_DEC_END);
        CHECK(sum > 0);
        d9_dec_close(d);
        double rate = (double)n / (dt > 0 ? dt : 1e-9);
        if (rate > best) best = rate;
    }
    printf("decoder: %.1f M events/s (%.1f ns/event, %.2f bytes/event, best of 3, CPU time)\n",
           best / 1e6, 1e9 / best, (double)b.len / N);
    CHECK(best > 1e6);
    d9_buf_free(&b);
    return d9t_summary("test_decoder_speed");
}
