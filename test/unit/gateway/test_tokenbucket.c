/* The gateway's global token bucket: pure arithmetic on a caller-supplied clock (µs). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>

#include "gateway/tokenbucket.h"

#define SEC 1000000LL
#define T0 (1000 * SEC) /* an arbitrary monotonic start */

/* Takes until the first refusal at `now`; returns how many succeeded. */
static int64_t drain(struct tokenbucket *tb, int64_t now, int64_t limit)
{
    int64_t n = 0;
    while (n < limit && tokenbucket_take(tb, now))
        n++;
    return n;
}

static void test_starts_full(void **state)
{
    (void)state;
    static const struct { int64_t rate, burst; } cases[] = {
        { 1, 1 }, { 100, 200 }, { 5, 3 }, { 1000, 1 }, { 1, 50 },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct tokenbucket tb;
        tokenbucket_init(&tb, cases[i].rate, cases[i].burst, T0);
        assert_int_equal(drain(&tb, T0, cases[i].burst + 10), cases[i].burst);
        assert_false(tokenbucket_take(&tb, T0));
        assert_false(tokenbucket_take(&tb, T0));
    }
}

static void test_refill_at_rate(void **state)
{
    (void)state;
    static const int64_t rates[] = { 1, 2, 4, 10, 100, 1000, 1000000 };
    for (size_t i = 0; i < sizeof(rates) / sizeof(rates[0]); i++) {
        int64_t rate = rates[i];
        struct tokenbucket tb;
        tokenbucket_init(&tb, rate, 5, T0);
        assert_int_equal(drain(&tb, T0, 100), 5);
        int64_t period = SEC / rate; /* exact for these rates */
        /* Just before one period: nothing. */
        if (period > 1)
            assert_false(tokenbucket_take(&tb, T0 + period - 1));
        /* After exactly one period: exactly one. */
        assert_true(tokenbucket_take(&tb, T0 + period));
        assert_false(tokenbucket_take(&tb, T0 + period));
        /* After three more periods: exactly three. */
        assert_int_equal(drain(&tb, T0 + 4 * period, 100), 3);
    }
    /* rate 100/s for 1 s with burst 200: 100 permits. */
    struct tokenbucket tb;
    tokenbucket_init(&tb, 100, 200, T0);
    assert_int_equal(drain(&tb, T0, 1000), 200);
    assert_int_equal(drain(&tb, T0 + SEC, 1000), 100);
}

static void test_fractional_refills_accumulate(void **state)
{
    (void)state;
    struct tokenbucket tb;
    tokenbucket_init(&tb, 3, 1, T0);
    assert_true(tokenbucket_take(&tb, T0));
    /* 1/3 s is 333,333.3 µs: at 333,333 µs the token is not whole yet, at 333,334 it is. */
    assert_false(tokenbucket_take(&tb, T0 + 333333));
    assert_true(tokenbucket_take(&tb, T0 + 333334));
    assert_false(tokenbucket_take(&tb, T0 + 333334));

    /* Many tiny steps add up exactly as one big step: rate 3/s polled every 7 µs for a
     * second yields 3 permits, not 0 (each poll adds only 21 millionths of a permit). */
    tokenbucket_init(&tb, 3, 10, T0);
    assert_int_equal(drain(&tb, T0, 100), 10);
    int64_t got = 0;
    for (int64_t t = 7; t <= SEC; t += 7)
        got += tokenbucket_take(&tb, T0 + t) ? 1 : 0;
    got += drain(&tb, T0 + SEC, 100);
    assert_int_equal(got, 3);

    /* rate 7/s over 10 s in 1 ms polls: 70 permits, none lost to rounding. */
    tokenbucket_init(&tb, 7, 100, T0);
    assert_int_equal(drain(&tb, T0, 1000), 100);
    got = 0;
    for (int64_t t = 1000; t <= 10 * SEC; t += 1000)
        got += drain(&tb, T0 + t, 1000);
    assert_int_equal(got, 70);
}

static void test_never_exceeds_burst(void **state)
{
    (void)state;
    const int64_t day = 86400 * SEC;
    struct tokenbucket tb;
    tokenbucket_init(&tb, 10, 20, T0);
    assert_int_equal(drain(&tb, T0, 100), 20);
    assert_int_equal(drain(&tb, T0 + day, 1000), 20);

    /* Huge rate and burst after a long idle: no overflow, exactly burst. */
    const int64_t big = 100000000; /* 1e8, the configured maximum of both */
    tokenbucket_init(&tb, big, big, T0);
    assert_true(tokenbucket_take(&tb, T0));
    assert_true(tb.micro_tokens == (big - 1) * SEC);
    assert_true(tokenbucket_take(&tb, T0 + day));
    assert_true(tb.micro_tokens == (big - 1) * SEC);
    assert_true(tb.micro_tokens >= 0);
    /* Idle for a day, then a year: still capped at burst. */
    assert_true(tokenbucket_take(&tb, T0 + 365 * day));
    assert_true(tb.micro_tokens == (big - 1) * SEC);

    /* Partially drained, then a long idle: back to exactly burst. */
    tokenbucket_init(&tb, 1, 3, T0);
    assert_int_equal(drain(&tb, T0, 1), 1);
    assert_int_equal(drain(&tb, T0 + day, 100), 3);
}

static void test_clock_backwards_adds_nothing(void **state)
{
    (void)state;
    struct tokenbucket tb;
    tokenbucket_init(&tb, 1, 2, T0);
    assert_int_equal(drain(&tb, T0, 10), 2);
    /* Backwards by ten seconds: nothing. */
    assert_false(tokenbucket_take(&tb, T0 - 10 * SEC));
    /* Back to T0: still nothing, the backwards step was not counted as elapsed time. */
    assert_false(tokenbucket_take(&tb, T0));
    assert_false(tokenbucket_take(&tb, T0 + SEC - 1));
    /* One second after the last real instant: one permit. */
    assert_true(tokenbucket_take(&tb, T0 + SEC));
    assert_false(tokenbucket_take(&tb, T0 + SEC));

    /* Backwards after a partial refill keeps the partial fill, adds nothing. */
    tokenbucket_init(&tb, 2, 1, T0);
    assert_true(tokenbucket_take(&tb, T0));
    assert_false(tokenbucket_take(&tb, T0 + 250000)); /* half a permit */
    assert_false(tokenbucket_take(&tb, T0 - SEC));
    assert_false(tokenbucket_take(&tb, T0 + 499999));
    assert_true(tokenbucket_take(&tb, T0 + 500000));
}

static void test_retry_after(void **state)
{
    (void)state;
    struct tokenbucket tb;
    /* Full bucket: at least 1. */
    tokenbucket_init(&tb, 5, 5, T0);
    assert_int_equal(tokenbucket_retry_after(&tb), 1);

    /* rate 1/s, empty: one second. */
    tokenbucket_init(&tb, 1, 1, T0);
    assert_true(tokenbucket_take(&tb, T0));
    assert_false(tokenbucket_take(&tb, T0));
    assert_int_equal(tokenbucket_retry_after(&tb), 1);

    /* burst 1, rate 1, the one take at t=0.5 s: one second (rounded up, never 0). */
    tokenbucket_init(&tb, 1, 1, 0);
    assert_true(tokenbucket_take(&tb, SEC / 2));
    assert_false(tokenbucket_take(&tb, SEC / 2));
    assert_int_equal(tokenbucket_retry_after(&tb), 1);
    /* 0.9 s later the permit is nearly there: still 1, never 0. */
    assert_false(tokenbucket_take(&tb, SEC / 2 + 900000));
    assert_int_equal(tokenbucket_retry_after(&tb), 1);
    assert_true(tokenbucket_take(&tb, SEC / 2 + SEC));

    /* A fast rate that is empty: still at least 1. */
    tokenbucket_init(&tb, 1000000, 1, T0);
    assert_true(tokenbucket_take(&tb, T0));
    assert_false(tokenbucket_take(&tb, T0));
    assert_int_equal(tokenbucket_retry_after(&tb), 1);

    /* Whatever the fill, Retry-After is 1 for any rate >= 1/s: one permit never takes
     * longer than a second to arrive. */
    tokenbucket_init(&tb, 1, 100, T0);
    assert_int_equal(drain(&tb, T0, 1000), 100);
    for (int64_t t = 0; t < 3 * SEC; t += 100000) {
        (void)tokenbucket_take(&tb, T0 + t);
        assert_int_equal(tokenbucket_retry_after(&tb), 1);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_starts_full),
        cmocka_unit_test(test_refill_at_rate),
        cmocka_unit_test(test_fractional_refills_accumulate),
        cmocka_unit_test(test_never_exceeds_burst),
        cmocka_unit_test(test_clock_backwards_adds_nothing),
        cmocka_unit_test(test_retry_after),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
