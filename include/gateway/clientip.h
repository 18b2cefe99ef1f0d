#ifndef SK_CLIENTIP_H
#define SK_CLIENTIP_H

#include <event2/http.h>
#include <stddef.h>

#include "common/config.h"

/* The client address as the API defines it: the socket peer, or the last
 * X-Forwarded-For hop when http.trust-forwarded-for is on. */

/* The rule itself, without evhttp: xff is the X-Forwarded-For header, or NULL when it is
 * absent or not trusted; peer the socket peer, or NULL when unknown. out gets the last
 * hop when it is one IPv4 or IPv6 address, else the peer, else "unknown". */
void clientip_pick(const char *xff, const char *peer, char *out, size_t outlen);

/* The same for header lines as a request holds them (all of them trusted): X-Forwarded-For
 * given on several lines counts as the lines joined in order with ",", so the last hop
 * is the last line's. */
void clientip_pick_headers(const struct evkeyvalq *headers, const char *peer, char *out, size_t outlen);

/* The same for a request, honouring http.trust-forwarded-for. */
void clientip_of(const struct config *cfg, struct evhttp_request *req, char *out, size_t outlen);

#endif
