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

/* Every answer status: X(name, HTTP code, default message). The name is the API's
 * `status`; the message is what a caller gets by passing NULL (reply_error), the one
 * clients see most for that status. */
#define REPLY_STATUSES(X)                                                              \
    X(OUT_OF_STOCK, 409, "sold out")                                                   \
    X(DUPLICATE, 409, "you already hold an order for this activity")                  \
    X(NOT_STARTED, 409, "the sale has not started")                                    \
    X(ENDED, 409, "the sale has ended")                                                \
    X(CANCELLED, 409, "the sale was cancelled")                                        \
    X(INACTIVE, 409, "the coupon of this sale is deactivated")                         \
    X(USED, 409, "coupon already used by another order")                               \
    X(EXPIRED, 409, "coupon expired")                                                  \
    X(BELOW_MIN_ORDER, 409, "order amount below the coupon's minimum")                 \
    X(RATE_LIMITED, 429, "too many requests")                                          \
    X(BLOCKED, 429, "too many attempts, temporarily blocked")                          \
    X(INVALID, 400, "invalid request")                                                 \
    X(UNAUTHORIZED, 401, "unauthorized")                                               \
    X(FORBIDDEN, 403, "forbidden")                                                     \
    X(NOT_FOUND, 404, "no such endpoint")                                              \
    X(METHOD_NOT_ALLOWED, 405, "method not allowed")                                   \
    X(TOO_LARGE, 413, "request body too large")                                        \
    X(UNAVAILABLE, 503, "stock service unavailable, please retry")

#define REPLY_ENUM(name, code, message) REPLY_##name,
enum reply_status { REPLY_STATUSES(REPLY_ENUM) REPLY_STATUS_COUNT };
#undef REPLY_ENUM

const char *reply_status_name(enum reply_status status);
int reply_status_code(enum reply_status status);
const char *reply_status_message(enum reply_status status);

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
