#ifndef SK_REPLY_H
#define SK_REPLY_H

#include <event2/http.h>
#include <stdint.h>

struct cJSON;

/* HTTP replies of the gateway: every body is JSON with `success`, and on failure
 * `status` and `message`. The status names and their HTTP codes are fixed by the API.
 * A NULL request (already answered at its deadline or at shutdown, pending.h) is sent
 * nothing: a late callback may call these without checking. */

enum reply_status {
    REPLY_OUT_OF_STOCK,
    REPLY_DUPLICATE,
    REPLY_NOT_STARTED,
    REPLY_ENDED,
    REPLY_CANCELLED,
    REPLY_INACTIVE,
    REPLY_USED,
    REPLY_EXPIRED,
    REPLY_BELOW_MIN_ORDER,
    REPLY_RATE_LIMITED,
    REPLY_BLOCKED,
    REPLY_INVALID,
    REPLY_UNAUTHORIZED,
    REPLY_FORBIDDEN,
    REPLY_NOT_FOUND,
    REPLY_METHOD_NOT_ALLOWED,
    REPLY_TOO_LARGE,
    REPLY_UNAVAILABLE,
    REPLY_STATUS_COUNT
};

const char *reply_status_name(enum reply_status status);
int reply_status_code(enum reply_status status);

/* Sends `body` (a JSON text) with the given HTTP code. */
void reply_send(struct evhttp_request *req, int code, const char *body, size_t len);
/* The same, counted in the metrics under `status` rather than the one the code stands
 * for (http.refusal-status = 200 sends refusals with 200). */
void reply_send_as(struct evhttp_request *req, int code, enum reply_status status, const char *body, size_t len);
/* Appends `text` to buf (len bytes used of cap) as the inside of a JSON string. Returns
 * the new length, or -1 when the buffer is full. */
int reply_append_escaped(char *buf, size_t cap, size_t len, const char *text);
/* Renders and frees `json`. */
void reply_json(struct evhttp_request *req, int code, struct cJSON *json);
/* A failure. retry_after > 0 adds Retry-After (seconds); extra_key/extra_value add one
 * more string field (e.g. the orderNo a DUPLICATE already holds), NULL for none. */
void reply_error(struct evhttp_request *req, enum reply_status status, const char *message,
                 int64_t retry_after, const char *extra_key, const char *extra_value);

#endif
