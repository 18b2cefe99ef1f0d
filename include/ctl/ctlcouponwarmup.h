#ifndef SK_CTLCOUPONWARMUP_H
#define SK_CTLCOUPONWARMUP_H

#include <stdint.h>

#include "ctl/ctlrun.h"
#include "common/usercoupon.h"

/* seckillctl coupon warmup ID: after Redis lost user coupon records, every user coupon of
 * a coupon is written again from MySQL. Records still there (perhaps used a moment ago
 * through use.lua, before the consumer recorded it in MySQL) are never overwritten.
 * coupon grant publishes its one new user coupon the same way. */

/* What one pass of user coupon rows did. */
struct ctlcouponwarmup_published {
    int64_t rows;            /* user coupons published */
    int64_t missing;         /* of them, records Redis lacked (some field newly written) */
    int64_t used;            /* USED rows */
    int64_t payable_unknown; /* of the missing, USED ones whose payable MySQL does not keep */
};

/* Publishes the user coupons of one coupon (tmpl: its terms, couponsync_load) that match
 * where ("id = 7", "1 = 1"). Streams the rows: a coupon may have millions. CTLRUN_OK, or
 * CTLRUN_FAIL after printing (out counts what was published before the error). */
int ctlcouponwarmup_publish(struct ctlrun *ctl, const struct usercoupon *tmpl, const char *where,
                            struct ctlcouponwarmup_published *out);
/* The note that used coupons were republished without their payable amount, if any were. */
void ctlcouponwarmup_note_payable(struct ctlrun *ctl, const struct ctlcouponwarmup_published *p);

int ctlcouponwarmup_run(struct ctlrun *ctl, int argc, char **argv);

#endif
