#ifndef SK_REDEEMEVENT_H
#define SK_REDEEMEVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/usercoupon.h"

/* The events of a user coupon's redemption on the orders topic (key = userId, so they stay
 * ordered after the order that issued the coupon and after each other):
 *   {"type":"coupon.used","userCouponId":7,"userId":1001,"orderRef":"CHK-1",
 *    "discount":1000,"payable":9000,"usedAt":1733000000000,"seq":1733000000000}
 *   {"type":"coupon.refunded","userCouponId":7,"userId":1001,"orderRef":"CHK-1",
 *    "refundedAt":1733000100000,"seq":1733000100000}
 * Amounts in cents. Order events carry no "type" field.
 * seq is the user coupon's event number, given by use.lua / refund.lua and increasing with
 * every redemption or refund of that coupon: the consumer applies an event only when its
 * seq is above the one MySQL last applied, which makes a replay change nothing. A
 * coupon.used written before seq existed has none (0) and is judged by state alone. */

enum redeemevent_kind {
    REDEEMEVENT_USED,
    REDEEMEVENT_REFUNDED,
};

struct redeemevent {
    enum redeemevent_kind kind;
    int64_t user_coupon_id;
    int64_t user_id;
    char order_ref[USERCOUPON_REF_LEN];
    int64_t discount;   /* USED only */
    int64_t payable;    /* USED only */
    int64_t used_ms;    /* usedAt, or refundedAt of a refund */
    int64_t seq;
};

int redeemevent_encode(const struct redeemevent *ev, char *buf, size_t len);
int redeemevent_decode(const char *data, size_t len, struct redeemevent *ev, char *err, size_t errlen);
/* True when the message says it is one of these events (cheap check before decoding). */
bool redeemevent_is(const char *data, size_t len);
/* "coupon.used" or "coupon.refunded". */
const char *redeemevent_type(enum redeemevent_kind kind);

#endif
