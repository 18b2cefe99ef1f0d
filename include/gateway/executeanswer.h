#ifndef SK_EXECUTEANSWER_H
#define SK_EXECUTEANSWER_H

#include <event2/http.h>
#include <stdint.h>

#include "common/config.h"
#include "gateway/reply.h"

/* The answers of POST /seckill/execute. Besides `success`, `status`, `message` and
 * `orderNo` every one but a 503 carries what the SeckillResult of the Spring service
 * Seckill replaces (docs/design.md) did: `userId`, `activityId` and `seckillTime` (the
 * order's accept time; for a refusal, when it was decided), null where the request named
 * no valid id. http.refusal-status = 200 sends every refusal with HTTP 200, as the Spring
 * service's controller did; UNAVAILABLE (Redis or Kafka away, a timeout, shutting down:
 * nothing was sold) is no refusal of the request and keeps 503, unless
 * http.unavailable-status = 200: then it is that service's answer to a failure, HTTP 200
 * with `status: FAILED` and "秒杀失败: " + the reason. http.language picks the messages'
 * language (reply.h holds them). */

struct executeanswer_about {
    int64_t user_id;        /* 0: not known */
    int64_t activity_id;    /* 0: not known */
    int64_t at_ms;          /* wall clock: accepted, or refused */
};

/* The HTTP code of a refusal under cfg's http.refusal-status. Pure. */
int executeanswer_code(const struct config *cfg, enum reply_status status);
/* The message of a refusal in lang: message (NULL: the status's own) in English; in
 * Chinese the status's Chinese message whatever the English detail said, so that the
 * Spring service's words come exactly, but for INVALID, whose detail says what to fix
 * ("请求参数无效: userId is required"). Returns message, the table's text or buf (cap
 * bytes). Pure. */
const char *executeanswer_message(enum reply_language lang, enum reply_status status, const char *message,
                                  char *buf, size_t cap);

/* Renders a refusal into buf: its length, or -1 when buf is too small. message NULL is the
 * status's own (reply.h); order_no (NULL for none) is the order a DUPLICATE already
 * holds. Pure. */
int executeanswer_render_refusal(char *buf, size_t cap, const struct executeanswer_about *about,
                                 enum reply_status status, const char *message, int64_t retry_after,
                                 const char *order_no);
/* Renders the answer of an accepted order with message; the same contract. */
int executeanswer_render_accepted(char *buf, size_t cap, const struct executeanswer_about *about,
                                  const char *message, const char *order_no);
/* Renders UNAVAILABLE as http.unavailable-status = 200 answers it: `status: FAILED`,
 * orderNo null, the message as given; the same contract. */
int executeanswer_render_failed(char *buf, size_t cap, const struct executeanswer_about *about,
                                const char *message, int64_t retry_after);

/* Sends them (a NULL request is sent nothing, like reply.h). retry_after > 0 adds
 * Retry-After. */
void executeanswer_refused(const struct config *cfg, struct evhttp_request *req,
                           const struct executeanswer_about *about, enum reply_status status,
                           const char *message, int64_t retry_after, const char *order_no);
void executeanswer_accepted(const struct config *cfg, struct evhttp_request *req,
                            const struct executeanswer_about *about, const char *order_no);
/* UNAVAILABLE for reason (NULL: the status's own): 503 with the plain error body, or
 * under http.unavailable-status = 200 the FAILED answer. Only where nothing was sold:
 * the two say the same. */
void executeanswer_unavailable(const struct config *cfg, struct evhttp_request *req,
                               const struct executeanswer_about *about, const char *reason,
                               int64_t retry_after);

#endif
