#ifndef SK_EXECUTEANSWER_H
#define SK_EXECUTEANSWER_H

#include <event2/http.h>
#include <stdint.h>

#include "common/config.h"
#include "gateway/reply.h"

/* The answers of POST /seckill/execute but its 503s (UNAVAILABLE, reply_error's). Besides
 * `success`, `status`, `message` and `orderNo` every one carries what the SeckillResult of
 * the Spring service Seckill replaces (docs/design.md) did: `userId`, `activityId` and
 * `seckillTime` (the order's accept time; for a refusal, when it was decided), null where
 * the request named no valid id. http.refusal-status = 200 sends every refusal with HTTP
 * 200, as the Spring service's controller did; UNAVAILABLE (Redis or Kafka away, a
 * timeout, shutting down) is no refusal of the request and keeps 503. */

struct executeanswer_about {
    int64_t user_id;        /* 0: not known */
    int64_t activity_id;    /* 0: not known */
    int64_t at_ms;          /* wall clock: accepted, or refused */
};

/* The HTTP code of a refusal under cfg's http.refusal-status. Pure. */
int executeanswer_code(const struct config *cfg, enum reply_status status);

/* Renders a refusal into buf: its length, or -1 when buf is too small. message NULL is the
 * status's own (reply.h); order_no (NULL for none) is the order a DUPLICATE already
 * holds. Pure. */
int executeanswer_render_refusal(char *buf, size_t cap, const struct executeanswer_about *about,
                                 enum reply_status status, const char *message, int64_t retry_after,
                                 const char *order_no);
/* Renders the answer of an accepted order; the same contract. */
int executeanswer_render_accepted(char *buf, size_t cap, const struct executeanswer_about *about,
                                  const char *order_no);

/* Sends them (a NULL request is sent nothing, like reply.h). retry_after > 0 adds
 * Retry-After. */
void executeanswer_refused(const struct config *cfg, struct evhttp_request *req,
                           const struct executeanswer_about *about, enum reply_status status,
                           const char *message, int64_t retry_after, const char *order_no);
void executeanswer_accepted(struct evhttp_request *req, const struct executeanswer_about *about,
                            const char *order_no);

#endif
