#ifndef SK_COUPONUSE_H
#define SK_COUPONUSE_H

#include <mysql.h>
#include <stddef.h>
#include <stdint.h>

#include "common/redeemevent.h"
#include "common/usercoupon.h"
#include "consumer/batch.h"
#include "consumer/sqltx.h"
#include "consumer/sqltext.h"

struct sqltx;

/* The coupon.used events of a batch inside persist_batch's transaction, after its orders
 * (so that a coupon issued earlier in the batch exists): each user coupon goes
 * UNUSED -> USED with its order reference, discount, payable amount and time. */

/* A user coupon row as the uses of this batch find it, locked (FOR UPDATE) until the
 * COMMIT, and updated as each use is applied so that a repeat later in the same batch
 * sees it USED. */
struct couponuse_row {
    int64_t id;
    int64_t user_id;
    int64_t coupon_id;
    char status[USERCOUPON_STATUS_LEN];
    char order_ref[USERCOUPON_REF_LEN];   /* "" when NULL */
};

/* A derived table of one SELECT per row: fewer than for a plain multi-row INSERT. */
#define COUPONUSE_PER_STATEMENT 1000

/* Judges uses[i] one by one in arrival order against the locked rows, writes results[i]
 * and the stats, adds used_count increments to tx, then writes the applied ones together.
 * Returns 0 or -1 with tx->err set. */
int couponuse_apply(struct sqltx *tx, const struct redeemevent *uses, size_t count,
                    struct batch_use_result *results, struct sqltx_stats *stats);

/* Decides, without writing, what one use means for the row as it stands now (u NULL:
 * there is no such row). Returns BATCH_USE_APPLIED when it is to be written; reason is
 * set for BATCH_USE_INCONSISTENT. */
enum batch_use_verdict couponuse_judge(const struct redeemevent *ev, const struct couponuse_row *u,
                                       char *reason, size_t len);

/* The statements, built without I/O (db only quotes): */
/* SELECT ... FOR UPDATE of the rows ids[0, count) name (sorted, distinct). */
void couponuse_lock_sql(struct sqltext *s, const int64_t *ids, size_t count);
/* The UPDATE of count uses of distinct user coupons: a single-row UPDATE for one, a
 * join with a derived table of their new values for more (portable: no VALUES
 * constructor). Only rows still UNUSED change. */
void couponuse_update_sql(struct sqltext *s, MYSQL *db, const struct redeemevent *const *uses,
                          size_t count);
/* Sorts ids and drops repeats; returns how many distinct ones are left at the front. */
size_t couponuse_distinct_ids(int64_t *ids, size_t count);

#endif
