#ifndef SK_AUTH_H
#define SK_AUTH_H

#include <event2/http.h>
#include <stdint.h>

#include "common/config.h"
#include "gateway/httpparams.h"
#include "gateway/reply.h"

/* Who is asking. auth.mode=none trusts the userId parameter (benchmarks, trusted
 * clients); auth.mode=jwt takes the user from an HS256 bearer token, and a userId
 * parameter that names someone else is refused. On failure fills status (INVALID or
 * UNAUTHORIZED) and a message for the client. */
int auth_user(const struct config *cfg, struct evhttp_request *req, struct httpparams *params,
              int64_t *user_id, enum reply_status *status, char *message, size_t message_len);

#endif
