/* The lot of orders set aside while their Redis slot cannot be written: they are fed into
 * later batches until done, a run with orders waiting keeps its later orders behind them,
 * and a partition's commit never passes its lowest parked order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "consumer/batch.h"
#include "consumer/parking.h"

static struct orderevent order(const char *no, int64_t activity, const char *bucket)
{
    struct orderevent ev;
    memset(&ev, 0, sizeof(ev));
    snprintf(ev.order_no, sizeof(ev.order_no), "%s", no);
    snprintf(ev.bucket_tag, sizeof(ev.bucket_tag), "%s", bucket);
    ev.user_id = 1;
    ev.activity_id = activity;
    return ev;
}

static void park(struct parking *p, const char *no, int64_t activity, int32_t partition, int64_t offset,
                 int64_t now)
{
    struct orderevent ev = order(no, activity, "");
    assert_int_equal(parking_add(p, &ev, partition, offset, now), 0);
}

static void test_commit_stops_at_the_lowest_parked_offset(void **state)
{
    (void)state;
    struct parking p;
    parking_init(&p, 100, 100, 1000);
    assert_true(parking_floor(&p, 0) == INT64_MAX);
    park(&p, "a", 7, 0, 40, 0);
    park(&p, "b", 7, 0, 12, 0);
    park(&p, "c", 7, 1, 5, 0);
    assert_int_equal(parking_floor(&p, 0), 12);
    assert_int_equal(parking_floor(&p, 1), 5);
    assert_true(parking_floor(&p, 2) == INT64_MAX);
    /* A rebalance took partition 0: its new owner replays from the committed offset. */
    assert_int_equal(parking_drop_partition(&p, 0), 2);
    assert_true(parking_floor(&p, 0) == INT64_MAX);
    assert_int_equal(p.count, 1);
    parking_free(&p);
}

static void test_fed_after_the_delay_and_gone_once_their_batch_is_done(void **state)
{
    (void)state;
    struct parking p;
    struct batch b;
    assert_int_equal(batch_init(&b, 4), 0);
    parking_init(&p, 100, 100, 1000);
    park(&p, "a", 7, 0, 3, 1000);
    park(&p, "b", 7, 0, 4, 1050);   /* a later arrival does not postpone the feed */
    assert_int_equal(parking_feed(&p, &b, 1, 1000, 1099), 0);
    assert_int_equal(parking_feed(&p, &b, 1, 1000, 1100), 2);
    assert_int_equal(b.count, 2);
    int32_t partition;
    int64_t offset;
    batch_origin(&b, "b", &partition, &offset);
    assert_int_equal(offset, 4);
    /* Fed, they no longer wait: the run's new orders may be claimed with them. */
    assert_false(parking_waits_for(&p, 7, ""));
    /* Nothing fed twice while its batch is under way, and the commit still stops there. */
    batch_reset(&b);
    assert_int_equal(parking_feed(&p, &b, 2, 1000, 5000), 0);
    assert_int_equal(parking_floor(&p, 0), 3);
    parking_finish(&p, 1);
    assert_int_equal(p.count, 0);
    assert_true(parking_floor(&p, 0) == INT64_MAX);
    batch_free(&b);
    parking_free(&p);
}

static void test_parked_again_waits_longer_and_keeps_its_run_behind_it(void **state)
{
    (void)state;
    struct parking p;
    struct batch b;
    assert_int_equal(batch_init(&b, 4), 0);
    parking_init(&p, 100, 100, 300);
    park(&p, "a", 7, 0, 3, 0);
    struct orderevent other = order("x", 7, "7.1.0");
    assert_true(parking_waits_for(&p, 7, ""));
    assert_false(parking_waits_for(&p, 7, other.bucket_tag));  /* another bucket: its own slot */
    assert_false(parking_waits_for(&p, 8, ""));
    assert_int_equal(parking_feed(&p, &b, 1, 1000, 100), 1);
    /* Its slot still does not answer: parked again, the next feed 200 ms later. */
    park(&p, "a", 7, 0, 3, 150);
    assert_int_equal(p.count, 1);
    assert_true(parking_waits_for(&p, 7, ""));
    parking_finish(&p, 1);              /* its first batch ends: it stays */
    assert_int_equal(p.count, 1);
    batch_reset(&b);
    assert_int_equal(parking_feed(&p, &b, 2, 1000, 349), 0);
    assert_int_equal(parking_feed(&p, &b, 2, 1000, 350), 1);
    /* The delay stops doubling at the maximum. */
    park(&p, "a", 7, 0, 3, 400);
    batch_reset(&b);
    assert_int_equal(parking_feed(&p, &b, 3, 1000, 699), 0);
    assert_int_equal(parking_feed(&p, &b, 3, 1000, 700), 1);
    batch_free(&b);
    parking_free(&p);
}

static void test_fed_by_whole_runs_and_the_rest_at_once_after_a_success(void **state)
{
    (void)state;
    struct parking p;
    struct batch b;
    assert_int_equal(batch_init(&b, 4), 0);
    parking_init(&p, 100, 100, 1000);
    park(&p, "x1", 7, 0, 1, 0);
    park(&p, "y1", 8, 0, 2, 0);
    park(&p, "x2", 7, 0, 3, 0);
    park(&p, "y2", 8, 0, 4, 0);
    park(&p, "x3", 7, 0, 5, 0);
    /* Past the limit to finish activity 7's run: part of it would wait behind the rest. */
    assert_int_equal(parking_feed(&p, &b, 1, 2, 100), 3);
    assert_false(parking_waits_for(&p, 7, ""));
    assert_true(parking_waits_for(&p, 8, ""));
    parking_finish(&p, 1);
    assert_int_equal(p.count, 2);
    assert_int_equal(parking_floor(&p, 0), 2);
    batch_reset(&b);
    assert_int_equal(parking_feed(&p, &b, 2, 2, 101), 2);
    parking_finish(&p, 2);
    assert_int_equal(p.count, 0);
    batch_free(&b);
    parking_free(&p);
}

static void test_room_is_bounded(void **state)
{
    (void)state;
    struct parking p;
    parking_init(&p, 2, 100, 1000);
    assert_true(parking_has_room(&p, 2));
    park(&p, "a", 7, 0, 1, 0);
    assert_true(parking_has_room(&p, 1));
    assert_false(parking_has_room(&p, 2));
    parking_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_commit_stops_at_the_lowest_parked_offset),
        cmocka_unit_test(test_fed_after_the_delay_and_gone_once_their_batch_is_done),
        cmocka_unit_test(test_parked_again_waits_longer_and_keeps_its_run_behind_it),
        cmocka_unit_test(test_fed_by_whole_runs_and_the_rest_at_once_after_a_success),
        cmocka_unit_test(test_room_is_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
