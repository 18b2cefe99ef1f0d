#ifndef SK_OPENAPI_H
#define SK_OPENAPI_H

#include <event2/http.h>

#include "gateway/gateway.h"

/* GET /openapi.yaml: the API's contract (docs/openapi.yaml, built in). */
void openapi_serve(struct gateway *gw, struct evhttp_request *req);

#endif
