#ifndef SK_CTLCOUPON_H
#define SK_CTLCOUPON_H

#include <stdbool.h>
#include <stdint.h>

#include "ctl/ctl.h"

/* seckillctl coupon ...: coupon templates and the user coupons issued from them. */

/* VARCHAR(128) of utf8mb4: at most 4 bytes a character. */
#define CTLCOUPON_NAME_BYTES (128 * 4 + 1)

/* The counting part of one coupon row (the terms are couponsync_load's). */
struct ctlcoupon_row {
    int64_t id;
    char name[CTLCOUPON_NAME_BYTES];
    char type[16];          /* CASH DISCOUNT GIFT */
    char status[16];        /* ACTIVE INACTIVE EXPIRED */
    int64_t total, issued, used;
    int64_t start_ms, end_ms;
};

/* What a coupon can still give, outside its sales or to a new sale:
 * total - issued - allotted (what its sales hold back, ctlactivity_allotted), never below 0.
 * With lock (inside the caller's transaction) the coupon's activity rows and then the
 * coupon row are locked FOR UPDATE, in the consumer's order, so that the answer holds
 * until the caller commits: grants, activity creation and the consumer's
 * issued_count += n are serialised on the coupon row. Fills row; CTL_OK, or CTL_FAIL after
 * printing (a missing coupon included). */
int ctlcoupon_grantable(struct ctl *ctl, int64_t coupon_id, int64_t now_ms, bool lock,
                        struct ctlcoupon_row *row, int64_t *allotted, int64_t *remaining);

/* coupon create: validates everything before touching MySQL, inserts one coupon row and
 * prints its id. */
int ctlcoupon_create(struct ctl *ctl, int argc, char **argv);
/* coupon grant: issues one user coupon outside a sale (see ctlcoupon.c). */
int ctlcoupon_grant(struct ctl *ctl, int argc, char **argv);
/* coupon show: terms, counts, what is left, its activities. */
int ctlcoupon_show(struct ctl *ctl, int argc, char **argv);
/* coupon warmup: republishes every user coupon of a coupon from MySQL to Redis. */
int ctlcoupon_warmup(struct ctl *ctl, int argc, char **argv);

#endif
