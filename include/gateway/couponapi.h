#ifndef SK_COUPONAPI_H
#define SK_COUPONAPI_H

#include <event2/http.h>

#include "gateway/gateway.h"

/* The user-coupon endpoints:
 *   GET  /coupons?userId=             the user's coupons with their state
 *   POST /coupons/{userCouponId}/use  redeem at checkout: userId, orderAmount (yuan), orderRef
 *   POST /coupons/{userCouponId}/refund  give it back when that checkout is refunded: userId,
 *                                     orderRef
 * Redeeming reads the coupon's record, computes the amounts with couponterms_apply, marks it
 * used with one atomic script (first orderRef wins), then produces coupon.used to Kafka
 * for the consumer to persist; the reply waits for Kafka like an order does, and a failed
 * delivery undoes the redemption. A refund runs refund.lua (only the orderRef that used
 * the coupon) and produces coupon.refunded the same way. */

void couponapi_list(struct gateway *gw, struct evhttp_request *req);
/* rest: the path after "/coupons/", i.e. "{id}/use" or "{id}/refund" */
void couponapi_post(struct gateway *gw, struct evhttp_request *req, const char *rest);

#endif
