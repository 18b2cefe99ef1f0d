#ifndef SK_HTTP_H
#define SK_HTTP_H

#include <stddef.h>

#include "gateway/gateway.h"

/* The evhttp server: listener, limits (the connection cap, the header timeout), the
 * routing table of the API, and /metrics (on the main port or a listener of its own). */

struct http;

struct http *http_new(struct gateway *gw, char *err, size_t errlen);
/* SIGTERM: close the listening socket; open connections still get answers. */
void http_stop_accepting(struct http *http);
/* Every accepted connection evhttp has not closed yet. */
size_t http_open_connections(const struct http *http);
void http_free(struct http *http);

#endif
