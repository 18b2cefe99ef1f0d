/* The allotment rule: what one sale holds back from its coupon (live, ended, cancelled,
 * with and without its Redis side), and whether a grant or a new sale still fits within
 * the coupon's total beside what is issued and held. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "ctl/ctlallotment.h"

#define START 1000000
#define END 2000000

/* A sale of 100 with 30 sold, open from START to END. */
static struct ctlactivity_row sale(const char *status)
{
    struct ctlactivity_row r;
    memset(&r, 0, sizeof(r));
    r.id = 1;
    r.coupon_id = 9;
    r.stock = 100;
    r.sold_count = 30;
    r.start_ms = START;
    r.end_ms = END;
    snprintf(r.status, sizeof(r.status), "%s", status);
    return r;
}

static struct ctlactivity_redis warmed(int64_t stock_left, int64_t returned, bool cancelled)
{
    struct ctlactivity_redis rd;
    memset(&rd, 0, sizeof(rd));
    rd.warmed = true;
    rd.cancelled = cancelled;
    rd.has_stock = true;
    rd.stock_left = stock_left;
    rd.returned = returned;
    return rd;
}

static const struct ctlactivity_redis cold = { 0 };

static void test_live_sale_holds_unsold(void **state)
{
    (void)state;
    struct ctlactivity_row r = sale("ACTIVE");
    struct ctlactivity_redis rd = warmed(40, 0, false);
    /* Before, inside and within the grace after the window: whatever Redis says. */
    assert_int_equal(ctlallotment_holds(&r, START - 1, &rd), 70);
    assert_int_equal(ctlallotment_holds(&r, START + 10, &rd), 70);
    assert_int_equal(ctlallotment_holds(&r, END + CTLALLOTMENT_END_GRACE_MS - 1, &rd), 70);
    assert_int_equal(ctlallotment_holds(&r, START + 10, &cold), 70);
    /* The status column does not matter, the clock does. */
    r = sale("PENDING");
    assert_int_equal(ctlallotment_holds(&r, START + 10, &cold), 70);
}

static void test_ended_sale_holds_in_flight(void **state)
{
    (void)state;
    struct ctlactivity_row r = sale("ACTIVE");
    int64_t over = END + CTLALLOTMENT_END_GRACE_MS;
    /* 70 unsold, 50 still in the stock key: 20 may still become orders. */
    struct ctlactivity_redis rd = warmed(50, 0, false);
    assert_int_equal(ctlallotment_holds(&r, over, &rd), 20);
    /* Everything back in the stock key: nothing in flight. */
    rd = warmed(70, 0, false);
    assert_int_equal(ctlallotment_holds(&r, over, &rd), 0);
    /* A stock key above the unsold (lost writes) never makes the hold negative. */
    rd = warmed(90, 0, false);
    assert_int_equal(ctlallotment_holds(&r, over, &rd), 0);
    /* A negative stock key counts as empty. */
    rd = warmed(-3, 0, false);
    assert_int_equal(ctlallotment_holds(&r, over, &rd), 70);
    /* Without a stock key no order can be claimed any more. */
    assert_int_equal(ctlallotment_holds(&r, over, &cold), 0);
    rd = warmed(0, 0, false);
    rd.has_stock = false;
    assert_int_equal(ctlallotment_holds(&r, over, &rd), 0);
}

static void test_cancelled_sale(void **state)
{
    (void)state;
    struct ctlactivity_row r = sale("CANCELLED");
    /* Cancelled in both: only what is in flight, inside the window too. 60 returned by
     * the cancel, 4 released into the stock key since: 6 in flight. */
    struct ctlactivity_redis rd = warmed(4, 60, true);
    assert_int_equal(ctlallotment_holds(&r, START + 10, &rd), 6);
    rd = warmed(0, 70, true);
    assert_int_equal(ctlallotment_holds(&r, START + 10, &rd), 0);
    /* MySQL says cancelled, the Redis hash does not (restored from before the cancel):
     * it may still be selling, so it holds all its unsold, even after the end. */
    rd = warmed(10, 0, false);
    assert_int_equal(ctlallotment_holds(&r, START + 10, &rd), 70);
    assert_int_equal(ctlallotment_holds(&r, END + CTLALLOTMENT_END_GRACE_MS, &rd), 70);
    /* Never warmed: nothing was on sale. */
    assert_int_equal(ctlallotment_holds(&r, START + 10, &cold), 0);
}

static void test_oversold_sale_holds_nothing(void **state)
{
    (void)state;
    struct ctlactivity_row r = sale("ACTIVE");
    r.sold_count = 120;
    assert_int_equal(ctlallotment_holds(&r, START + 10, &cold), 0);
    struct ctlactivity_redis rd = warmed(0, 0, false);
    assert_int_equal(ctlallotment_holds(&r, END + CTLALLOTMENT_END_GRACE_MS, &rd), 0);
}

/* Archived: quiet and all in MySQL when it was, and its Redis side is gone, so what the
 * Redis side would say does not count. */
static void test_archived_sale_holds_nothing(void **state)
{
    (void)state;
    struct ctlactivity_row r = sale("ENDED");
    r.archived = true;
    struct ctlactivity_redis gone;
    memset(&gone, 0, sizeof(gone));
    gone.warmed = true;
    assert_int_equal(ctlallotment_holds(&r, END + 60000, &gone), 0);
    struct ctlactivity_redis stale = warmed(5, 0, false);
    assert_int_equal(ctlallotment_holds(&r, END + 60000, &stale), 0);
}

static void test_remaining_and_verdict(void **state)
{
    (void)state;
    /* 100 in all, 30 issued (grants and sold orders), 50 held by sales: 20 left. */
    struct ctlallotment_count c = { .total = 100, .issued = 30, .held = 50 };
    assert_int_equal(ctlallotment_remaining(&c), 20);
    assert_true(ctlallotment_fits(&c, 1));
    assert_true(ctlallotment_fits(&c, 20));
    assert_false(ctlallotment_fits(&c, 21));

    /* Used up exactly: a grant of one is refused. */
    c = (struct ctlallotment_count){ .total = 100, .issued = 50, .held = 50 };
    assert_int_equal(ctlallotment_remaining(&c), 0);
    assert_false(ctlallotment_fits(&c, 1));

    /* More issued and held than the total (a lost write, a sale created before a
     * consumer caught up): nothing is left, never a negative amount. */
    c = (struct ctlallotment_count){ .total = 100, .issued = 70, .held = 50 };
    assert_int_equal(ctlallotment_remaining(&c), 0);
    assert_false(ctlallotment_fits(&c, 1));

    /* Nothing issued or held: the whole total fits, one more does not. */
    c = (struct ctlallotment_count){ .total = 4294967295LL, .issued = 0, .held = 0 };
    assert_true(ctlallotment_remaining(&c) == 4294967295LL);
    assert_true(ctlallotment_fits(&c, 4294967295LL));
    assert_false(ctlallotment_fits(&c, 4294967296LL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_live_sale_holds_unsold),
        cmocka_unit_test(test_ended_sale_holds_in_flight),
        cmocka_unit_test(test_cancelled_sale),
        cmocka_unit_test(test_oversold_sale_holds_nothing),
        cmocka_unit_test(test_archived_sale_holds_nothing),
        cmocka_unit_test(test_remaining_and_verdict),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
