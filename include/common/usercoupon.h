#ifndef SK_USERCOUPON_H
#define SK_USERCOUPON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/couponterms.h"

/* A user coupon as Redis holds it for GET /coupons and redeeming: one hash per user,
 *   seckill:ucoupon:{u<userId>}
 *     field <userCouponId>        JSON: the coupon's terms and validity, copied in when the
 *                                 coupon is issued (terms never change after creation)
 *     field <userCouponId>:used   "orderRef|discountCents|payableCents|usedAtMs", once used
 *     field <userCouponId>:pending until-ms: the redemption's coupon.used event (or the
 *                                 refund's coupon.refunded) is not yet acknowledged by Kafka
 *                                 (use.lua / refund.lua set it, the gateway clears it on the
 *                                 ack, unuse.lua / unrefund.lua with the undo)
 *     field <userCouponId>:seq    the number of its last redemption or refund (redeemevent.h)
 *     field <userCouponId>:refunded "orderRef|refundedAtMs|seq" of its last refund (refund.lua)
 *     field <userCouponId>:revoked  revokedAtMs: revoked by the shop (revoke.lua)
 * The JSON is written once (HSETNX) by the consumer after the order's MySQL commit or by
 * `seckillctl coupon grant`; only the scripts touch the :used field (the gateway's
 * ack only clears :pending), so the scripts never re-encode JSON (Redis' cjson keeps 14
 * significant digits). */

#define USERCOUPON_REF_LEN 65
#define USERCOUPON_STATUS_LEN 8
#define USERCOUPON_NAME_LEN 513   /* coupon.name: VARCHAR(128) of utf8mb4, and the NUL */

struct usercoupon {
    int64_t id;
    int64_t user_id;
    int64_t coupon_id;
    char name[USERCOUPON_NAME_LEN];       /* the coupon's; "" in a record written before it was kept */
    struct coupon_terms terms;
    int64_t start_ms;
    int64_t end_ms;
    char status[USERCOUPON_STATUS_LEN];   /* UNUSED | USED | REVOKED */
    char order_ref[USERCOUPON_REF_LEN];   /* set when USED */
    int64_t discount;                  /* cents, when USED */
    int64_t payable;
    int64_t used_ms;
};

int usercoupon_key(char *buf, size_t len, int64_t user_id);
/* Returns a malloc'ed JSON text of the terms (caller frees), or NULL. */
char *usercoupon_encode(const struct usercoupon *uc);
/* Reads the terms JSON; status starts as UNUSED. */
int usercoupon_decode(const char *data, size_t len, struct usercoupon *uc);
/* Applies the :used field: status USED with its order reference and amounts. */
int usercoupon_decode_used(const char *data, struct usercoupon *uc);
/* UNUSED, USED, REVOKED, or EXPIRED (unused past its validity) at now_ms. */
const char *usercoupon_state_at(const struct usercoupon *uc, int64_t now_ms);
/* Order references: 1..64 characters of [A-Za-z0-9_.:-]. */
bool usercoupon_valid_ref(const char *ref);

#endif
