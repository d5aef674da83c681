/* src/common's containers: the u64 map (against a plain array as the reference, with many
 * removals, keys 0 and UINT64_MAX, iteration, clear), the u64 set built on it, and the arena
 * (alignment, stability of pointers across growth, the byte limit, reset and reuse, a zeroed
 * arena). */
#include <stdbool.h>
#include <stdint.h>

#include "check.h"
#include "test_rng.h"

#include "common/arena.h"
#include "common/u64_map.h"
#include "common/u64_set.h"

static d9t_rng rng = {D9T_RNG_SEED};

static void test_map_against_array(void) {
    enum { KEYS = 5000 };
    static uint64_t keys[KEYS];
    static bool present[KEYS];
    static uint64_t value[KEYS];
    d9_u64_map m = {0};
    /* few distinct keys times a prime: long probe runs, many duplicates */
    for (int i = 0; i < KEYS; i++) keys[i] = d9t_rng_next(&rng) % 100000 * 7919;
    keys[0] = 0;
    keys[1] = UINT64_MAX;
    bool ok = true;
    for (int round = 0; round < 60000 && ok; round++) {
        int i = (int)(d9t_rng_next(&rng) % KEYS);
        int owner = i; /* duplicates in keys[]: the first index owns a key */
        for (int j = 0; j < i; j++)
            if (keys[j] == keys[i]) {
                owner = j;
                break;
            }
        uint64_t r = d9t_rng_next(&rng) % 4;
        if (r == 0) {
            bool was = d9_u64_map_remove(&m, keys[owner]);
            if (was != present[owner]) ok = false;
            present[owner] = false;
        } else if (r == 1) { /* upsert keeps an existing value */
            uint64_t *v = d9_u64_map_upsert(&m, keys[owner], round);
            if (!v) ok = false;
            else if (present[owner] ? *v != value[owner] : *v != (uint64_t)round) ok = false;
            if (!present[owner]) value[owner] = (uint64_t)round;
            present[owner] = true;
        } else {
            if (d9_u64_map_put(&m, keys[owner], (uint64_t)round << 20 | (uint64_t)owner) != 0) ok = false;
            value[owner] = (uint64_t)round << 20 | (uint64_t)owner;
            present[owner] = true;
        }
    }
    CHECK(ok);
    size_t n = 0;
    for (int i = 0; i < KEYS; i++) {
        uint64_t *v = d9_u64_map_get(&m, keys[i]);
        bool owner = true;
        for (int j = 0; j < i && owner; j++) owner = keys[j] != keys[i];
        if (!owner) continue;
        if (present[i]) {
            n++;
            if (!v || *v != value[i]) ok = false;
        } else if (v) {
            ok = false;
        }
    }
    CHECK(ok);
    CHECK_EQ_U64(m.count, n);
    CHECK(m.count * 4 <= m.cap * 3); /* the load bound */
    /* iteration visits every entry once */
    size_t seen = 0;
    uint64_t k, v;
    for (size_t pos = 0; d9_u64_map_next(&m, &pos, &k, &v);) {
        uint64_t *w = d9_u64_map_get(&m, k);
        if (!w || *w != v) ok = false;
        seen++;
    }
    CHECK(ok);
    CHECK_EQ_U64(seen, n);
    size_t cap = m.cap;
    d9_u64_map_clear(&m);
    CHECK_EQ_U64(m.count, 0);
    CHECK_EQ_U64(m.cap, cap); /* clear keeps the memory */
    CHECK(d9_u64_map_get(&m, keys[2]) == NULL);
    CHECK(!d9_u64_map_remove(&m, keys[2]));
    size_t pos = 0;
    CHECK(!d9_u64_map_next(&m, &pos, &k, &v));
    d9_u64_map_free(&m);
    CHECK(m.cap == 0 && m.keys == NULL);
}

static void test_map_empty_and_sequential(void) {
    d9_u64_map m = {0};
    CHECK(d9_u64_map_get(&m, 0) == NULL);
    CHECK(!d9_u64_map_remove(&m, 0));
    size_t pos = 0;
    uint64_t k, v;
    CHECK(!d9_u64_map_next(&m, &pos, &k, &v));
    d9_u64_map_clear(&m); /* on a map that never allocated */
    /* sequential ids (task ids) and aligned addresses: what the callers store */
    bool ok = true;
    for (uint64_t i = 0; i < 100000; i++)
        if (d9_u64_map_put(&m, 0x7f0000000000ull + i * 16, i) != 0) ok = false;
    for (uint64_t i = 0; i < 100000; i++) {
        uint64_t *p = d9_u64_map_get(&m, 0x7f0000000000ull + i * 16);
        if (!p || *p != i) ok = false;
    }
    CHECK(ok);
    CHECK(d9_u64_map_get(&m, 0x7f0000000008ull) == NULL);
    for (uint64_t i = 0; i < 100000; i += 2) d9_u64_map_remove(&m, 0x7f0000000000ull + i * 16);
    CHECK_EQ_U64(m.count, 50000);
    for (uint64_t i = 0; i < 100000; i++)
        if ((d9_u64_map_get(&m, 0x7f0000000000ull + i * 16) != NULL) != (i % 2 == 1)) ok = false;
    CHECK(ok);
    d9_u64_map_free(&m);
}

static void test_set(void) {
    d9_u64_set s = {0};
    CHECK(d9_u64_set_sorted(&s) == NULL);
    CHECK(!d9_u64_set_has(&s, 5));
    CHECK(d9_u64_set_add(&s, 5) == 1);
    CHECK(d9_u64_set_add(&s, 5) == 0);
    CHECK(d9_u64_set_add(&s, UINT64_MAX) == 1);
    CHECK(d9_u64_set_add(&s, 0) == 1);
    CHECK(d9_u64_set_add(&s, 3) == 1);
    CHECK_EQ_U64(d9_u64_set_count(&s), 4);
    CHECK(d9_u64_set_has(&s, UINT64_MAX) && d9_u64_set_has(&s, 0) && !d9_u64_set_has(&s, 4));
    uint64_t *sorted = d9_u64_set_sorted(&s);
    CHECK(sorted && sorted[0] == 0 && sorted[1] == 3 && sorted[2] == 5 && sorted[3] == UINT64_MAX);
    free(sorted);
    uint64_t sum = 0, v;
    size_t n = 0;
    for (size_t pos = 0; d9_u64_set_next(&s, &pos, &v); n++) sum += v;
    CHECK_EQ_U64(n, 4);
    CHECK_EQ_U64(sum, 0 + 3 + 5 + UINT64_MAX);
    d9_u64_set_clear(&s);
    CHECK_EQ_U64(d9_u64_set_count(&s), 0);
    CHECK(!d9_u64_set_has(&s, 5));
    for (uint64_t i = 0; i < 1000; i++) d9_u64_set_add(&s, i * 3);
    CHECK_EQ_U64(d9_u64_set_count(&s), 1000);
    CHECK(d9_u64_set_has(&s, 999 * 3) && !d9_u64_set_has(&s, 1));
    d9_u64_set_free(&s);
}

static void test_arena(void) {
    d9_arena a;
    d9_arena_init(&a, 4096, 0);
    /* every alignment is honoured, and memory written stays intact while the arena grows */
    enum { N = 2000 };
    static unsigned char *ptr[N];
    static size_t len[N];
    bool aligned = true;
    for (int i = 0; i < N; i++) {
        size_t align = (size_t)1 << (d9t_rng_next(&rng) % 5); /* 1 .. 16 */
        len[i] = d9t_rng_next(&rng) % 300;
        ptr[i] = d9_arena_alloc(&a, len[i], align);
        if (!ptr[i] || ((uintptr_t)ptr[i] & (align - 1))) aligned = false;
        if (ptr[i]) memset(ptr[i], i & 0xff, len[i]);
    }
    CHECK(aligned);
    bool intact = true;
    for (int i = 0; i < N; i++)
        for (size_t j = 0; j < len[i]; j++)
            if (ptr[i][j] != (unsigned char)(i & 0xff)) intact = false;
    CHECK(intact);
    void *z1 = d9_arena_alloc(&a, 0, 1), *z2 = d9_arena_alloc(&a, 0, 1);
    CHECK(z1 && z2); /* n == 0 gives a valid pointer */
    char *s = d9_arena_strdup(&a, "abc\0def", 7);
    CHECK(s && memcmp(s, "abc\0def", 8) == 0);
    /* one allocation bigger than any chunk */
    unsigned char *big = d9_arena_alloc(&a, 1 << 20, 16);
    CHECK(big != NULL);
    if (big) memset(big, 1, 1 << 20);
    CHECK(d9_arena_alloc(&a, SIZE_MAX - 8, 8) == NULL); /* absurd sizes fail cleanly */
    /* reset and reuse: keep_chunks keeps the held bytes, otherwise only the first chunk stays */
    size_t held = a.held;
    d9_arena_reset(&a, true);
    CHECK_EQ_U64(a.held, held);
    CHECK_EQ_U64(a.used, 0);
    CHECK(d9_arena_alloc(&a, 100, 8) != NULL);
    d9_arena_reset(&a, false);
    CHECK(a.held < held);
    CHECK(d9_arena_alloc(&a, 100, 8) != NULL);
    d9_arena_free(&a);
    CHECK_EQ_U64(a.held, 0);

    /* the limit: refused cleanly past it, and what was given stays usable */
    d9_arena l;
    d9_arena_init(&l, 4096, 64 * 1024);
    size_t got = 0;
    void *p;
    while ((p = d9_arena_alloc(&l, 1000, 8)) != NULL && got < (1u << 20)) {
        memset(p, 7, 1000);
        got += 1000;
    }
    CHECK(p == NULL);
    CHECK(got > 0 && got <= 64 * 1024);
    CHECK(l.held <= 64 * 1024);
    CHECK(d9_arena_alloc(&l, 128 * 1024, 8) == NULL);
    d9_arena_free(&l);

    /* a zeroed arena works without init (the analysis embeds them in calloc'ed structs) */
    d9_arena zero = {0};
    char *q = d9_arena_alloc(&zero, 10, 1);
    CHECK(q != NULL);
    if (q) memcpy(q, "123456789", 10);
    char *r = d9_arena_alloc(&zero, 5 << 20, 16); /* bigger than the default chunk */
    CHECK(r != NULL && ((uintptr_t)r & 15) == 0);
    CHECK(q && strcmp(q, "123456789") == 0);
    d9_arena_free(&zero);
}

int main(void) {
    test_map_against_array();
    test_map_empty_and_sequential();
    test_set();
    test_arena();
    return d9t_summary("test_common_containers");
}
