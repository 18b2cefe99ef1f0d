#ifndef SK_COUPONARCHIVE_H
#define SK_COUPONARCHIVE_H

#include <mysql.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/redisroute.h"

/* The end of a coupon's life in Redis. Its user coupons' records (the fields <id>, <id>:used
 * and <id>:pending of seckill:ucoupon:{u<userId>}) leave Redis once the coupon's validity is
 * over, by the consumer's lifecycle pass consumer.coupon-archive-after-ms after its end or
 * by `seckillctl coupon archive`; MySQL keeps every user coupon, and coupon.archived_at
 * says the walk is done. Blocking calls: never on the gateway's loop.
 *
 * The walk reads MySQL a page at a time through the index (coupon_id, status), status by
 * status in the order a row can move (UNUSED, then EXPIRED, then USED; a row never moves
 * back), ids ascending within each: a row that changes status during the walk is met again
 * in a later status, never skipped. Removing a field is idempotent, so a walk cut short
 * (MySQL or Redis away, the process gone) is finished by starting it over. */

#define COUPONARCHIVE_PAGE 1000
#define COUPONARCHIVE_STATUSES 3

struct couponarchive_walk {
    int64_t coupon_id;
    int status;            /* index into the statuses; COUPONARCHIVE_STATUSES: walked */
    int64_t after_id;      /* the last user coupon id of that status already removed */
    int64_t user_coupons;  /* rows walked */
    int64_t fields;        /* fields removed from Redis */
};

enum couponarchive_rc {
    COUPONARCHIVE_DONE = 1,    /* walked, and coupon.archived_at set */
    COUPONARCHIVE_MORE = 0,    /* pages remain */
    COUPONARCHIVE_ERROR = -1,  /* MySQL or Redis failed: the walk goes on from where it is */
};

void couponarchive_begin(struct couponarchive_walk *w, int64_t coupon_id);

/* One page of the walk; now_ms is recorded as archived_at when it is the last one. */
int couponarchive_step(MYSQL *db, struct redisroute *redis, struct couponarchive_walk *w, int64_t now_ms,
                       char *err, size_t errlen);

/* The coupon to archive at now_ms: not archived yet and ended after_ms ago at least (never
 * before its end), the oldest end first. 1 with *id, 0 when none is due, -1 with err. */
int couponarchive_due(MYSQL *db, int64_t now_ms, int64_t after_ms, int64_t *id, char *err, size_t errlen);

/* True when a coupon that ends at end_ms is due (or was) for its archive at now_ms: the
 * consumer then writes no record of it to Redis that the walk could have passed already. */
bool couponarchive_past(int64_t end_ms, int64_t after_ms, int64_t now_ms);

#endif
