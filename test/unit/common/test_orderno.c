/* Order numbers: unique and strictly increasing per generator whatever the clock does,
 * disjoint across nodes, and "<id>-<activityId>" parsed strictly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/orderno.h"

/* 2026-12-01T12:00:00Z, well after the epoch. */
#define T0 1796126400000LL

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void assert_all_distinct(uint64_t *ids, size_t n)
{
    qsort(ids, n, sizeof(ids[0]), cmp_u64);
    for (size_t i = 1; i < n; i++)
        if (ids[i] == ids[i - 1])
            fail_msg("id %" PRIu64 " generated twice", ids[i]);
}

static void test_increasing_and_unique(void **state)
{
    (void)state;
    enum { N = 100000 };
    uint64_t *ids = malloc(N * sizeof(ids[0]));
    assert_non_null(ids);
    struct orderno_gen gen;
    orderno_init(&gen, 7);
    int64_t now = T0;
    for (size_t i = 0; i < N; i++) {
        if (i % 37 == 0)
            now += (int64_t)(i % 3); /* several orders per millisecond, sometimes none */
        ids[i] = orderno_next(&gen, now);
        assert_true(ids[i] > 0);
        assert_true(ids[i] <= (uint64_t)INT64_MAX); /* 63 bits: fits parse_id */
        if (i > 0 && ids[i] <= ids[i - 1])
            fail_msg("id %zu (%" PRIu64 ") not above its predecessor (%" PRIu64 ")", i, ids[i],
                     ids[i - 1]);
    }
    assert_all_distinct(ids, N);
    free(ids);
}

static void test_same_millisecond_overflow_borrows(void **state)
{
    (void)state;
    enum { N = 5000 };
    uint64_t ids[N];
    struct orderno_gen gen;
    orderno_init(&gen, 3);
    for (size_t i = 0; i < N; i++) {
        ids[i] = orderno_next(&gen, T0);
        if (i > 0)
            assert_true(ids[i] > ids[i - 1]);
    }
    /* The first 4096 fit T0; the rest borrowed the next millisecond. */
    uint64_t first_ms = ids[0] >> (ORDERNO_NODE_BITS + ORDERNO_SEQ_BITS);
    uint64_t last_ms = ids[N - 1] >> (ORDERNO_NODE_BITS + ORDERNO_SEQ_BITS);
    assert_true(first_ms == (uint64_t)(T0 - ORDERNO_EPOCH_MS));
    assert_true(last_ms == first_ms + 1);
    /* Every id keeps the generator's node. */
    for (size_t i = 0; i < N; i++)
        assert_int_equal((ids[i] >> ORDERNO_SEQ_BITS) & ORDERNO_MAX_NODE, 3);
    /* When the real clock reaches the borrowed millisecond, numbers still do not repeat. */
    uint64_t next = orderno_next(&gen, T0 + 1);
    assert_true(next > ids[N - 1]);
    next = orderno_next(&gen, T0 + 2);
    assert_true(next > ids[N - 1]);
    assert_all_distinct(ids, N);
}

static void test_clock_going_backwards(void **state)
{
    (void)state;
    enum { N = 3000 };
    uint64_t ids[N];
    struct orderno_gen gen;
    orderno_init(&gen, 1);
    /* A clock that jumps back one second, then forward, then back again. */
    static const int64_t clock[] = { 0, 5, 5, -1000, -1000, -999, 3, 6, -5000, 6, 7 };
    size_t k = 0;
    for (size_t i = 0; i < N; i++) {
        int64_t now = T0 + clock[(i / 300) % (sizeof(clock) / sizeof(clock[0]))];
        ids[k] = orderno_next(&gen, now);
        if (k > 0 && ids[k] <= ids[k - 1])
            fail_msg("id %zu not increasing after the clock moved to %" PRId64, k, now);
        k++;
    }
    assert_all_distinct(ids, N);
    /* A clock before the epoch does not underflow into a huge or colliding id. */
    struct orderno_gen early;
    orderno_init(&early, 2);
    uint64_t a = orderno_next(&early, ORDERNO_EPOCH_MS - 5000);
    uint64_t b = orderno_next(&early, ORDERNO_EPOCH_MS - 10000);
    uint64_t c = orderno_next(&early, ORDERNO_EPOCH_MS + 1);
    assert_true(a > 0 && b > a && c > b);
    assert_true(c <= (uint64_t)INT64_MAX);
}

static void test_two_nodes_never_collide(void **state)
{
    (void)state;
    enum { N = 20000 };
    uint64_t *ids = malloc(2 * N * sizeof(ids[0]));
    assert_non_null(ids);
    struct orderno_gen a, b;
    orderno_init(&a, 0);
    orderno_init(&b, ORDERNO_MAX_NODE);
    int64_t now = T0;
    for (size_t i = 0; i < N; i++) {
        if (i % 5000 == 4999)
            now -= 3; /* both see the same backwards step */
        else if (i % 100 == 0)
            now++;
        ids[2 * i] = orderno_next(&a, now);
        ids[2 * i + 1] = orderno_next(&b, now);
    }
    assert_all_distinct(ids, 2 * N);
    free(ids);

    /* Node ids beyond 10 bits are masked, not smeared into the timestamp. */
    struct orderno_gen big;
    orderno_init(&big, ORDERNO_MAX_NODE + 1 + 5);
    uint64_t id = orderno_next(&big, T0);
    assert_int_equal((id >> ORDERNO_SEQ_BITS) & ORDERNO_MAX_NODE, 5);
    assert_true(id >> (ORDERNO_NODE_BITS + ORDERNO_SEQ_BITS) == (uint64_t)(T0 - ORDERNO_EPOCH_MS));
}

static void test_format_parse_round_trip(void **state)
{
    (void)state;
    struct orderno_gen gen;
    orderno_init(&gen, 42);
    static const int64_t activities[] = { 1, 7, 1000000, 9000000000123LL, INT64_MAX };
    for (size_t i = 0; i < sizeof(activities) / sizeof(activities[0]); i++) {
        uint64_t id = orderno_next(&gen, T0 + (int64_t)i);
        char buf[ORDERNO_LEN];
        int n = orderno_format(buf, sizeof(buf), id, activities[i]);
        assert_true(n > 0);
        assert_int_equal((size_t)n, strlen(buf));
        char want[64];
        snprintf(want, sizeof(want), "%" PRIu64 "-%" PRId64, id, activities[i]);
        assert_string_equal(buf, want);
        uint64_t id2 = 0;
        int64_t act2 = 0;
        assert_int_equal(orderno_parse(buf, &id2, &act2), 0);
        assert_true(id2 == id);
        assert_true(act2 == activities[i]);
    }
    /* The largest possible number fits ORDERNO_LEN. */
    char buf[ORDERNO_LEN];
    assert_true(orderno_format(buf, sizeof(buf), (uint64_t)INT64_MAX, INT64_MAX) > 0);
    uint64_t id = 0;
    int64_t act = 0;
    assert_int_equal(orderno_parse(buf, &id, &act), 0);
    assert_true(id == (uint64_t)INT64_MAX && act == INT64_MAX);
    /* Too small a buffer is an error, not a truncated number. */
    char tiny[8];
    assert_int_equal(orderno_format(tiny, sizeof(tiny), 123456789, 1), -1);
    assert_int_equal(orderno_format(tiny, sizeof(tiny), 123456, 1), -1); /* needs 9 bytes */
    assert_int_equal(orderno_format(tiny, sizeof(tiny), 12345, 1), 7);
    assert_string_equal(tiny, "12345-1");
}

static void test_time_of_an_id(void **state)
{
    (void)state;
    struct orderno_gen gen;
    orderno_init(&gen, ORDERNO_MAX_NODE);
    int64_t now = 1796126400123LL;
    uint64_t id = orderno_next(&gen, now);
    assert_int_equal(orderno_time_ms(id), now);
    /* Past 4096 orders in one millisecond the sequence borrows from the next one. */
    for (int i = 0; i < 4096; i++)
        id = orderno_next(&gen, now);
    assert_int_equal(orderno_time_ms(id), now + 1);
}

static void test_parse_rejects_junk(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "", "-", "1-", "-1", "1-0", "0-1", "a-1", "1-a", "1-1x", "x1-1", "1--1", "1-1-1", "1-+1",
        "+1-1", " 1-1", "1-1 ", "1 -1", "1", "11", "01-1", "1-01", "1.0-1", "1_1",
        "9223372036854775808-1",  /* id overflow */
        "1-9223372036854775808",  /* activity overflow */
        "18446744073709551616-1", "99999999999999999999999999-1",
        "1-99999999999999999999999999",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        uint64_t id = 99;
        int64_t act = 99;
        if (orderno_parse(bad[i], &id, &act) == 0)
            fail_msg("orderno_parse accepted \"%s\"", bad[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_increasing_and_unique),
        cmocka_unit_test(test_same_millisecond_overflow_borrows),
        cmocka_unit_test(test_clock_going_backwards),
        cmocka_unit_test(test_two_nodes_never_collide),
        cmocka_unit_test(test_format_parse_round_trip),
        cmocka_unit_test(test_parse_rejects_junk),
        cmocka_unit_test(test_time_of_an_id),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
