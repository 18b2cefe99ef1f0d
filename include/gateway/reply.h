#ifndef SK_REPLY_H
#define SK_REPLY_H

#include <event2/http.h>
#include <stdbool.h>
#include <stdint.h>

struct cJSON;

/* HTTP replies of the gateway: every body is JSON with `success`, and on failure
 * `status` and `message`. The status names and their HTTP codes are fixed by the API.
 * A NULL request (already answered at its deadline or at shutdown, pending.h) is sent
 * nothing: a late callback may call these without checking. */

/* Every answer status: X(name, HTTP code, default message, message in Chinese). The name is
 * the API's `status`; the message is what a caller gets by passing NULL (reply_error), the
 * one clients see most for that status. The Chinese one is what POST /seckill/execute
 * answers under http.language = zh, in the words of the Spring service Seckill replaces
 * where it had them (OUT_OF_STOCK, RATE_LIMITED); execute's NOT_FOUND is the activity. */
#define REPLY_STATUSES(X)                                                                                \
    X(OUT_OF_STOCK, 409, "sold out", "库存不足")                                                         \
    X(DUPLICATE, 409, "you already hold an order for this activity", "您已抢购过该活动，请勿重复提交")   \
    X(NOT_STARTED, 409, "the sale has not started", "秒杀活动尚未开始")                                  \
    X(ENDED, 409, "the sale has ended", "秒杀活动已结束")                                                \
    X(CANCELLED, 409, "the sale was cancelled", "秒杀活动已取消")                                        \
    X(INACTIVE, 409, "the coupon of this sale is deactivated", "该活动的优惠券已停用")                   \
    X(USED, 409, "coupon already used by another order", "优惠券已被其他订单使用")                       \
    X(EXPIRED, 409, "coupon expired", "优惠券已过期")                                                    \
    X(REVOKED, 409, "coupon revoked by the shop", "优惠券已被商家撤销")                                  \
    X(NOT_USED, 409, "coupon not used by any order", "优惠券未被使用")                                   \
    X(BELOW_MIN_ORDER, 409, "order amount below the coupon's minimum", "订单金额未达到优惠券的最低消费") \
    X(RATE_LIMITED, 429, "too many requests", "请求过于频繁，请稍后再试")                                \
    X(BLOCKED, 429, "too many attempts, temporarily blocked", "尝试次数过多，已被暂时限制")              \
    X(INVALID, 400, "invalid request", "请求参数无效")                                                   \
    X(UNAUTHORIZED, 401, "unauthorized", "身份验证失败")                                                 \
    X(FORBIDDEN, 403, "forbidden", "购买令牌缺失、无效或已使用")                                         \
    X(NOT_FOUND, 404, "no such endpoint", "活动不存在")                                                  \
    X(METHOD_NOT_ALLOWED, 405, "method not allowed", "不支持该请求方法")                                 \
    X(TOO_LARGE, 413, "request body too large", "请求体过大")                                            \
    X(UNAVAILABLE, 503, "stock service unavailable, please retry", "库存服务暂时不可用，请稍后重试")

#define REPLY_ENUM(name, code, message, chinese) REPLY_##name,
enum reply_status { REPLY_STATUSES(REPLY_ENUM) REPLY_STATUS_COUNT };
#undef REPLY_ENUM

/* The other words of those answers: X(name, English, Chinese). FAILED and STOCK_FAILED
 * come before the reason of a failure, as the Spring service's "秒杀失败: " + the
 * exception's message did. */
#define REPLY_PHRASES(X)                                            \
    X(ACCEPTED, "order accepted", "秒杀成功，订单处理中")           \
    X(FAILED, "seckill failed: ", "秒杀失败: ")                     \
    X(STOCK_FAILED, "failed to read the stock: ", "获取库存失败: ")

#define REPLY_ENUM(name, english, chinese) REPLY_PHRASE_##name,
enum reply_phrase { REPLY_PHRASES(REPLY_ENUM) REPLY_PHRASE_COUNT };
#undef REPLY_ENUM

/* The language of those messages (http.language). */
enum reply_language { REPLY_LANGUAGE_EN, REPLY_LANGUAGE_ZH };
/* http.language's value: "zh" is Chinese, anything else English. */
enum reply_language reply_language_named(const char *name);

const char *reply_status_name(enum reply_status status);
int reply_status_code(enum reply_status status);
const char *reply_status_message(enum reply_status status);
/* The status's message in lang (English: reply_status_message). */
const char *reply_status_message_in(enum reply_status status, enum reply_language lang);
const char *reply_phrase(enum reply_phrase phrase, enum reply_language lang);

/* Sends `body` (a JSON text) with the given HTTP code. */
void reply_send(struct evhttp_request *req, int code, const char *body, size_t len);
/* The same, counted in the metrics under `status` rather than the one the code stands
 * for (http.refusal-status = 200 sends refusals with 200). */
void reply_send_as(struct evhttp_request *req, int code, enum reply_status status, const char *body,
                   size_t len);
/* Appends `text` to buf (len bytes used of cap) as the inside of a JSON string. Returns
 * the new length, or -1 when the buffer is full. */
int reply_append_escaped(char *buf, size_t cap, size_t len, const char *text);
/* A 200 that is not an API answer (the /metrics page, the OpenAPI document): not counted
 * in seckill_http_responses_total, whose statuses are the API's (a scrape would count
 * itself between two readings of the orders' outcomes). lent: body lives as long as the
 * process and is referenced, not copied. */
void reply_document(struct evhttp_request *req, const char *content_type, const char *body, size_t len,
                    bool lent);
/* Frees a request whose client is gone (no connection left): nothing is sent or counted. */
void reply_drop(struct evhttp_request *req);
/* Renders and frees `json`. */
void reply_json(struct evhttp_request *req, int code, struct cJSON *json);
/* A failure, with message, or the status's own when NULL. retry_after > 0 adds
 * Retry-After (seconds); extra_key/extra_value add one more string field (e.g. the
 * orderNo a DUPLICATE already holds), NULL for none. */
void reply_error(struct evhttp_request *req, enum reply_status status, const char *message,
                 int64_t retry_after, const char *extra_key, const char *extra_value);

#endif
