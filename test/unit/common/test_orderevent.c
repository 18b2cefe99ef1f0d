/* The order.created Kafka message: encode/decode round trip and strict decoding. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/orderevent.h"

/* Decodes exactly len bytes from a heap copy without a terminating NUL, so that ASan
 * catches any read past the message (Kafka payloads are not NUL-terminated). */
static int decode_exact(const char *msg, struct orderevent *ev, char *err, size_t errlen)
{
    size_t len = strlen(msg);
    char *copy = malloc(len ? len : 1);
    assert_non_null(copy);
    memcpy(copy, msg, len);
    int rc = orderevent_decode(copy, len, ev, err, errlen);
    free(copy);
    return rc;
}

static struct orderevent make_event(uint64_t id, int64_t user, int64_t activity, int64_t coupon,
                                    int64_t created)
{
    struct orderevent ev;
    memset(&ev, 0, sizeof(ev));
    assert_true(orderno_format(ev.order_no, sizeof(ev.order_no), id, activity) > 0);
    ev.user_id = user;
    ev.activity_id = activity;
    ev.coupon_id = coupon;
    ev.created_ms = created;
    return ev;
}

#define GOOD_NO "\"orderNo\":\"99-2\""
#define GOOD_REST "\"activityId\":2,\"couponId\":3,\"createdAt\":1733000000000"

static void test_round_trip(void **state)
{
    (void)state;
    const int64_t max_exact = 9007199254740991LL; /* 2^53 - 1 */
    const struct orderevent cases[] = {
        make_event(1, 1, 1, 0, 0),
        make_event(123456789012345678ULL, 42, 7, 3, 1733000000000LL),
        make_event((uint64_t)INT64_MAX, max_exact, max_exact, max_exact, max_exact),
        make_event(987654321, 1000000, 9000000000123LL, 7, 1796126400123LL),
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char buf[512];
        int n = orderevent_encode(&cases[i], buf, sizeof(buf));
        assert_true(n > 0);
        assert_int_equal((size_t)n, strlen(buf));
        struct orderevent back;
        char err[128] = "";
        if (decode_exact(buf, &back, err, sizeof(err)) != 0)
            fail_msg("decode of %s failed: %s", buf, err);
        assert_string_equal(back.order_no, cases[i].order_no);
        assert_true(back.user_id == cases[i].user_id);
        assert_true(back.activity_id == cases[i].activity_id);
        assert_true(back.coupon_id == cases[i].coupon_id);
        assert_true(back.created_ms == cases[i].created_ms);
    }
    /* Java's long (http.long-ids): ids above 2^53 - 1 travel as strings, exactly. */
    const struct orderevent longs[] = {
        make_event(5, INT64_MAX, 9007199254740993LL, 3, 1733000000000LL),
        make_event(6, max_exact + 1, max_exact, 3, 1),
    };
    for (size_t i = 0; i < sizeof(longs) / sizeof(longs[0]); i++) {
        char buf[512];
        assert_true(orderevent_encode(&longs[i], buf, sizeof(buf)) > 0);
        struct orderevent back;
        char err[128] = "";
        if (decode_exact(buf, &back, err, sizeof(err)) != 0)
            fail_msg("decode of %s failed: %s", buf, err);
        assert_true(back.user_id == longs[i].user_id && back.activity_id == longs[i].activity_id);
    }
    char big[256];
    struct orderevent b = make_event(5, INT64_MAX, 2, 3, 4);
    assert_true(orderevent_encode(&b, big, sizeof(big)) > 0);
    assert_non_null(strstr(big, "\"userId\":\"9223372036854775807\",\"activityId\":2,"));
    /* The documented wire form, key order irrelevant, white space allowed. */
    struct orderevent ev;
    char err[128] = "";
    assert_int_equal(decode_exact(" {\"createdAt\": 1733000000000, \"couponId\": 3,\n"
                                  "  \"activityId\": 2, \"userId\": 1, \"orderNo\": \"99-2\"}\n",
                                  &ev, err, sizeof(err)),
                     0);
    assert_string_equal(ev.order_no, "99-2");
    assert_true(ev.user_id == 1 && ev.activity_id == 2 && ev.coupon_id == 3);
    assert_true(ev.created_ms == 1733000000000LL);
    char buf[256];
    struct orderevent one = make_event(99, 1, 2, 3, 1733000000000LL);
    assert_true(orderevent_encode(&one, buf, sizeof(buf)) > 0);
    assert_string_equal(buf, "{\"orderNo\":\"99-2\",\"userId\":1,\"activityId\":2,\"couponId\":3,"
                             "\"createdAt\":1733000000000}");
    assert_int_equal(one.slot, 0);
    assert_int_equal(decode_exact(buf, &ev, err, sizeof(err)), 0);
    assert_int_equal(ev.slot, 1);  /* no userSlot: the user's first order */
}

/* An order in slot 2.. of its user (holder.h) says so; slot 1 is written as before. */
static void test_slot_round_trip(void **state)
{
    (void)state;
    for (int slot = 1; slot <= 100; slot++) {
        struct orderevent ev = make_event(99, 1, 2, 3, 1733000000000LL), back;
        ev.slot = slot;
        char buf[256], err[128] = "";
        assert_true(orderevent_encode(&ev, buf, sizeof(buf)) > 0);
        assert_true((strstr(buf, "userSlot") != NULL) == (slot > 1));
        if (decode_exact(buf, &back, err, sizeof(err)) != 0)
            fail_msg("decode of %s failed: %s", buf, err);
        assert_int_equal(back.slot, slot);
    }
    struct orderevent ev = make_event(99, 1, 2, 3, 1);
    char buf[256];
    ev.slot = 101;
    assert_int_equal(orderevent_encode(&ev, buf, sizeof(buf)), -1);
    static const char *const bad[] = {
        "{" GOOD_NO ",\"userId\":1," GOOD_REST ",\"userSlot\":1}",
        "{" GOOD_NO ",\"userId\":1," GOOD_REST ",\"userSlot\":0}",
        "{" GOOD_NO ",\"userId\":1," GOOD_REST ",\"userSlot\":101}",
        "{" GOOD_NO ",\"userId\":1," GOOD_REST ",\"userSlot\":2.5}",
        "{" GOOD_NO ",\"userId\":1," GOOD_REST ",\"userSlot\":\"2\"}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char err[128] = "";
        if (decode_exact(bad[i], &ev, err, sizeof(err)) == 0)
            fail_msg("decode accepted %s", bad[i]);
        assert_non_null(strstr(err, "userSlot"));
    }
}


static void test_decode_rejects(void **state)
{
    (void)state;
    static const struct { const char *why, *msg; } bad[] = {
        { "empty", "" },
        { "not JSON", "hello" },
        { "truncated", "{\"orderNo\":\"99-2\",\"userId\":1" },
        { "array", "[{\"orderNo\":\"99-2\",\"userId\":1," GOOD_REST "}]" },
        { "string", "\"99-2\"" },
        { "number", "42" },
        { "null", "null" },
        { "junk after", "{" GOOD_NO ",\"userId\":1," GOOD_REST "}x" },
        { "two objects", "{" GOOD_NO ",\"userId\":1," GOOD_REST "}{}" },
        { "missing orderNo", "{\"userId\":1," GOOD_REST "}" },
        { "missing userId", "{" GOOD_NO "," GOOD_REST "}" },
        { "missing activityId",
          "{" GOOD_NO ",\"userId\":1,\"couponId\":3,\"createdAt\":1733000000000}" },
        { "missing couponId",
          "{" GOOD_NO ",\"userId\":1,\"activityId\":2,\"createdAt\":1733000000000}" },
        { "missing createdAt", "{" GOOD_NO ",\"userId\":1,\"activityId\":2,\"couponId\":3}" },
        { "empty object", "{}" },
        { "orderNo number", "{\"orderNo\":99,\"userId\":1," GOOD_REST "}" },
        { "orderNo null", "{\"orderNo\":null,\"userId\":1," GOOD_REST "}" },
        { "orderNo object", "{\"orderNo\":{},\"userId\":1," GOOD_REST "}" },
        { "userId string", "{" GOOD_NO ",\"userId\":\"1\"," GOOD_REST "}" },
        { "userId bool", "{" GOOD_NO ",\"userId\":true," GOOD_REST "}" },
        { "userId null", "{" GOOD_NO ",\"userId\":null," GOOD_REST "}" },
        { "userId array", "{" GOOD_NO ",\"userId\":[1]," GOOD_REST "}" },
        { "activityId string",
          "{" GOOD_NO ",\"userId\":1,\"activityId\":\"2\",\"couponId\":3,\"createdAt\":1}" },
        { "couponId string",
          "{" GOOD_NO ",\"userId\":1,\"activityId\":2,\"couponId\":\"3\",\"createdAt\":1}" },
        { "createdAt string",
          "{" GOOD_NO ",\"userId\":1,\"activityId\":2,\"couponId\":3,\"createdAt\":\"1\"}" },
        { "userId 0", "{" GOOD_NO ",\"userId\":0," GOOD_REST "}" },
        { "userId -1", "{" GOOD_NO ",\"userId\":-1," GOOD_REST "}" },
        { "activityId 0",
          "{\"orderNo\":\"99-0\",\"userId\":1,\"activityId\":0,\"couponId\":3,\"createdAt\":1}" },
        { "activityId -2",
          "{\"orderNo\":\"99-2\",\"userId\":1,\"activityId\":-2,\"couponId\":3,\"createdAt\":1}" },
        { "couponId -1",
          "{" GOOD_NO ",\"userId\":1,\"activityId\":2,\"couponId\":-1,\"createdAt\":1}" },
        { "createdAt -1",
          "{" GOOD_NO ",\"userId\":1,\"activityId\":2,\"couponId\":3,\"createdAt\":-1}" },
        { "userId fraction", "{" GOOD_NO ",\"userId\":1.5," GOOD_REST "}" },
        { "activityId fraction",
          "{" GOOD_NO ",\"userId\":1,\"activityId\":2.25,\"couponId\":3,\"createdAt\":1}" },
        { "couponId fraction",
          "{" GOOD_NO ",\"userId\":1,\"activityId\":2,\"couponId\":0.5,\"createdAt\":1}" },
        { "createdAt fraction",
          "{" GOOD_NO ",\"userId\":1,\"activityId\":2,\"couponId\":3,\"createdAt\":1.001}" },
        { "userId 2^53", "{" GOOD_NO ",\"userId\":9007199254740992," GOOD_REST "}" },
        { "userId 2^53-1 as a string", "{" GOOD_NO ",\"userId\":\"9007199254740991\"," GOOD_REST "}" },
        { "userId 2^63 as a string", "{" GOOD_NO ",\"userId\":\"9223372036854775808\"," GOOD_REST "}" },
        { "userId signed string", "{" GOOD_NO ",\"userId\":\"+9223372036854775807\"," GOOD_REST "}" },
        { "userId 2^53+1", "{" GOOD_NO ",\"userId\":9007199254740993," GOOD_REST "}" },
        { "userId 1e300", "{" GOOD_NO ",\"userId\":1e300," GOOD_REST "}" },
        { "createdAt 2^63",
          "{" GOOD_NO ",\"userId\":1,\"activityId\":2,\"couponId\":3,"
          "\"createdAt\":9223372036854775808}" },
        { "couponId 2^53+2",
          "{" GOOD_NO ",\"userId\":1,\"activityId\":2,\"couponId\":9007199254740994,"
          "\"createdAt\":1}" },
        { "orderNo of another activity", "{\"orderNo\":\"99-3\",\"userId\":1," GOOD_REST "}" },
        { "orderNo without activity", "{\"orderNo\":\"99\",\"userId\":1," GOOD_REST "}" },
        { "orderNo junk", "{\"orderNo\":\"x-2\",\"userId\":1," GOOD_REST "}" },
        { "orderNo empty", "{\"orderNo\":\"\",\"userId\":1," GOOD_REST "}" },
        { "orderNo leading zero", "{\"orderNo\":\"099-2\",\"userId\":1," GOOD_REST "}" },
        { "orderNo over-long (48 chars)",
          "{\"orderNo\":\"1000000000000000000000000000000000000000000000-2\",\"userId\":1,"
          GOOD_REST "}" },
        { "orderNo very long",
          "{\"orderNo\":\"1234567890123456789012345678901234567890123456789012345678901234"
          "5678901234567890-2\",\"userId\":1," GOOD_REST "}" },
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct orderevent ev;
        char err[128] = "";
        if (decode_exact(bad[i].msg, &ev, err, sizeof(err)) == 0)
            fail_msg("decode accepted (%s): %s", bad[i].why, bad[i].msg);
        if (err[0] == '\0')
            fail_msg("decode rejected (%s) without a message", bad[i].why);
    }
    /* The message names the field at fault. */
    struct orderevent ev;
    char err[128] = "";
    assert_int_equal(decode_exact("{" GOOD_NO "," GOOD_REST "}", &ev, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "userId"));
    assert_int_equal(decode_exact("{\"orderNo\":\"99-3\",\"userId\":1," GOOD_REST "}", &ev, err,
                                  sizeof(err)),
                     -1);
    assert_non_null(strstr(err, "orderNo"));
}

static void test_decode_limits_accepted(void **state)
{
    (void)state;
    /* The largest exact JSON integer and a zero coupon / createdAt are fine. */
    struct orderevent ev;
    char err[128] = "";
    assert_int_equal(decode_exact("{\"orderNo\":\"1-9007199254740991\",\"userId\":9007199254740991,"
                                  "\"activityId\":9007199254740991,\"couponId\":0,\"createdAt\":0}",
                                  &ev, err, sizeof(err)),
                     0);
    assert_true(ev.user_id == 9007199254740991LL);
    assert_true(ev.activity_id == 9007199254740991LL);
    assert_true(ev.coupon_id == 0 && ev.created_ms == 0);
    assert_string_equal(ev.order_no, "1-9007199254740991");
    /* A 39-character order number (the longest an orderno can be) is fine. */
    assert_int_equal(decode_exact("{\"orderNo\":\"9223372036854775807-9007199254740991\","
                                  "\"userId\":1,\"activityId\":9007199254740991,\"couponId\":1,"
                                  "\"createdAt\":1}",
                                  &ev, err, sizeof(err)),
                     0);
    assert_string_equal(ev.order_no, "9223372036854775807-9007199254740991");
}

/* An order of bucket b >= 1 names its bucket's tag; bucket 0's (and every event written
 * before buckets) has no such field and reads as bucket 0. */
static void test_bucket_tag(void **state)
{
    (void)state;
    struct orderevent ev = make_event(99, 1, 2, 3, 1733000000000LL), back;
    snprintf(ev.bucket_tag, sizeof(ev.bucket_tag), "2.1.5");
    char buf[256], err[128] = "";
    assert_true(orderevent_encode(&ev, buf, sizeof(buf)) > 0);
    assert_string_equal(buf, "{\"orderNo\":\"99-2\",\"userId\":1,\"activityId\":2,\"couponId\":3,"
                             "\"createdAt\":1733000000000,\"bucketTag\":\"2.1.5\"}");
    assert_int_equal(decode_exact(buf, &back, err, sizeof(err)), 0);
    assert_string_equal(back.bucket_tag, "2.1.5");
    assert_int_equal(decode_exact("{" GOOD_NO ",\"userId\":1," GOOD_REST "}", &back, err, sizeof(err)), 0);
    assert_string_equal(back.bucket_tag, "");
    assert_int_equal(decode_exact("{" GOOD_NO ",\"userId\":1," GOOD_REST ",\"bucketTag\":\"2\"}", &back, err,
                                  sizeof(err)), 0);
    assert_string_equal(back.bucket_tag, "");
    static const char *const bad[] = {
        "{" GOOD_NO ",\"userId\":1," GOOD_REST ",\"bucketTag\":\"3.1.5\"}",   /* another activity's */
        "{" GOOD_NO ",\"userId\":1," GOOD_REST ",\"bucketTag\":\"2.x\"}",
        "{" GOOD_NO ",\"userId\":1," GOOD_REST ",\"bucketTag\":2}",
        "{" GOOD_NO ",\"userId\":1," GOOD_REST ",\"bucketTag\":\"2}{1\"}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (decode_exact(bad[i], &back, err, sizeof(err)) == 0)
            fail_msg("accepted %s", bad[i]);
}

static void test_encode_small_buffer(void **state)
{
    (void)state;
    struct orderevent ev = make_event(123456789, 42, 7, 3, 1733000000000LL);
    char big[256];
    int n = orderevent_encode(&ev, big, sizeof(big));
    assert_true(n > 0);
    /* Exactly n + 1 bytes fit; n bytes (no room for the NUL) and less do not. */
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(orderevent_encode(&ev, buf, (size_t)n + 1), n);
    assert_string_equal(buf, big);
    assert_int_equal(orderevent_encode(&ev, buf, (size_t)n), -1);
    assert_int_equal(orderevent_encode(&ev, buf, 10), -1);
    assert_int_equal(orderevent_encode(&ev, buf, 1), -1);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_slot_round_trip),
        cmocka_unit_test(test_decode_rejects),
        cmocka_unit_test(test_decode_limits_accepted),
        cmocka_unit_test(test_encode_small_buffer),
        cmocka_unit_test(test_bucket_tag),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
