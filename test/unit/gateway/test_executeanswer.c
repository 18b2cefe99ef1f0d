/* The answers of POST /seckill/execute: the Spring service's result fields (docs/design.md) on every one, the
 * HTTP code a refusal gets under http.refusal-status, and JSON that stays JSON whatever the message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <string.h>

#include "common/config.h"
#include "gateway/executeanswer.h"

/* 2026-12-01T12:00:00.250Z */
static const struct executeanswer_about about = { 42, 7, 1796126400250 };

static cJSON *parse_refusal(const struct executeanswer_about *a, enum reply_status status,
                            const char *message, int64_t retry_after, const char *order_no)
{
    char buf[1024];
    int len = executeanswer_render_refusal(buf, sizeof(buf), a, status, message, retry_after, order_no);
    assert_true(len > 0);
    assert_int_equal((size_t)len, strlen(buf));
    cJSON *j = cJSON_Parse(buf);
    assert_non_null(j);
    return j;
}

static void test_refusal_carries_the_spring_fields(void **state)
{
    (void)state;
    cJSON *j = parse_refusal(&about, REPLY_OUT_OF_STOCK, "sold out", 0, NULL);
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(j, "success")));
    assert_string_equal(cJSON_GetObjectItem(j, "status")->valuestring, "OUT_OF_STOCK");
    assert_string_equal(cJSON_GetObjectItem(j, "message")->valuestring, "sold out");
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "orderNo")));
    assert_int_equal(cJSON_GetObjectItem(j, "userId")->valuedouble, 42);
    assert_int_equal(cJSON_GetObjectItem(j, "activityId")->valuedouble, 7);
    assert_string_equal(cJSON_GetObjectItem(j, "seckillTime")->valuestring, "2026-12-01T12:00:00.250Z");
    assert_null(cJSON_GetObjectItem(j, "retryAfter"));
    cJSON_Delete(j);
}

static void test_unknown_ids_are_null_and_messages_escaped(void **state)
{
    (void)state;
    struct executeanswer_about none = { 0, 0, about.at_ms };
    cJSON *j = parse_refusal(&none, REPLY_INVALID, "userId '\"\\\n' is not an id", 0, NULL);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "userId")));
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "activityId")));
    assert_string_equal(cJSON_GetObjectItem(j, "message")->valuestring, "userId '\"\\\n' is not an id");
    cJSON_Delete(j);
}

static void test_duplicate_names_its_order_and_limits_their_wait(void **state)
{
    (void)state;
    cJSON *j = parse_refusal(&about, REPLY_DUPLICATE, "held", 0, "12345-7");
    assert_string_equal(cJSON_GetObjectItem(j, "orderNo")->valuestring, "12345-7");
    cJSON_Delete(j);
    j = parse_refusal(&about, REPLY_RATE_LIMITED, "too many requests", 3, NULL);
    assert_int_equal(cJSON_GetObjectItem(j, "retryAfter")->valuedouble, 3);
    cJSON_Delete(j);
}

static void test_accepted(void **state)
{
    (void)state;
    char buf[384];
    assert_true(executeanswer_render_accepted(buf, sizeof(buf), &about, "order accepted", "99-7") > 0);
    cJSON *j = cJSON_Parse(buf);
    assert_non_null(j);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "success")));
    assert_string_equal(cJSON_GetObjectItem(j, "message")->valuestring, "order accepted");
    assert_string_equal(cJSON_GetObjectItem(j, "status")->valuestring, "PROCESSING");
    assert_string_equal(cJSON_GetObjectItem(j, "orderNo")->valuestring, "99-7");
    assert_int_equal(cJSON_GetObjectItem(j, "userId")->valuedouble, 42);
    assert_string_equal(cJSON_GetObjectItem(j, "seckillTime")->valuestring, "2026-12-01T12:00:00.250Z");
    cJSON_Delete(j);
}

static void test_too_small_a_buffer_is_refused(void **state)
{
    (void)state;
    char buf[40];
    assert_int_equal(executeanswer_render_refusal(buf, sizeof(buf), &about, REPLY_ENDED, "the sale has ended",
                                                  0, NULL), -1);
    assert_int_equal(executeanswer_render_accepted(buf, sizeof(buf), &about, "order accepted", "99-7"), -1);
    assert_int_equal(executeanswer_render_failed(buf, sizeof(buf), &about, "seckill failed: x", 1), -1);
}

static void test_codes(void **state)
{
    (void)state;
    struct config cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.http_refusal_status = "4xx";
    assert_int_equal(executeanswer_code(&cfg, REPLY_OUT_OF_STOCK), 409);
    assert_int_equal(executeanswer_code(&cfg, REPLY_RATE_LIMITED), 429);
    assert_int_equal(executeanswer_code(&cfg, REPLY_INVALID), 400);
    assert_int_equal(executeanswer_code(&cfg, REPLY_UNAVAILABLE), 503);
    cfg.http_refusal_status = "200";
    assert_int_equal(executeanswer_code(&cfg, REPLY_OUT_OF_STOCK), 200);
    assert_int_equal(executeanswer_code(&cfg, REPLY_DUPLICATE), 200);
    assert_int_equal(executeanswer_code(&cfg, REPLY_BLOCKED), 200);
    assert_int_equal(executeanswer_code(&cfg, REPLY_INVALID), 200);
    assert_int_equal(executeanswer_code(&cfg, REPLY_UNAUTHORIZED), 200);
    /* Redis or Kafka away is no refusal of the request: a client must retry. */
    assert_int_equal(executeanswer_code(&cfg, REPLY_UNAVAILABLE), 503);
}

/* http.language = zh: the Spring service's own words where it had them, whatever the English
 * detail said; INVALID keeps its detail, the part that says what to fix. */
static void test_messages_in_chinese(void **state)
{
    (void)state;
    char buf[256];
    const enum reply_language zh = REPLY_LANGUAGE_ZH, en = REPLY_LANGUAGE_EN;
    assert_string_equal(executeanswer_message(zh, REPLY_OUT_OF_STOCK, NULL, buf, sizeof(buf)), "库存不足");
    assert_string_equal(executeanswer_message(zh, REPLY_RATE_LIMITED, "too many requests from this address",
                                              buf, sizeof(buf)),
                        "请求过于频繁，请稍后再试");
    assert_string_equal(executeanswer_message(zh, REPLY_DUPLICATE, NULL, buf, sizeof(buf)),
                        "您已抢购过该活动，请勿重复提交");
    assert_string_equal(executeanswer_message(zh, REPLY_INVALID, "userId is required", buf, sizeof(buf)),
                        "请求参数无效: userId is required");
    assert_string_equal(executeanswer_message(zh, REPLY_INVALID, NULL, buf, sizeof(buf)), "请求参数无效");
    /* English: the detail, else the status's own, as before. */
    assert_string_equal(executeanswer_message(en, REPLY_RATE_LIMITED, "slow down", buf, sizeof(buf)),
                        "slow down");
    assert_string_equal(executeanswer_message(en, REPLY_OUT_OF_STOCK, NULL, buf, sizeof(buf)), "sold out");
    assert_string_equal(reply_phrase(REPLY_PHRASE_ACCEPTED, zh), "秒杀成功，订单处理中");
    assert_string_equal(reply_phrase(REPLY_PHRASE_FAILED, zh), "秒杀失败: ");
    assert_string_equal(reply_phrase(REPLY_PHRASE_STOCK_FAILED, zh), "获取库存失败: ");
    /* Every status has both, and no Chinese message is an English one left in place. */
    for (int st = 0; st < REPLY_STATUS_COUNT; st++) {
        const char *chinese = reply_status_message_in((enum reply_status)st, zh);
        assert_true(chinese[0] != '\0' && (unsigned char)chinese[0] >= 0x80);
        assert_string_equal(reply_status_message_in((enum reply_status)st, en),
                            reply_status_message((enum reply_status)st));
    }
    assert_int_equal(reply_language_named("zh"), zh);
    assert_int_equal(reply_language_named("en"), en);
}

/* http.unavailable-status = 200: the Spring service's answer to a failure, with the fields of
 * every other answer and nothing sold (orderNo null). */
static void test_failed(void **state)
{
    (void)state;
    char buf[1024];
    int len = executeanswer_render_failed(buf, sizeof(buf), &about, "秒杀失败: order could not be queued", 1);
    assert_true(len > 0);
    assert_int_equal((size_t)len, strlen(buf));
    cJSON *j = cJSON_Parse(buf);
    assert_non_null(j);
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(j, "success")));
    assert_string_equal(cJSON_GetObjectItem(j, "status")->valuestring, "FAILED");
    assert_string_equal(cJSON_GetObjectItem(j, "message")->valuestring, "秒杀失败: order could not be queued");
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "orderNo")));
    assert_int_equal(cJSON_GetObjectItem(j, "retryAfter")->valuedouble, 1);
    assert_int_equal(cJSON_GetObjectItem(j, "userId")->valuedouble, 42);
    assert_int_equal(cJSON_GetObjectItem(j, "activityId")->valuedouble, 7);
    assert_string_equal(cJSON_GetObjectItem(j, "seckillTime")->valuestring, "2026-12-01T12:00:00.250Z");
    cJSON_Delete(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refusal_carries_the_spring_fields),
        cmocka_unit_test(test_unknown_ids_are_null_and_messages_escaped),
        cmocka_unit_test(test_duplicate_names_its_order_and_limits_their_wait),
        cmocka_unit_test(test_accepted),
        cmocka_unit_test(test_too_small_a_buffer_is_refused),
        cmocka_unit_test(test_codes),
        cmocka_unit_test(test_messages_in_chinese),
        cmocka_unit_test(test_failed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
