#include "gateway/reply.h"

#include <cjson/cJSON.h>
#include <event2/buffer.h>
#include <event2/keyvalq_struct.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "gateway/metrics.h"

static const struct {
    const char *name;
    int code;
    const char *message[2];  /* by enum reply_language */
} reply_statuses[REPLY_STATUS_COUNT] = {
#define REPLY_ENTRY(name, code, message, chinese) [REPLY_##name] = { #name, code, { message, chinese } },
    REPLY_STATUSES(REPLY_ENTRY)
#undef REPLY_ENTRY
};

static const char *const reply_phrases[REPLY_PHRASE_COUNT][2] = {
#define REPLY_ENTRY(name, english, chinese) [REPLY_PHRASE_##name] = { english, chinese },
    REPLY_PHRASES(REPLY_ENTRY)
#undef REPLY_ENTRY
};

const char *reply_status_name(enum reply_status status) { return reply_statuses[status].name; }

int reply_status_code(enum reply_status status) { return reply_statuses[status].code; }

const char *reply_status_message(enum reply_status status)
{
    return reply_statuses[status].message[REPLY_LANGUAGE_EN];
}

const char *reply_status_message_in(enum reply_status status, enum reply_language lang)
{
    return reply_statuses[status].message[lang];
}

enum reply_language reply_language_named(const char *name)
{
    return strcmp(name, "zh") == 0 ? REPLY_LANGUAGE_ZH : REPLY_LANGUAGE_EN;
}

const char *reply_phrase(enum reply_phrase phrase, enum reply_language lang)
{
    return reply_phrases[phrase][lang];
}

static const char *reason_phrase(int code)
{
    switch (code) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 409: return "Conflict";
    case 413: return "Payload Too Large";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Error";
    }
}

/* Every answer of the gateway leaves here; an API answer is counted under its status
 * (status NULL: a document, not counted). lent: body outlives the answer and is referenced,
 * not copied. */
static void send_typed(struct evhttp_request *req, int code, const char *status, const char *content_type,
                       const char *body, size_t len, bool lent)
{
    if (!req)
        return;
    if (status)
        metrics_response(code, status);
    struct evkeyvalq *headers = evhttp_request_get_output_headers(req);
    evhttp_add_header(headers, "Content-Type", content_type);
    /* evhttp 2.1 writes a HEAD answer's body after its head (without Content-Length):
     * the client would read those bytes as the start of the next answer. */
    struct evbuffer *buf = evhttp_request_get_command(req) == EVHTTP_REQ_HEAD ? NULL : evbuffer_new();
    if (buf && lent)
        evbuffer_add_reference(buf, body, len, NULL, NULL);
    else if (buf)
        evbuffer_add(buf, body, len);
    evhttp_send_reply(req, code, reason_phrase(code), buf);
    if (buf)
        evbuffer_free(buf);
}

static void send_counted(struct evhttp_request *req, int code, const char *status, const char *body,
                         size_t len)
{
    send_typed(req, code, status, "application/json", body, len, false);
}

void reply_document(struct evhttp_request *req, const char *content_type, const char *body, size_t len,
                    bool lent)
{
    send_typed(req, 200, NULL, content_type, body, len, lent);
}

void reply_drop(struct evhttp_request *req)
{
    evhttp_send_reply(req, 200, "OK", NULL);
}

/* The API status a bare code stands for, when the body was built elsewhere. */
static const char *status_of(int code)
{
    if (code == 200)
        return "OK";
    for (int i = 0; i < REPLY_STATUS_COUNT; i++)
        if (reply_statuses[i].code == code)
            return reply_statuses[i].name;
    return "ERROR";
}

void reply_send(struct evhttp_request *req, int code, const char *body, size_t len)
{
    send_counted(req, code, status_of(code), body, len);
}

void reply_send_as(struct evhttp_request *req, int code, enum reply_status status, const char *body,
                   size_t len)
{
    send_counted(req, code, reply_status_name(status), body, len);
}

static void send_json_counted(struct evhttp_request *req, int code, const char *status, cJSON *json)
{
    char *text = json ? cJSON_PrintUnformatted(json) : NULL;
    cJSON_Delete(json);
    if (!text) {
        static const char oom[] = "{\"success\":false,\"status\":\"UNAVAILABLE\",\"message\":\"out of "
        "memory\"}";
        send_counted(req, 503, "UNAVAILABLE", oom, sizeof(oom) - 1);
        return;
    }
    send_counted(req, code, status, text, strlen(text));
    cJSON_free(text);
}

void reply_json(struct evhttp_request *req, int code, cJSON *json)
{
    send_json_counted(req, code, status_of(code), json);
}

int reply_append_escaped(char *buf, size_t cap, size_t len, const char *text)
{
    static const char hex[] = "0123456789abcdef";
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        char esc[7];
        size_t n = 0;
        if (*p == '"' || *p == '\\') {
            esc[n++] = '\\';
            esc[n++] = (char)*p;
        } else if (*p < 0x20) {
            memcpy(esc, "\\u00", 4);
            esc[4] = hex[*p >> 4];
            esc[5] = hex[*p & 15];
            n = 6;
        } else {
            esc[n++] = (char)*p;
        }
        if (len + n >= cap)
            return -1;
        memcpy(buf + len, esc, n);
        len += n;
    }
    return (int)len;
}

/* Rendered by hand, not with cJSON: errors are most of the answers in a storm (sold out,
 * not started, rate limited), and four allocations per answer showed in the profile. */
void reply_error(struct evhttp_request *req, enum reply_status status, const char *message,
                 int64_t retry_after, const char *extra_key, const char *extra_value)
{
    char body[1024];
    if (!message)
        message = reply_status_message(status);
    int len = snprintf(body, sizeof(body), "{\"success\":false,\"status\":\"%s\",\"message\":\"",
                       reply_status_name(status));
    len = reply_append_escaped(body, sizeof(body), (size_t)len, message);
    if (len >= 0 && extra_key && extra_value) {
        int n = snprintf(body + len, sizeof(body) - (size_t)len, "\",\"%s\":\"", extra_key);
        len = n < 0 || (size_t)(len + n) >= sizeof(body) ? -1 : len + n;
        if (len >= 0)
            len = reply_append_escaped(body, sizeof(body), (size_t)len, extra_value);
    }
    if (len >= 0) {
        int n = retry_after > 0
                    ? snprintf(body + len, sizeof(body) - (size_t)len, "\",\"retryAfter\":%" PRId64 "}",
                               retry_after)
                    : snprintf(body + len, sizeof(body) - (size_t)len, "\"}");
        len = n < 0 || (size_t)(len + n) >= sizeof(body) ? -1 : len + n;
    }
    if (len < 0) {
        len = snprintf(body, sizeof(body), "{\"success\":false,\"status\":\"%s\",\"message\":\"error\"}",
                       reply_status_name(status));
    }
    if (retry_after > 0 && req) {
        char value[24];
        snprintf(value, sizeof(value), "%" PRId64, retry_after);
        evhttp_add_header(evhttp_request_get_output_headers(req), "Retry-After", value);
    }
    send_counted(req, reply_status_code(status), reply_status_name(status), body, (size_t)len);
}
