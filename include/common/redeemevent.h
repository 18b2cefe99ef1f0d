#ifndef SK_REDEEMEVENT_H
#define SK_REDEEMEVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/usercoupon.h"

/* The coupon.used message on the orders topic (key = userId, so it stays ordered after
 * the order that issued the coupon):
 *   {"type":"coupon.used","userCouponId":7,"userId":1001,"orderRef":"CHK-1",
 *    "discount":1000,"payable":9000,"usedAt":1733000000000}
 * Amounts in cents. Order events carry no "type" field. */

struct redeemevent {
    int64_t user_coupon_id;
    int64_t user_id;
    char order_ref[USERCOUPON_REF_LEN];
    int64_t discount;
    int64_t payable;
    int64_t used_ms;
};

int redeemevent_encode(const struct redeemevent *ev, char *buf, size_t len);
int redeemevent_decode(const char *data, size_t len, struct redeemevent *ev, char *err, size_t errlen);
/* True when the message says it is a coupon.used event (cheap check before decoding). */
bool redeemevent_is(const char *data, size_t len);

#endif
