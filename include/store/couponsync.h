#ifndef SK_COUPONSYNC_H
#define SK_COUPONSYNC_H

#include <hiredis/hiredis.h>
#include <mysql.h>
#include <stddef.h>
#include <stdint.h>

#include "common/usercoupon.h"

/* The one way a user coupon gets from MySQL, where it is issued, into the Redis record
 * that GET /coupons and use.lua read (see usercoupon.h). Used by seckillctl (grant, coupon
 * warmup) and by the consumer after each order batch commit. Blocking calls: never on
 * the gateway's loop. */

/* couponsync_load found no coupon row of that id. */
#define COUPONSYNC_NOT_FOUND 1

/* Reads coupon coupon_id into the terms part of a user coupon: coupon_id, terms (amount,
 * min order, max discount in cents, rate in basis points), validity in ms, status UNUSED;
 * id and user_id are 0 for the caller to fill. DECIMAL columns are parsed as text, exactly,
 * never through a double. A row whose values do not fit the terms (a rate above 1, a
 * negative amount written by hand) is an error rather than a coupon with other terms.
 * Returns 0; COUPONSYNC_NOT_FOUND; or -1 with the reason in err. The session must run in
 * UTC (db_connect does) for the validity to come out right. */
int couponsync_load(MYSQL *db, int64_t coupon_id, struct usercoupon *template_out, char *err,
                     size_t errlen);

/* Writes the Redis record of uc: HSETNX of the terms JSON (field <id>) and, when
 * uc->status is "USED", HSETNX of <id>:used = "orderRef|discount|payable|usedAtMs" (when
 * "REVOKED", of <id>:revoked = used_ms, the time it was revoked), in one MULTI/EXEC.
 * HSETNX, because the record is written once: a live record (perhaps used
 * meanwhile through use.lua) is never overwritten, so publishing again is always safe.
 * Returns how many fields were newly written (0 when the record was complete already), or
 * -1 with the reason in err. */
int couponsync_publish(redisContext *redis, const struct usercoupon *uc, char *err, size_t errlen);

/* couponsync_publish for n records in one pipeline (HSETNX per record, MULTI/EXEC only
 * around a USED record's two fields), sent and read in slices of
 * COUPONSYNC_PIPELINE commands: one round trip per slice instead of one per record.
 * Returns how many fields were newly written, or -1 with the first problem in err (every
 * reply is still read, so the connection stays usable unless redis->err is set). */
#define COUPONSYNC_PIPELINE 1000
int couponsync_publish_many(redisContext *redis, const struct usercoupon *ucs, size_t n, char *err,
                             size_t errlen);

#endif
