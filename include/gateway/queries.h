#ifndef SK_QUERIES_H
#define SK_QUERIES_H

#include <event2/http.h>

#include "gateway/gateway.h"

/* The read-only endpoints: one Redis round trip each, answered from its callback. */

void queries_stock(struct gateway *gw, struct evhttp_request *req, const char *activity_id);
void queries_result(struct gateway *gw, struct evhttp_request *req);
void queries_order(struct gateway *gw, struct evhttp_request *req, const char *order_no);
void queries_activity(struct gateway *gw, struct evhttp_request *req, const char *activity_id);
void queries_health(struct gateway *gw, struct evhttp_request *req);

#endif
