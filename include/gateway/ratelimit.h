#ifndef SK_RATELIMIT_H
#define SK_RATELIMIT_H

#include <event2/http.h>
#include <stdbool.h>
#include <stdint.h>

#include "gateway/gateway.h"

/* The gateway's local limits on POST /seckill/execute, before anything that costs: first
 * the client's own share (iplimit, per address), then the global token bucket. A client
 * refused for its own share takes nothing from the global bucket, so one client over
 * its share cannot make everybody else's requests 429. */

/* true when the request is refused: the caller answers RATE_LIMITED with *message and
 * Retry-After *retry_after. */
bool ratelimit_refused(struct gateway *gw, struct evhttp_request *req, const char **message,
                       int64_t *retry_after);

#endif
