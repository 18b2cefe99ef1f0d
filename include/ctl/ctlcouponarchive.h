#ifndef SK_CTLCOUPONARCHIVE_H
#define SK_CTLCOUPONARCHIVE_H

#include "ctl/ctlrun.h"

/* seckillctl coupon archive ID: the end of a coupon's life in Redis (store/couponarchive.h),
 * at once instead of consumer.coupon-archive-after-ms after its end. Refused, changing
 * nothing, while the coupon is valid (its user coupons can still be redeemed). Walks every
 * user coupon of the coupon; run again, it walks them again (removing any record written
 * back since) and says when the first walk finished. */
int ctlcouponarchive_run(struct ctlrun *ctl, int argc, char **argv);

#endif
