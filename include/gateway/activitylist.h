#ifndef SK_ACTIVITYLIST_H
#define SK_ACTIVITYLIST_H

#include <cjson/cJSON.h>
#include <event2/http.h>
#include <stdint.h>

#include "gateway/activity.h"
#include "gateway/gateway.h"

/* GET /seckill/activities: the sales a client can count down to or buy in (pending,
 * active or paused), earliest start first, with the server's clock for countdowns. Served
 * from the gateway's activity cache without a Redis read, so a storm of clients polling
 * it before the start costs Redis nothing: stock left is as of the cache's last refresh
 * (seckill.activity-refresh-ms). At most ACTIVITYLIST_MAX sales; `truncated` says when
 * there were more. */

#define ACTIVITYLIST_MAX 500

void activitylist_serve(struct gateway *gw, struct evhttp_request *req);
/* One sale's fields, as the list and GET /seckill/activities/{id} show them: id (the
 * activity's, which a reply-built struct does not carry), name, coupon and its terms,
 * window, status (PAUSED included), stock and stock_left as the caller reckons it. */
void activitylist_sale(cJSON *j, int64_t id, const struct activity *a, int64_t stock_left, int64_t now_ms);

#endif
