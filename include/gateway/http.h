#ifndef SK_HTTP_H
#define SK_HTTP_H

#include <stddef.h>

#include "gateway/gateway.h"

/* The evhttp server: listener, limits, and the routing table of the API. */

struct http;

struct http *http_new(struct gateway *gw, char *err, size_t errlen);
/* SIGTERM: close the listening socket; open connections still get answers. */
void http_stop_accepting(struct http *http);
size_t http_open_connections(const struct http *http);
void http_free(struct http *http);

#endif
