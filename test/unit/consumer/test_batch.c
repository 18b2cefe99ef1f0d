/* The order consumer's batch: what it keeps of each message, and the one sort that puts
 * each activity (and inside it each coupon) into one run with repeats dropped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "consumer/batch.h"

static struct orderevent order(const char *no, int64_t user, int64_t activity, int64_t coupon)
{
    struct orderevent ev;
    memset(&ev, 0, sizeof(ev));
    snprintf(ev.order_no, sizeof(ev.order_no), "%s", no);
    ev.user_id = user;
    ev.activity_id = activity;
    ev.coupon_id = coupon;
    ev.created_ms = 1796126400000LL;
    return ev;
}

static void add(struct batch *b, const char *no, int64_t user, int64_t activity, int64_t coupon)
{
    struct orderevent ev = order(no, user, activity, coupon);
    assert_int_equal(batch_add_order(b, &ev, 0, 0), 0);
}

static void test_seal_sorts_and_drops_repeats(void **state)
{
    (void)state;
    struct batch b;
    assert_int_equal(batch_init(&b, 2), 0);
    add(&b, "30-2", 3, 2, 9);
    add(&b, "10-1", 1, 1, 7);
    add(&b, "12-2", 4, 2, 0);   /* warmed without a coupon: its own run inside activity 2 */
    add(&b, "20-1", 2, 1, 7);
    add(&b, "10-1", 1, 1, 7);   /* a redelivery inside the batch */
    add(&b, "11-2", 5, 2, 9);
    b.verdicts[0] = BATCH_ACCEPTED;
    batch_seal(&b);

    assert_int_equal(b.count, 5);
    assert_int_equal(b.duplicates, 1);
    const char *want[] = { "10-1", "20-1", "12-2", "11-2", "30-2" };
    for (size_t i = 0; i < b.count; i++) {
        assert_string_equal(b.orders[i].order_no, want[i]);
        assert_int_equal(b.verdicts[i], BATCH_PENDING);
        if (i > 0)
            assert_true(batch_order_cmp(&b.orders[i - 1], &b.orders[i]) < 0);
    }
    /* claim and finalize go by activity, persist by activity and coupon. */
    assert_int_equal(batch_run_end(b.orders, b.count, 0), 2);
    assert_int_equal(batch_run_end(b.orders, b.count, 2), 5);
    assert_int_equal(batch_coupon_run_end(b.orders, b.count, 0), 2);
    assert_int_equal(batch_coupon_run_end(b.orders, b.count, 2), 3);
    assert_int_equal(batch_coupon_run_end(b.orders, b.count, 3), 5);
    batch_free(&b);
}

static void test_seal_empty_and_single(void **state)
{
    (void)state;
    struct batch b;
    assert_int_equal(batch_init(&b, 0), 0);
    batch_seal(&b);
    assert_int_equal(b.count, 0);
    assert_int_equal(b.duplicates, 0);
    add(&b, "1-1", 1, 1, 1);
    batch_seal(&b);
    assert_int_equal(b.count, 1);
    assert_int_equal(batch_run_end(b.orders, b.count, 0), 1);
    batch_free(&b);
}

static void test_order_cmp(void **state)
{
    (void)state;
    struct orderevent a = order("5-1", 1, 1, 2), b = order("4-1", 1, 1, 3);
    assert_true(batch_order_cmp(&a, &b) < 0);   /* coupon before order number */
    b = order("4-1", 1, 1, 2);
    assert_true(batch_order_cmp(&a, &b) > 0);
    b = order("9-0", 1, 0, 9);
    assert_true(batch_order_cmp(&a, &b) > 0);   /* activity first */
    assert_int_equal(batch_order_cmp(&a, &a), 0);
}

static void test_collect_accepted(void **state)
{
    (void)state;
    struct batch b;
    assert_int_equal(batch_init(&b, 1), 0);
    add(&b, "1-1", 1, 1, 1);
    add(&b, "2-1", 2, 1, 1);
    add(&b, "3-1", 3, 1, 1);
    batch_seal(&b);
    b.verdicts[0] = BATCH_ACCEPTED;
    b.verdicts[1] = BATCH_REJECTED;
    b.verdicts[2] = BATCH_ACCEPTED;
    /* Left over from an earlier batch: must be cleared. */
    b.in_db[0] = b.in_db[1] = 1;
    b.coupons[0] = (struct batch_coupon){ 77, 1 };
    batch_collect_accepted(&b);
    assert_int_equal(b.accepted_count, 2);
    assert_string_equal(b.accepted[0].order_no, "1-1");
    assert_string_equal(b.accepted[1].order_no, "3-1");
    assert_int_equal(b.accepted[1].user_id, 3);
    assert_int_equal(b.in_db[0], 0);
    assert_int_equal(b.in_db[1], 0);
    assert_int_equal(b.coupons[0].id, 0);
    assert_int_equal(b.coupons[0].coupon_id, 0);
    batch_free(&b);
}

static void test_grows_past_hint(void **state)
{
    (void)state;
    struct batch b;
    assert_int_equal(batch_init(&b, 1), 0);
    char no[32];
    for (int i = 0; i < 3000; i++) {
        snprintf(no, sizeof(no), "%05d-1", 2999 - i);
        add(&b, no, i, 1, 1);
    }
    assert_true(b.cap >= 3000);
    batch_seal(&b);
    assert_int_equal(b.count, 3000);
    assert_string_equal(b.orders[0].order_no, "00000-1");
    assert_string_equal(b.orders[2999].order_no, "02999-1");
    for (size_t i = 0; i < b.count; i++)
        b.verdicts[i] = BATCH_ACCEPTED;
    batch_collect_accepted(&b);
    assert_int_equal(b.accepted_count, 3000);
    batch_free(&b);
}

static void test_offsets_keep_highest_per_partition(void **state)
{
    (void)state;
    struct batch b;
    assert_int_equal(batch_init(&b, 1), 0);
    assert_int_equal(batch_note_offset(&b, 0, 5), 0);
    assert_int_equal(batch_note_offset(&b, 1, 9), 0);
    assert_int_equal(batch_note_offset(&b, 0, 7), 0);
    assert_int_equal(batch_note_offset(&b, 0, 6), 0);   /* out of order: keeps 7 */
    for (int p = 2; p < 40; p++)
        assert_int_equal(batch_note_offset(&b, p, p), 0);
    assert_int_equal(b.offset_count, 40);
    assert_int_equal(b.offsets[0].partition, 0);
    assert_int_equal(b.offsets[0].offset, 7);
    assert_int_equal(b.offsets[1].partition, 1);
    assert_int_equal(b.offsets[1].offset, 9);
    assert_int_equal(b.offsets[39].offset, 39);
    batch_free(&b);
}

static void test_dead_copies_message(void **state)
{
    (void)state;
    struct batch b;
    assert_int_equal(batch_init(&b, 1), 0);
    char payload[] = "not json", key[] = "42";
    assert_int_equal(batch_add_dead(&b, payload, 8, key, 2, 3, 100, "bad: no orderNo"), 0);
    assert_int_equal(batch_add_dead(&b, NULL, 0, NULL, 0, 1, 5, "kafka: bad message"), 0);
    memset(payload, 'x', sizeof(payload) - 1);   /* the batch kept its own copy */
    memset(key, 'y', sizeof(key) - 1);
    assert_int_equal(b.dead_count, 2);
    const struct batch_dead *d = b.dead[0];
    assert_int_equal(d->payload_len, 8);
    assert_memory_equal(d->payload, "not json", 8);
    assert_int_equal(d->key_len, 2);
    assert_memory_equal(d->key, "42", 2);
    assert_int_equal(d->partition, 3);
    assert_int_equal(d->offset, 100);
    assert_string_equal(d->error, "bad: no orderNo");
    assert_int_equal(d->state, BATCH_DEAD_PENDING);
    assert_null(b.dead[1]->payload);
    assert_int_equal(b.dead[1]->payload_len, 0);
    assert_null(b.dead[1]->key);
    batch_free(&b);
}

static void test_use_becomes_dead_letter(void **state)
{
    (void)state;
    struct batch b;
    assert_int_equal(batch_init(&b, 1), 0);
    struct redeemevent ev;
    memset(&ev, 0, sizeof(ev));
    ev.user_coupon_id = 7;
    ev.user_id = 1001;
    snprintf(ev.order_ref, sizeof(ev.order_ref), "CHK-1");
    const char *msg = "{\"type\":\"coupon.used\"}";
    for (int i = 0; i < 20; i++)
        assert_int_equal(batch_add_use(&b, &ev, msg, strlen(msg), "1001", 4, 2, 50 + i), 0);
    assert_int_equal(b.use_count, 20);
    assert_int_equal(b.uses[19].user_coupon_id, 7);
    assert_string_equal(b.uses[19].order_ref, "CHK-1");
    assert_int_equal(b.use_msgs[19].offset, 69);

    assert_int_equal(batch_dead_use(&b, 19, "inconsistent: user coupon 7 is EXPIRED"), 0);
    assert_int_equal(b.dead_count, 1);
    const struct batch_dead *d = b.dead[0];
    assert_int_equal(d->payload_len, strlen(msg));
    assert_memory_equal(d->payload, msg, strlen(msg));
    assert_memory_equal(d->key, "1001", 4);
    assert_int_equal(d->partition, 2);
    assert_int_equal(d->offset, 69);
    assert_string_equal(d->error, "inconsistent: user coupon 7 is EXPIRED");
    /* The use stays where it was: the dead letter is a copy. */
    assert_int_equal(b.use_count, 20);
    assert_non_null(b.use_msgs[19].payload);
    batch_free(&b);
}

/* An order MySQL refuses for good: marked, its reason kept, and turned into a dead letter
 * that carries the event as it arrived (the strict codec round-trips), from the partition
 * and offset it arrived at, even after the sort moved it. */
static void test_refused_order_becomes_dead_letter(void **state)
{
    (void)state;
    struct batch b;
    assert_int_equal(batch_init(&b, 2), 0);
    const char *nos[] = { "30-9", "10-9", "20-9", "10-9" };   /* the last a redelivery */
    for (int i = 0; i < 4; i++) {
        struct orderevent ev = order(nos[i], 100 + i, 9, 3);
        assert_int_equal(batch_add_order(&b, &ev, i % 2, 40 + i), 0);
    }
    batch_seal(&b);
    for (size_t i = 0; i < b.count; i++)
        b.verdicts[i] = BATCH_ACCEPTED;
    batch_collect_accepted(&b);
    assert_int_equal(b.accepted_count, 3);
    assert_string_equal(b.accepted[2].order_no, "30-9");

    assert_int_equal(batch_refuse_order(&b, 2, "refused by MySQL (error 4025): CHECK"), 0);
    assert_int_equal(batch_refuse_order(&b, 0, "refused by MySQL (error 1406): too long"), 0);
    assert_int_equal(b.refusal_count, 2);
    assert_int_equal(b.refused[0], 1);
    assert_int_equal(b.refused[1], 0);
    assert_int_equal(b.refused[2], 1);
    assert_int_equal(b.refusals[0].index, 2);
    assert_string_equal(b.refusals[1].reason, "refused by MySQL (error 1406): too long");

    assert_int_equal(batch_dead_order(&b, 2, b.refusals[0].reason), 0);
    assert_int_equal(batch_dead_order(&b, 0, b.refusals[1].reason), 0);
    assert_int_equal(b.dead_count, 2);
    const struct batch_dead *d = b.dead[0];
    struct orderevent back;
    char err[128];
    assert_int_equal(orderevent_decode(d->payload, d->payload_len, &back, err, sizeof(err)), 0);
    assert_string_equal(back.order_no, "30-9");
    assert_int_equal(back.user_id, 100);
    assert_int_equal(back.activity_id, 9);
    assert_int_equal(back.coupon_id, 3);
    assert_int_equal(back.created_ms, 1796126400000LL);
    assert_null(d->key);
    assert_int_equal(d->partition, 0);
    assert_int_equal(d->offset, 40);
    assert_string_equal(d->error, "refused by MySQL (error 4025): CHECK");
    /* A repeated order number is dead-lettered from its first arrival. */
    assert_int_equal(b.dead[1]->partition, 1);
    assert_int_equal(b.dead[1]->offset, 41);

    batch_clear_refusals(&b);
    assert_int_equal(b.refusal_count, 0);
    assert_int_equal(b.refused[0] + b.refused[1] + b.refused[2], 0);
    /* A new collect forgets them too. */
    assert_int_equal(batch_refuse_order(&b, 1, "x"), 0);
    batch_collect_accepted(&b);
    assert_int_equal(b.refusal_count, 0);
    assert_int_equal(b.refused[1], 0);
    batch_reset(&b);
    assert_int_equal(b.origin_count, 0);
    batch_free(&b);
}

static void test_reset_and_empty(void **state)
{
    (void)state;
    struct batch b;
    assert_int_equal(batch_init(&b, 4), 0);
    assert_true(batch_is_empty(&b));
    assert_int_equal(batch_note_offset(&b, 0, 1), 0);
    assert_false(batch_is_empty(&b));   /* a skipped message still has an offset to commit */
    batch_reset(&b);
    assert_true(batch_is_empty(&b));
    add(&b, "1-1", 1, 1, 1);
    assert_false(batch_is_empty(&b));
    assert_int_equal(batch_add_dead(&b, "x", 1, NULL, 0, 0, 2, "e"), 0);
    b.messages = 2;
    b.duplicates = 1;
    size_t cap = b.cap;
    batch_reset(&b);
    assert_true(batch_is_empty(&b));
    assert_int_equal(b.count, 0);
    assert_int_equal(b.dead_count, 0);
    assert_int_equal(b.messages, 0);
    assert_int_equal(b.duplicates, 0);
    assert_int_equal(b.cap, cap);   /* arrays kept for the next batch */
    batch_free(&b);
    assert_null(b.orders);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seal_sorts_and_drops_repeats),
        cmocka_unit_test(test_seal_empty_and_single),
        cmocka_unit_test(test_order_cmp),
        cmocka_unit_test(test_collect_accepted),
        cmocka_unit_test(test_grows_past_hint),
        cmocka_unit_test(test_offsets_keep_highest_per_partition),
        cmocka_unit_test(test_dead_copies_message),
        cmocka_unit_test(test_use_becomes_dead_letter),
        cmocka_unit_test(test_refused_order_becomes_dead_letter),
        cmocka_unit_test(test_reset_and_empty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
