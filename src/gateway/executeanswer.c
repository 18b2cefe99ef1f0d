#include "gateway/executeanswer.h"

#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/timeparse.h"

int executeanswer_code(const struct config *cfg, enum reply_status status)
{
    if (status != REPLY_UNAVAILABLE && strcmp(cfg->http_refusal_status, "200") == 0)
        return 200;
    return reply_status_code(status);
}

const char *executeanswer_message(enum reply_language lang, enum reply_status status, const char *message,
                                  char *buf, size_t cap)
{
    if (lang == REPLY_LANGUAGE_EN)
        return message ? message : reply_status_message(status);
    const char *own = reply_status_message_in(status, lang);
    if (status != REPLY_INVALID || !message)
        return own;
    snprintf(buf, cap, "%s: %s", own, message);
    return buf;
}

/* Appends with snprintf; len stays -1 once anything did not fit. */
static int add(char *buf, size_t cap, int len, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int add(char *buf, size_t cap, int len, const char *fmt, ...)
{
    if (len < 0)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + len, cap - (size_t)len, fmt, ap);
    va_end(ap);
    return n < 0 || (size_t)(len + n) >= cap ? -1 : len + n;
}

static int add_id(char *buf, size_t cap, int len, const char *name, int64_t id)
{
    return id > 0 ? add(buf, cap, len, ",\"%s\":%" PRId64, name, id)
                  : add(buf, cap, len, ",\"%s\":null", name);
}

/* The fields every answer ends with, and the closing brace. */
static int add_about(char *buf, size_t cap, int len, const struct executeanswer_about *about)
{
    char when[32];
    if (timeparse_format(about->at_ms, when, sizeof(when)) < 0)
        return -1;
    len = add_id(buf, cap, len, "userId", about->user_id);
    len = add_id(buf, cap, len, "activityId", about->activity_id);
    return add(buf, cap, len, ",\"seckillTime\":\"%s\"}", when);
}

/* By hand, like reply_error: refusals are most of the answers in a storm. */
static int render_failure(char *buf, size_t cap, const struct executeanswer_about *about, const char *status,
                          const char *message, int64_t retry_after, const char *order_no)
{
    int len = add(buf, cap, 0, "{\"success\":false,\"status\":\"%s\",\"message\":\"", status);
    if (len >= 0)
        len = reply_append_escaped(buf, cap, (size_t)len, message);
    len = add(buf, cap, len, "\",\"orderNo\":");
    if (order_no) {
        len = add(buf, cap, len, "\"");
        if (len >= 0)
            len = reply_append_escaped(buf, cap, (size_t)len, order_no);
        len = add(buf, cap, len, "\"");
    } else {
        len = add(buf, cap, len, "null");
    }
    if (retry_after > 0)
        len = add(buf, cap, len, ",\"retryAfter\":%" PRId64, retry_after);
    return add_about(buf, cap, len, about);
}

int executeanswer_render_refusal(char *buf, size_t cap, const struct executeanswer_about *about,
                                 enum reply_status status, const char *message, int64_t retry_after,
                                 const char *order_no)
{
    return render_failure(buf, cap, about, reply_status_name(status),
                          message ? message : reply_status_message(status), retry_after, order_no);
}

int executeanswer_render_failed(char *buf, size_t cap, const struct executeanswer_about *about,
                                const char *message, int64_t retry_after)
{
    return render_failure(buf, cap, about, "FAILED", message, retry_after, NULL);
}

int executeanswer_render_accepted(char *buf, size_t cap, const struct executeanswer_about *about,
                                  const char *message, const char *order_no)
{
    int len = add(buf, cap, 0, "{\"success\":true,\"message\":\"");
    if (len >= 0)
        len = reply_append_escaped(buf, cap, (size_t)len, message);
    len = add(buf, cap, len, "\",\"orderNo\":\"");
    if (len >= 0)
        len = reply_append_escaped(buf, cap, (size_t)len, order_no);
    len = add(buf, cap, len, "\",\"status\":\"PROCESSING\"");
    return add_about(buf, cap, len, about);
}

static void add_retry_after(struct evhttp_request *req, int64_t retry_after)
{
    if (retry_after <= 0)
        return;
    char value[24];
    snprintf(value, sizeof(value), "%" PRId64, retry_after);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Retry-After", value);
}

void executeanswer_refused(const struct config *cfg, struct evhttp_request *req,
                           const struct executeanswer_about *about, enum reply_status status,
                           const char *message, int64_t retry_after, const char *order_no)
{
    if (!req)
        return;
    char body[1024], localized[512];
    message = executeanswer_message(reply_language_named(cfg->http_language), status, message, localized,
                                    sizeof(localized));
    int len = executeanswer_render_refusal(body, sizeof(body), about, status, message, retry_after, order_no);
    if (len < 0) {
        /* Only a message near the buffer's size gets here (parse errors quote the input). */
        reply_error(req, status, "request refused", retry_after, NULL, NULL);
        return;
    }
    add_retry_after(req, retry_after);
    reply_send_as(req, executeanswer_code(cfg, status), status, body, (size_t)len);
}

void executeanswer_accepted(const struct config *cfg, struct evhttp_request *req,
                            const struct executeanswer_about *about, const char *order_no)
{
    /* An order number, two ids and the message always fit. */
    char body[384];
    const char *message = reply_phrase(REPLY_PHRASE_ACCEPTED, reply_language_named(cfg->http_language));
    int len = executeanswer_render_accepted(body, sizeof(body), about, message, order_no);
    if (len < 0)
        len = snprintf(body, sizeof(body), "{\"success\":true,\"status\":\"PROCESSING\"}");
    reply_send(req, 200, body, (size_t)len);
}

void executeanswer_unavailable(const struct config *cfg, struct evhttp_request *req,
                               const struct executeanswer_about *about, const char *reason,
                               int64_t retry_after)
{
    if (!req)
        return;
    enum reply_language lang = reply_language_named(cfg->http_language);
    bool failed = strcmp(cfg->http_unavailable_status, "200") == 0;
    if (!reason)
        reason = reply_status_message(REPLY_UNAVAILABLE);
    if (lang == REPLY_LANGUAGE_EN && !failed) {
        reply_error(req, REPLY_UNAVAILABLE, reason, retry_after, NULL, NULL);
        return;
    }
    /* The reason stays the gateway's English, as the Spring service's exception message was. */
    char message[512], body[1024];
    snprintf(message, sizeof(message), "%s%s", reply_phrase(REPLY_PHRASE_FAILED, lang), reason);
    if (!failed) {
        reply_error(req, REPLY_UNAVAILABLE, message, retry_after, NULL, NULL);
        return;
    }
    int len = executeanswer_render_failed(body, sizeof(body), about, message, retry_after);
    if (len < 0)
        len = snprintf(body, sizeof(body), "{\"success\":false,\"status\":\"FAILED\",\"message\":\"\","
                       "\"orderNo\":null}");
    add_retry_after(req, retry_after);
    /* Counted as what it is, UNAVAILABLE, with the code it went with. */
    reply_send_as(req, 200, REPLY_UNAVAILABLE, body, (size_t)len);
}
