#ifndef SK_CTLCOUPON_H
#define SK_CTLCOUPON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctl/ctlrun.h"
#include "common/usercoupon.h"

/* One coupon template as seckillctl counts it: its coupon row in MySQL (the terms are
 * couponsync_load's). What it can still give is ctlallotment's. */

/* VARCHAR(128) of utf8mb4: at most 4 bytes a character. */
#define CTLCOUPON_NAME_BYTES (128 * 4 + 1)
/* DECIMAL(5,4): the rate is kept in ten-thousandths. */
#define CTLCOUPON_RATE_ONE 10000

/* The counting part of one coupon row. */
struct ctlcoupon_row {
    int64_t id;
    char name[CTLCOUPON_NAME_BYTES];
    char type[16];          /* CASH DISCOUNT GIFT */
    char status[16];        /* ACTIVE INACTIVE EXPIRED */
    int64_t total, issued, used;
    int64_t start_ms, end_ms;
    int64_t archived_ms;    /* when its user coupons left Redis (couponarchive.h), 0: not */
};

/* Reads the row, with for_update locked FOR UPDATE (inside the caller's transaction).
 * CTLRUN_OK, or CTLRUN_FAIL after printing (a missing coupon included). */
int ctlcoupon_load(struct ctlrun *ctl, int64_t id, bool for_update, struct ctlcoupon_row *row);

/* The coupon's terms (couponsync_load) into tmpl. CTLRUN_OK, or CTLRUN_FAIL after printing
 * (a missing coupon through ctlout_missing). */
int ctlcoupon_terms(struct ctlrun *ctl, int64_t id, struct usercoupon *tmpl);

/* A rate in ten-thousandths as the column shows it: 8500 -> "0.8500". */
void ctlcoupon_rate_text(int64_t rate, char *buf, size_t len);

#endif
