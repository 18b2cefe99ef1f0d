#ifndef SK_READAPI_H
#define SK_READAPI_H

#include <event2/http.h>

#include "gateway/gateway.h"

/* The read-only endpoints: one Redis round trip each, answered from its callback. */

void readapi_stock(struct gateway *gw, struct evhttp_request *req, const char *activity_id);
void readapi_result(struct gateway *gw, struct evhttp_request *req);
void readapi_order(struct gateway *gw, struct evhttp_request *req, const char *order_no);
void readapi_activity(struct gateway *gw, struct evhttp_request *req, const char *activity_id);
void readapi_health(struct gateway *gw, struct evhttp_request *req);

#endif
