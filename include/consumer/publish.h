#ifndef SK_PUBLISH_H
#define SK_PUBLISH_H

#include <stddef.h>
#include <stdint.h>

#include "common/usercoupon.h"

struct consumer;

/* The Redis record of each user coupon a batch issued (GET /coupons and use.lua read
 * it), written after the COMMIT and before SUCCESS shows, so that a winner who looks
 * finds the coupon too; and the used mark of each redemption the batch wrote, where Redis
 * lost it. */

#define PUBLISH_TERMS_CACHE 64   /* coupons whose terms are kept between batches */

/* The terms of one coupon, as couponsync_load read them: they never change after the
 * coupon is created, so they are read once per coupon and kept. */
struct publish_terms {
    int64_t coupon_id;
    struct usercoupon tmpl;
};

/* Ownership: records is the cache's, freed by publish_free; kept between batches. */
struct publish_cache {
    struct usercoupon *records;   /* the records of the current batch */
    size_t *owners;               /* parallel to records: the accepted order it belongs to */
    size_t records_cap;
    struct publish_terms terms[PUBLISH_TERMS_CACHE];
    size_t terms_count;
    size_t terms_next;            /* the entry a new coupon replaces when full */
};

/* A step: one pipeline per Redis master. Written once (HSETNX): a repeat changes
 * nothing. Returns 0, or -1 with err set (Redis or MySQL failed: retry). A coupon whose
 * row is missing or malformed is logged and its records skipped: no retry mends it. The
 * orders whose records a master did not take are parked (parking.h) while the lot has
 * room: the rest of the batch goes on. */
int publish_coupons(struct consumer *c, char *err, size_t errlen);
void publish_free(struct publish_cache *p);

#endif
