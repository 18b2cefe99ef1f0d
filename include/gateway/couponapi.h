#ifndef SK_COUPONAPI_H
#define SK_COUPONAPI_H

#include <event2/http.h>

#include "gateway/gateway.h"

/* The user-coupon endpoints:
 *   GET  /coupons?userId=             the user's coupons with their state
 *   POST /coupons/{userCouponId}/use  redeem at checkout: userId, orderAmount (yuan), orderRef
 * Redeeming reads the coupon's record, computes the amounts with couponterms_apply, marks it
 * used with one atomic script (first orderRef wins), then produces coupon.used to Kafka
 * for the consumer to persist; the reply waits for Kafka like an order does, and a failed
 * delivery undoes the redemption. */

void couponapi_list(struct gateway *gw, struct evhttp_request *req);
/* rest: the path after "/coupons/", i.e. "{id}/use" */
void couponapi_use(struct gateway *gw, struct evhttp_request *req, const char *rest);

#endif
