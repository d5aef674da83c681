/* The side table: put / get / take, roles, a bounded capacity that refuses inserts when full
 * and recovers when emptied (no tombstones), purge by loop, and consistency under concurrent
 * writers and lock-free readers (a reader never sees one key's callback with another key's
 * location: the seqlock retries). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "check.h"
#include "object_table.h"

#define CAP 4096

/* Fake "callbacks" and "locations": values derived from the key, checkable by readers. */
static d9a_fn fn_of(uintptr_t key, unsigned role) { return (d9a_fn)(key * 16 + role + 1); }
static const d9_loc *loc_of(uintptr_t key, unsigned role) {
    return (const d9_loc *)(key * 32 + role + 7);
}

static void basics(void) {
    int a = 0, b = 0, loop = 0;
    d9a_object o = {.loop = &loop, .arg = &b, .flags = 5};
    o.fn[0] = fn_of((uintptr_t)&a, 0);
    o.loc[0] = loc_of((uintptr_t)&a, 0);
    CHECK(d9a_table_put(&a, &o, NULL) == 1);
    CHECK(d9a_table_contains(&a));
    CHECK(!d9a_table_contains(&b));
    d9a_fn fn;
    const d9_loc *loc;
    uint64_t task_a = o.task, task;
    CHECK(task_a != 0); /* a new entry gets a new task id */
    CHECK(d9a_table_callback(&a, 0, &fn, &loc, &task) && fn == o.fn[0] && loc == o.loc[0] &&
          task == task_a);
    CHECK(d9a_table_callback(&a, 2, &fn, &loc, &task) && fn == NULL);
    CHECK(!d9a_table_callback(&b, 0, &fn, &loc, &task));
    CHECK_EQ_U64(d9a_table_task(&a), task_a);
    CHECK_EQ_U64(d9a_table_task(&b), 0);

    CHECK(d9a_table_set_callback(&a, &loop, 2, fn_of(9, 2), loc_of(9, 2)) == 0);
    d9a_object got;
    CHECK(d9a_table_get(&a, &got) && got.fn[2] == fn_of(9, 2) && got.fn[0] == o.fn[0] &&
          got.arg == &b && got.flags == 5 && got.loop == &loop && got.task == task_a);
    task = 0;
    CHECK(d9a_table_set_callback_task(&b, &loop, 1, fn_of(1, 1), NULL, &task) == 1);
    CHECK(task != 0 && task != task_a);

    d9a_object old;
    o.flags = 6;
    o.task = 0; /* replacing with task 0 keeps the entry's task */
    CHECK(d9a_table_put(&a, &o, &old) == 0 && old.flags == 5 && o.task == task_a);
    o.task = task_a + 1000; /* an explicit task replaces it */
    CHECK(d9a_table_put(&a, &o, NULL) == 0 && d9a_table_task(&a) == task_a + 1000);
    CHECK(d9a_table_take(&a, &got) && got.flags == 6);
    CHECK(!d9a_table_take(&a, NULL));
    CHECK(!d9a_table_contains(&a));

    /* purge by loop */
    int other = 0;
    d9a_object p = {.loop = &other};
    static int keys[100];
    for (int i = 0; i < 100; i++) CHECK(d9a_table_put(&keys[i], i % 2 ? &p : &o, NULL) == 1);
    size_t purged = d9a_table_take_loop(&loop, NULL, NULL);
    CHECK_EQ_U64(purged, 51); /* 50 of keys + &b */
    for (int i = 0; i < 100; i++) CHECK(d9a_table_contains(&keys[i]) == (i % 2 == 1));
    CHECK_EQ_U64(d9a_table_take_loop(&other, NULL, NULL), 50);
    d9a_table_stats st;
    d9a_table_get_stats(&st);
    CHECK_EQ_U64(st.live, 0);
}

static void capacity(void) {
    d9a_table_stats st;
    d9a_table_get_stats(&st);
    CHECK_EQ_U64(st.capacity, CAP);
    char *keys = calloc(CAP * 2, 1);
    d9a_object o = {0};
    size_t stored = 0, refused = 0;
    for (size_t i = 0; i < CAP * 2; i++) {
        int rc = d9a_table_put(keys + i, &o, NULL);
        if (rc == 1) stored++;
        else refused++;
    }
    /* shards fill unevenly: somewhat less than the capacity fits before one is full */
    CHECK(stored <= CAP && stored > CAP / 2 && refused > 0);
    d9a_table_get_stats(&st);
    CHECK(st.rejected == refused && st.live == stored);
    for (size_t i = 0; i < CAP * 2; i++) d9a_table_take(keys + i, NULL);
    d9a_table_get_stats(&st);
    CHECK_EQ_U64(st.live, 0);
    /* heavy churn afterwards, 100 live objects at a time over twice the capacity of
     * addresses: every insert succeeds (deletions leave no tombstones to fill the table) */
    size_t failed = 0;
    for (size_t round = 0; round < 300000; round++) {
        if (d9a_table_put(keys + (round * 7919) % (CAP * 2), &o, NULL) != 1) failed++;
        if (round >= 100) d9a_table_take(keys + ((round - 100) * 7919) % (CAP * 2), NULL);
    }
    CHECK_EQ_U64(failed, 0);
    for (size_t i = 0; i < CAP * 2; i++) d9a_table_take(keys + i, NULL);
    free(keys);
}

#define WRITERS 3
#define READERS 2
#define KEYS_PER_WRITER 300

static char g_keys[WRITERS][KEYS_PER_WRITER];
static atomic_int g_stop;
static atomic_long g_torn, g_reads, g_found;

static void *writer(void *arg) {
    char *keys = arg;
    for (int round = 0; round < 400; round++) {
        for (int i = 0; i < KEYS_PER_WRITER; i++) {
            uintptr_t k = (uintptr_t)&keys[i];
            d9a_object o = {0};
            for (unsigned r = 0; r < D9A_ROLES; r++) {
                o.fn[r] = fn_of(k, r);
                o.loc[r] = loc_of(k, r);
            }
            d9a_table_put(&keys[i], &o, NULL);
        }
        for (int i = 0; i < KEYS_PER_WRITER; i++) {
            d9a_fn fn;
            const d9_loc *loc;
            uintptr_t k = (uintptr_t)&keys[i];
            /* its own keys are always there until it takes them */
            uint64_t task;
            if (!d9a_table_callback(&keys[i], 1, &fn, &loc, &task) || fn != fn_of(k, 1))
                atomic_fetch_add(&g_torn, 1);
        }
        for (int i = 0; i < KEYS_PER_WRITER; i++) d9a_table_take(&keys[i], NULL);
    }
    return NULL;
}

static void *reader(void *arg) {
    unsigned seed = (unsigned)(uintptr_t)arg;
    while (!atomic_load(&g_stop)) {
        int w = rand_r(&seed) % WRITERS, i = rand_r(&seed) % KEYS_PER_WRITER;
        unsigned role = (unsigned)rand_r(&seed) % D9A_ROLES;
        uintptr_t k = (uintptr_t)&g_keys[w][i];
        d9a_fn fn;
        const d9_loc *loc;
        atomic_fetch_add(&g_reads, 1);
        uint64_t task;
        if (d9a_table_callback(&g_keys[w][i], role, &fn, &loc, &task)) {
            atomic_fetch_add(&g_found, 1);
            if (fn != fn_of(k, role) || loc != loc_of(k, role)) atomic_fetch_add(&g_torn, 1);
        }
        d9a_object o;
        if (d9a_table_get(&g_keys[w][i], &o))
            for (unsigned r = 0; r < D9A_ROLES; r++)
                if (o.fn[r] != fn_of(k, r) || o.loc[r] != loc_of(k, r))
                    atomic_fetch_add(&g_torn, 1);
    }
    return NULL;
}

static void concurrent(void) {
    pthread_t w[WRITERS], r[READERS];
    for (int i = 0; i < READERS; i++)
        pthread_create(&r[i], NULL, reader, (void *)(uintptr_t)(i + 1));
    for (int i = 0; i < WRITERS; i++) pthread_create(&w[i], NULL, writer, g_keys[i]);
    for (int i = 0; i < WRITERS; i++) pthread_join(w[i], NULL);
    atomic_store(&g_stop, 1);
    for (int i = 0; i < READERS; i++) pthread_join(r[i], NULL);
    CHECK_EQ_U64(atomic_load(&g_torn), 0);
    CHECK(atomic_load(&g_reads) > 0);
    printf("concurrent: %ld reads, %ld found\n", atomic_load(&g_reads), atomic_load(&g_found));
    d9a_table_stats st;
    d9a_table_get_stats(&st);
    CHECK_EQ_U64(st.live, 0);
}

int main(void) {
    setenv("DIAL9_ADAPTER_MAX_OBJECTS", "4096", 1); /* read at the table's first use */
    basics();
    capacity();
    concurrent();
    return d9t_summary("test_mt_adapter_object_table");
}
