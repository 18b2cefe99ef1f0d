/* The outcome events as the outbox stores them: each event's id (the same however often
 * it is written, another for another outcome), its JSON (every field, parsed back with
 * cJSON) and the INSERT IGNORE that stores a list of them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "store/outbox.h"

/* 2026-12-01T12:00:00.250Z */
#define T0 1796126400250LL

static struct outbox_event succeeded(void)
{
    struct outbox_event ev = { .type = OUTBOX_ORDER_SUCCEEDED, .at_ms = T0 + 900, .user_id = 1001,
                               .activity_id = 7, .coupon_id = 3, .user_coupon_id = 42,
                               .accepted_ms = T0 };
    snprintf(ev.order_no, sizeof(ev.order_no), "123456789-7");
    return ev;
}

static struct outbox_event used(int64_t at_ms)
{
    struct outbox_event ev = { .type = OUTBOX_COUPON_USED, .at_ms = at_ms, .user_id = 1001,
                               .coupon_id = 3, .user_coupon_id = 42, .discount = 1000,
                               .payable = 11000 };
    snprintf(ev.order_ref, sizeof(ev.order_ref), "CHK-1");
    return ev;
}

static cJSON *payload_of(const struct outbox_event *ev)
{
    char buf[OUTBOX_PAYLOAD_LEN];
    int n = outbox_payload(ev, buf, sizeof(buf));
    assert_true(n > 0);
    assert_int_equal((size_t)n, strlen(buf));
    cJSON *json = cJSON_Parse(buf);
    assert_non_null(json);
    return json;
}

static double number(const cJSON *json, const char *name)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(json, name);
    assert_true(cJSON_IsNumber(item));
    return item->valuedouble;
}

static const char *text(const cJSON *json, const char *name)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(json, name);
    assert_true(cJSON_IsString(item));
    return item->valuestring;
}

static void test_event_ids_name_the_outcome(void **state)
{
    (void)state;
    char id[OUTBOX_EVENT_ID_LEN];
    struct outbox_event ev = succeeded();
    assert_int_equal(outbox_event_id(&ev, id, sizeof(id)), strlen("order.succeeded:123456789-7"));
    assert_string_equal(id, "order.succeeded:123456789-7");
    /* Written again later (a replayed batch): the same id. */
    ev.at_ms += 60000;
    outbox_event_id(&ev, id, sizeof(id));
    assert_string_equal(id, "order.succeeded:123456789-7");
    ev.type = OUTBOX_ORDER_FAILED;
    outbox_event_id(&ev, id, sizeof(id));
    assert_string_equal(id, "order.failed:123456789-7");
    /* A coupon used, refunded and used again is two uses: two ids. */
    struct outbox_event first = used(T0), again = used(T0 + 5000);
    outbox_event_id(&first, id, sizeof(id));
    assert_string_equal(id, "coupon.used:42:1796126400250");
    outbox_event_id(&again, id, sizeof(id));
    assert_string_equal(id, "coupon.used:42:1796126405250");
    assert_int_equal(outbox_event_id(&first, id, 10), -1);
}

static void test_order_succeeded_payload(void **state)
{
    (void)state;
    struct outbox_event ev = succeeded();
    cJSON *json = payload_of(&ev);
    assert_string_equal(text(json, "eventId"), "order.succeeded:123456789-7");
    assert_string_equal(text(json, "type"), "order.succeeded");
    assert_string_equal(text(json, "orderNo"), "123456789-7");
    assert_true(number(json, "at") == (double)(T0 + 900));
    assert_true(number(json, "acceptedAt") == (double)T0);
    assert_true(number(json, "userId") == 1001);
    assert_true(number(json, "activityId") == 7);
    assert_true(number(json, "couponId") == 3);
    assert_true(number(json, "userCouponId") == 42);
    assert_int_equal(cJSON_GetArraySize(json), 9);
    cJSON_Delete(json);
    /* A sale without a coupon issued none: null, not 0. */
    ev.coupon_id = ev.user_coupon_id = 0;
    json = payload_of(&ev);
    assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(json, "couponId")));
    assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(json, "userCouponId")));
    cJSON_Delete(json);
}

static void test_order_failed_payload(void **state)
{
    (void)state;
    struct outbox_event ev = succeeded();
    ev.type = OUTBOX_ORDER_FAILED;
    snprintf(ev.reason, sizeof(ev.reason), "ROLLED_BACK");
    cJSON *json = payload_of(&ev);
    assert_string_equal(text(json, "type"), "order.failed");
    assert_string_equal(text(json, "reason"), "ROLLED_BACK");
    assert_string_equal(text(json, "orderNo"), "123456789-7");
    assert_true(number(json, "userId") == 1001);
    assert_true(number(json, "activityId") == 7);
    assert_null(cJSON_GetObjectItemCaseSensitive(json, "userCouponId"));
    assert_int_equal(cJSON_GetArraySize(json), 8);
    cJSON_Delete(json);
}

static void test_coupon_used_payload(void **state)
{
    (void)state;
    struct outbox_event ev = used(T0);
    memset(ev.order_ref, 'r', USERCOUPON_REF_LEN - 1);   /* the longest reference */
    ev.order_ref[USERCOUPON_REF_LEN - 1] = '\0';
    cJSON *json = payload_of(&ev);
    assert_string_equal(text(json, "type"), "coupon.used");
    assert_int_equal(strlen(text(json, "orderRef")), USERCOUPON_REF_LEN - 1);
    assert_true(number(json, "userCouponId") == 42);
    assert_true(number(json, "couponId") == 3);
    assert_true(number(json, "discount") == 1000);
    assert_true(number(json, "payable") == 11000);
    assert_true(number(json, "at") == (double)T0);
    assert_int_equal(cJSON_GetArraySize(json), 9);
    cJSON_Delete(json);
    char small[64];
    assert_int_equal(outbox_payload(&ev, small, sizeof(small)), -1);
}

static void test_shop_events_carry_the_reason_escaped(void **state)
{
    (void)state;
    struct outbox_event ev = succeeded();
    ev.type = OUTBOX_ORDER_CANCELLED;
    ev.at_ms = T0 + 5000;
    ev.note = "fraud \"ring\" \\ 7";
    char id[OUTBOX_EVENT_ID_LEN];
    outbox_event_id(&ev, id, sizeof(id));
    assert_string_equal(id, "order.cancelled:123456789-7");
    cJSON *json = payload_of(&ev);
    assert_string_equal(text(json, "type"), "order.cancelled");
    assert_string_equal(text(json, "reason"), "fraud \"ring\" \\ 7");
    assert_true(number(json, "userCouponId") == 42);
    assert_true(number(json, "activityId") == 7);
    assert_int_equal(cJSON_GetArraySize(json), 9);
    cJSON_Delete(json);
    /* A coupon is revoked once: its id alone names it. */
    ev.type = OUTBOX_COUPON_REVOKED;
    ev.note = NULL;
    outbox_event_id(&ev, id, sizeof(id));
    assert_string_equal(id, "coupon.revoked:42");
    json = payload_of(&ev);
    assert_string_equal(text(json, "reason"), "");
    assert_null(cJSON_GetObjectItemCaseSensitive(json, "orderNo"));
    cJSON_Delete(json);
    /* The longest reason, of 4-byte characters and quotes, fits. */
    char longest[4 * 128 + 1];
    for (int i = 0; i < 128; i++)
        memcpy(longest + 4 * i, i % 2 ? "\xf0\x9f\x98\x80" : "\"\"\"\"", 4);
    longest[4 * 128] = '\0';
    ev.type = OUTBOX_ORDER_CANCELLED;
    ev.note = longest;
    json = payload_of(&ev);
    assert_string_equal(text(json, "reason"), longest);
    cJSON_Delete(json);
    /* A refund: the checkout it gave back. */
    struct outbox_event back = used(T0 + 9000);
    back.type = OUTBOX_COUPON_REFUNDED;
    outbox_event_id(&back, id, sizeof(id));
    assert_string_equal(id, "coupon.refunded:42:1796126409250");
    json = payload_of(&back);
    assert_string_equal(text(json, "orderRef"), "CHK-1");
    assert_null(cJSON_GetObjectItemCaseSensitive(json, "discount"));
    cJSON_Delete(json);
}

static void test_row_text(void **state)
{
    (void)state;
    struct outbox o = { 0 };
    struct outbox_event a = succeeded(), b = used(T0);
    b.user_id = 1002;
    assert_int_equal(outbox_add(&o, &a), 0);
    assert_int_equal(outbox_add(&o, &b), 0);
    assert_int_equal(outbox_lines(&o.lines, o.events, o.count), 0);
    /* One line per event, "<key>\t<payload>\n", in the order they were added. */
    char pa[OUTBOX_PAYLOAD_LEN], pb[OUTBOX_PAYLOAD_LEN], want[2 * OUTBOX_PAYLOAD_LEN + 32];
    outbox_payload(&a, pa, sizeof(pa));
    outbox_payload(&b, pb, sizeof(pb));
    snprintf(want, sizeof(want), "1001\t%s\n1002\t%s\n", pa, pb);
    assert_string_equal(o.lines.data, want);
    assert_int_equal(o.lines.len, strlen(want));
    /* Filled again from empty. */
    assert_int_equal(outbox_lines(&o.lines, o.events + 1, 1), 0);
    snprintf(want, sizeof(want), "1002\t%s\n", pb);
    assert_string_equal(o.lines.data, want);
    outbox_reset(&o);
    assert_int_equal(o.count, 0);
    for (int i = 0; i < 1000; i++)
        assert_int_equal(outbox_add(&o, &a), 0);
    assert_int_equal(o.count, 1000);
    assert_string_equal(o.events[999].order_no, "123456789-7");
    outbox_free(&o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_event_ids_name_the_outcome),
        cmocka_unit_test(test_order_succeeded_payload),
        cmocka_unit_test(test_order_failed_payload),
        cmocka_unit_test(test_coupon_used_payload),
        cmocka_unit_test(test_shop_events_carry_the_reason_escaped),
        cmocka_unit_test(test_row_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
