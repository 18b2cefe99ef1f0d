#ifndef SK_PUBLISH_H
#define SK_PUBLISH_H

#include <stddef.h>
#include <stdint.h>

#include "common/usercoupon.h"

struct consumer;
struct publish_cache;

/* The Redis record of each user coupon a batch issued (GET /coupons and use.lua read
 * it), written after the COMMIT and before SUCCESS shows, so that a winner who looks
 * finds the coupon too; and the used mark of each redemption the batch wrote, where Redis
 * lost it. */


/* A step: one pipeline per Redis master. Written once (HSETNX): a repeat changes
 * nothing. Returns 0, or -1 with err set (Redis or MySQL failed: retry). A coupon whose
 * row is missing or malformed is logged and its records skipped: no retry mends it. The
 * orders whose records a master did not take are parked (parking.h) while the lot has
 * room: the rest of the batch goes on. */
int publish_coupons(struct consumer *c, char *err, size_t errlen);
/* Frees the cache publish_coupons made (NULL: nothing). */
void publish_free(struct publish_cache *p);

#endif
