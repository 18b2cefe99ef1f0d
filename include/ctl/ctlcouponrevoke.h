#ifndef SK_CTLCOUPONREVOKE_H
#define SK_CTLCOUPONREVOKE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/usercoupon.h"
#include "ctl/ctlrun.h"

/* seckillctl coupon revoke USERCOUPON_ID [--reason TEXT]: takes an UNUSED (or EXPIRED)
 * user coupon back from its holder, REVOKED, its unit back to the coupon (issued_count
 * - 1). Redis first (revoke.lua: no redemption can start after it), then MySQL in one
 * transaction; a run interrupted between the two leaves a coupon nobody can redeem, and
 * running it again finishes it. A USED one is refused (refund it first); revoking again
 * answers the same. */
int ctlcouponrevoke_run(struct ctlrun *ctl, int argc, char **argv);

/* Its steps, for another command that takes a user coupon back (order cancel). */
struct ctlcouponrevoke {
    int64_t id, user_id, coupon_id;
    char status[USERCOUPON_STATUS_LEN];
    char order_ref[USERCOUPON_REF_LEN];
    bool archived;          /* its coupon's records have left Redis (couponarchive.h) */
    bool revoked;           /* by this run; false: revoked before */
    const char *reason;
};
/* Reads user coupon r->id (refused, printed, when missing or USED). */
int ctlcouponrevoke_load(struct ctlrun *ctl, struct ctlcouponrevoke *r);
/* The Redis half (revoke.lua, and WAIT as redis.wait-replicas asks): nothing when the
 * coupon's records left Redis. */
int ctlcouponrevoke_mark(struct ctlrun *ctl, const struct ctlcouponrevoke *r);
/* The MySQL half, inside the caller's transaction: REVOKED, issued_count - 1 and its
 * coupon.revoked outcome event, or nothing when it is REVOKED already. */
int ctlcouponrevoke_apply(struct ctlrun *ctl, struct ctlcouponrevoke *r);

#endif
