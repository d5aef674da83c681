/* pq_grow (parquet/pq_buf.h): the writer's buffers keep their bytes as they grow, by realloc
 * below PQ_MAPPED_MIN, across it (copied once into a mapping) and past it (mremap), and a
 * pq_buf of either kind is freed by pq_buf_free (a mapping freed by free(), or a heap block by
 * munmap, would crash or leak under the sanitizers). */
#include "check.h"
#include "parquet/pq_buf.h"

static uint8_t byte_at(size_t i) { return (uint8_t)(i * 2654435761u >> 13); }

static void test_grow_keeps_bytes(void) {
    uint8_t *p = NULL;
    size_t cap = 0, failures = 0;
    for (size_t next = 100; next <= 16 * PQ_MAPPED_MIN; next = next * 3 / 2 + 7) {
        uint8_t *q = pq_grow(p, cap, next);
        CHECK(q != NULL);
        if (!q) break;
        for (size_t i = 0; i < cap; i++) failures += q[i] != byte_at(i);
        for (size_t i = cap; i < next; i++) q[i] = byte_at(i);
        p = q;
        cap = next;
    }
    CHECK_EQ_U64(failures, 0);
    CHECK(cap >= PQ_MAPPED_MIN);
    pq_grown_free(p, cap);
    pq_grown_free(NULL, 0);
}

static void test_buf_across_the_threshold(void) {
    pq_buf small = {0}, large = {0};
    pq_buf_le32(&small, 7);
    for (size_t i = 0; i < 3 * PQ_MAPPED_MIN; i++) pq_buf_byte(&large, byte_at(i));
    CHECK(!small.oom && !large.oom);
    CHECK(small.cap < PQ_MAPPED_MIN && large.cap >= PQ_MAPPED_MIN);
    size_t failures = 0;
    for (size_t i = 0; i < large.len; i++) failures += large.p[i] != byte_at(i);
    CHECK_EQ_U64(failures, 0);
    pq_buf_free(&small);
    pq_buf_free(&large);
    CHECK(large.p == NULL && large.cap == 0);
}

int main(void) {
    test_grow_keeps_bytes();
    test_buf_across_the_threshold();
    return d9t_summary("parquet_grow");
}
