#ifndef SK_USEEVENT_H
#define SK_USEEVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/ucoupon.h"

/* The coupon.used message on the orders topic (key = userId, so it stays ordered after
 * the order that issued the coupon):
 *   {"type":"coupon.used","userCouponId":7,"userId":1001,"orderRef":"CHK-1",
 *    "discount":1000,"payable":9000,"usedAt":1733000000000}
 * Amounts in cents. Order events carry no "type" field. */

struct useevent {
    int64_t user_coupon_id;
    int64_t user_id;
    char order_ref[UCOUPON_REF_LEN];
    int64_t discount;
    int64_t payable;
    int64_t used_ms;
};

int useevent_encode(const struct useevent *ev, char *buf, size_t len);
int useevent_decode(const char *data, size_t len, struct useevent *ev, char *err, size_t errlen);
/* True when the message says it is a coupon.used event (cheap check before decoding). */
bool useevent_is(const char *data, size_t len);

#endif
