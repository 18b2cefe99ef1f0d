#ifndef SK_UCOUPON_H
#define SK_UCOUPON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/coupon.h"

/* A user coupon as Redis holds it for GET /coupons and redeeming: one hash per user,
 *   seckill:ucoupon:{u<userId>}
 *     field <userCouponId>        JSON: the coupon's terms and validity, copied in when the
 *                                 coupon is issued (terms never change after creation)
 *     field <userCouponId>:used   "orderRef|discountCents|payableCents|usedAtMs", once used
 * The JSON is written once (HSETNX) by the consumer after the order's MySQL commit or by
 * `seckillctl coupon grant`; only use.lua / unuse.lua touch the :used field, so the
 * scripts never re-encode JSON (Redis' cjson keeps 14 significant digits). */

#define UCOUPON_REF_LEN 65
#define UCOUPON_STATUS_LEN 8

struct ucoupon {
    int64_t id;
    int64_t user_id;
    int64_t coupon_id;
    struct coupon_terms terms;
    int64_t start_ms;
    int64_t end_ms;
    char status[UCOUPON_STATUS_LEN];   /* UNUSED | USED */
    char order_ref[UCOUPON_REF_LEN];   /* set when USED */
    int64_t discount;                  /* cents, when USED */
    int64_t payable;
    int64_t used_ms;
};

int ucoupon_key(char *buf, size_t len, int64_t user_id);
/* Returns a malloc'ed JSON text of the terms (caller frees), or NULL. */
char *ucoupon_encode(const struct ucoupon *uc);
/* Reads the terms JSON; status starts as UNUSED. */
int ucoupon_decode(const char *data, size_t len, struct ucoupon *uc);
/* Applies the :used field: status USED with its order reference and amounts. */
int ucoupon_decode_used(const char *data, struct ucoupon *uc);
/* UNUSED, USED, or EXPIRED (unused past its validity) at now_ms. */
const char *ucoupon_state_at(const struct ucoupon *uc, int64_t now_ms);
/* Order references: 1..64 characters of [A-Za-z0-9_.:-]. */
bool ucoupon_valid_ref(const char *ref);

#endif
