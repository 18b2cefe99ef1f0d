/* The rebalance's choice of a move: an emptying bucket is refilled from the fullest, a
 * starved empty bucket gets even the last unit, and nothing moves when the buckets are
 * even or the sale is out. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gateway/rebalance.h"

static void test_low_bucket_gets_half_the_difference(void **state)
{
    (void)state;
    int64_t stock[3] = { 1, 10, 4 };
    bool starved[3] = { false, false, false };
    int from, to;
    int64_t units;
    assert_true(rebalance_plan(stock, starved, 3, &from, &to, &units));
    assert_int_equal(from, 1);
    assert_int_equal(to, 0);
    assert_int_equal(units, 4);
}

static void test_even_buckets_stay(void **state)
{
    (void)state;
    int64_t stock[3] = { 10, 10, 9 };
    bool starved[3] = { false, false, false };
    int from, to;
    int64_t units;
    assert_false(rebalance_plan(stock, starved, 3, &from, &to, &units));
    int64_t out[3] = { 0, 0, 0 };
    bool all_starved[3] = { true, true, true };
    assert_false(rebalance_plan(out, all_starved, 3, &from, &to, &units));
}

static void test_starved_bucket_gets_the_last_unit(void **state)
{
    (void)state;
    int64_t stock[3] = { 0, 0, 1 };
    bool starved[3] = { false, true, false };
    int from, to;
    int64_t units;
    assert_true(rebalance_plan(stock, starved, 3, &from, &to, &units));
    assert_int_equal(from, 2);
    assert_int_equal(to, 1);
    assert_int_equal(units, 1);
    /* without demand there, one unit stays where it is */
    starved[1] = false;
    assert_false(rebalance_plan(stock, starved, 3, &from, &to, &units));
}

static void test_empty_bucket_refilled_before_anyone_waits(void **state)
{
    (void)state;
    int64_t stock[2] = { 0, 5 };
    bool starved[2] = { false, false };
    int from, to;
    int64_t units;
    assert_true(rebalance_plan(stock, starved, 2, &from, &to, &units));
    assert_int_equal(from, 1);
    assert_int_equal(to, 0);
    assert_int_equal(units, 2);
    assert_false(rebalance_plan(stock, starved, 1, &from, &to, &units));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_low_bucket_gets_half_the_difference),
        cmocka_unit_test(test_even_buckets_stay),
        cmocka_unit_test(test_starved_bucket_gets_the_last_unit),
        cmocka_unit_test(test_empty_bucket_refilled_before_anyone_waits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
