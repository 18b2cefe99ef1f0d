/* intmap: the gateway's open-addressing map (winners of a sale, open connections). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>

#include "common/intmap.h"

/* Occupied slots, counted the way http.c's sweep walks them. */
static size_t occupied(const struct intmap *m)
{
    size_t n = 0;
    for (size_t i = 0; i < m->capacity; i++)
        if (m->slots[i].key)
            n++;
    return n;
}

static void test_empty(void **state)
{
    (void)state;
    struct intmap m;
    intmap_init(&m);
    uint64_t v = 77;
    assert_false(intmap_get(&m, 1, &v));
    assert_int_equal(v, 77);  /* untouched on a miss */
    intmap_remove(&m, 1);     /* no slots yet: nothing to do, no crash */
    assert_int_equal(m.count, 0);
    assert_int_equal(m.capacity, 0);
    intmap_free(&m);
    intmap_free(&m);          /* free leaves an empty map: freeing again is harmless */
}

static void test_insert_and_find(void **state)
{
    (void)state;
    struct intmap m;
    intmap_init(&m);
    assert_int_equal(intmap_put(&m, 5, 500), 0);
    assert_int_equal(intmap_put(&m, -3, 300), 0);
    assert_int_equal(intmap_put(&m, INT64_MAX, UINT64_MAX), 0);
    assert_int_equal(intmap_put(&m, INT64_MIN, 1), 0);
    assert_int_equal(m.count, 4);
    uint64_t v = 0;
    assert_true(intmap_get(&m, 5, &v));
    assert_int_equal(v, 500);
    assert_true(intmap_get(&m, -3, &v));
    assert_int_equal(v, 300);
    assert_true(intmap_get(&m, INT64_MAX, &v));
    assert_true(v == UINT64_MAX);
    assert_true(intmap_get(&m, INT64_MIN, &v));
    assert_int_equal(v, 1);
    assert_int_equal(occupied(&m), 4);
    intmap_free(&m);
}

static void test_overwrite(void **state)
{
    (void)state;
    struct intmap m;
    intmap_init(&m);
    assert_int_equal(intmap_put(&m, 42, 1), 0);
    assert_int_equal(intmap_put(&m, 42, 2), 0);
    assert_int_equal(intmap_put(&m, 42, 3), 0);
    assert_int_equal(m.count, 1);
    uint64_t v = 0;
    assert_true(intmap_get(&m, 42, &v));
    assert_int_equal(v, 3);
    /* http.c's watch() rewrites a value in place with a flag bit set */
    assert_int_equal(intmap_put(&m, 42, 3 | (1ULL << 63)), 0);
    assert_true(intmap_get(&m, 42, &v));
    assert_true(v == (3 | (1ULL << 63)));
    assert_int_equal(m.count, 1);
    intmap_free(&m);
}

static void test_absent_keys(void **state)
{
    (void)state;
    struct intmap m;
    intmap_init(&m);
    for (int64_t k = 1; k <= 40; k++)
        assert_int_equal(intmap_put(&m, k * 2, (uint64_t)k), 0);
    uint64_t v = 999;
    for (int64_t k = 1; k <= 40; k++)
        assert_false(intmap_get(&m, k * 2 + 1, &v));  /* the odd neighbours were never put */
    assert_false(intmap_get(&m, -2, &v));
    assert_int_equal(v, 999);
    intmap_remove(&m, 3);  /* absent: nothing changes */
    assert_int_equal(m.count, 40);
    intmap_remove(&m, 4);
    assert_int_equal(m.count, 39);
    assert_false(intmap_get(&m, 4, &v));
    intmap_remove(&m, 4);  /* twice: still one removal */
    assert_int_equal(m.count, 39);
    intmap_free(&m);
}

static void test_grow(void **state)
{
    (void)state;
    struct intmap m;
    intmap_init(&m);
    assert_int_equal(intmap_put(&m, 1, 1), 0);
    size_t first = m.capacity;
    assert_true(first > 0);
    assert_int_equal(first & (first - 1), 0);  /* a power of two: slot_of masks with it */
    int64_t n = (int64_t)first;                 /* more keys than the first table has slots */
    for (int64_t k = 2; k <= n; k++)
        assert_int_equal(intmap_put(&m, k, (uint64_t)k * 10), 0);
    assert_true(m.capacity > first);
    assert_int_equal(m.capacity & (m.capacity - 1), 0);
    /* never fuller than three quarters, so every probe chain ends at an empty slot */
    assert_true(m.count * 4 <= m.capacity * 3);
    assert_int_equal(m.count, (size_t)n);
    for (int64_t k = 2; k <= n; k++) {
        uint64_t v = 0;
        assert_true(intmap_get(&m, k, &v));
        assert_int_equal(v, (uint64_t)k * 10);
    }
    uint64_t v = 0;
    assert_true(intmap_get(&m, 1, &v));
    assert_int_equal(v, 1);
    assert_int_equal(occupied(&m), m.count);
    intmap_free(&m);
}

/* Removal shifts later entries of a probe chain back: after removing from the middle of
 * chains, everything else must still be found. Keys that differ only in high bits tend
 * to land near each other, which makes long chains likely. */
static void test_remove_keeps_chains(void **state)
{
    (void)state;
    struct intmap m;
    intmap_init(&m);
    const int64_t n = 3000;
    for (int64_t i = 1; i <= n; i++)
        assert_int_equal(intmap_put(&m, i << 40, (uint64_t)i), 0);
    for (int64_t i = 1; i <= n; i += 3)
        intmap_remove(&m, i << 40);
    size_t expected = (size_t)(n - (n + 2) / 3);
    assert_int_equal(m.count, expected);
    assert_int_equal(occupied(&m), expected);
    for (int64_t i = 1; i <= n; i++) {
        uint64_t v = 0;
        bool found = intmap_get(&m, i << 40, &v);
        if ((i - 1) % 3 == 0) {
            assert_false(found);
        } else {
            assert_true(found);
            assert_int_equal(v, (uint64_t)i);
        }
    }
    intmap_free(&m);
}

static uint64_t next_random(uint64_t *s)
{
    /* xorshift64: a fixed, reproducible sequence of keys spread over the whole range */
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void test_many_keys(void **state)
{
    (void)state;
    struct intmap m;
    intmap_init(&m);
    enum { N = 100000 };
    static int64_t keys[N];
    uint64_t seed = 0x243F6A8885A308D3ULL;
    for (size_t i = 0; i < N; i++) {
        int64_t k;
        do
            k = (int64_t)next_random(&seed);
        while (k == 0);
        keys[i] = k;
        assert_int_equal(intmap_put(&m, k, (uint64_t)i), 0);
    }
    assert_int_equal(m.count, N);  /* xorshift64 does not repeat within its period */
    for (size_t i = 0; i < N; i++) {
        uint64_t v = 0;
        assert_true(intmap_get(&m, keys[i], &v));
        assert_int_equal(v, i);
    }
    for (size_t i = 0; i < N; i += 2)
        intmap_remove(&m, keys[i]);
    assert_int_equal(m.count, N / 2);
    for (size_t i = 0; i < N; i++) {
        uint64_t v = 0;
        assert_int_equal(intmap_get(&m, keys[i], &v), i % 2 == 1);
    }
    /* removed keys can come back */
    for (size_t i = 0; i < N; i += 2)
        assert_int_equal(intmap_put(&m, keys[i], 7), 0);
    assert_int_equal(m.count, N);
    assert_int_equal(occupied(&m), N);
    intmap_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_insert_and_find),
        cmocka_unit_test(test_overwrite),
        cmocka_unit_test(test_absent_keys),
        cmocka_unit_test(test_grow),
        cmocka_unit_test(test_remove_keeps_chains),
        cmocka_unit_test(test_many_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
