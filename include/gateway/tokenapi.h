#ifndef SK_TOKENAPI_H
#define SK_TOKENAPI_H

#include <event2/http.h>

#include "gateway/gateway.h"

/* GET /seckill/token?userId=&activityId=: a one-time purchase token (purchasetoken.h),
 * only inside the sale's window, only with seckill.require-token on, and never to a user
 * or address a manual ban keeps out (bans.h: 429 BLOCKED). Issued without I/O; POST
 * /seckill/execute checks it and its script spends the nonce. */
void tokenapi_issue(struct gateway *gw, struct evhttp_request *req);

#endif
