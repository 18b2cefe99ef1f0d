#ifndef SK_COUPONUSE_H
#define SK_COUPONUSE_H

#include <mysql.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/redeemevent.h"
#include "common/usercoupon.h"
#include "consumer/batch.h"
#include "consumer/sqltx.h"
#include "store/sqltext.h"

struct sqltx;

/* The coupon.used and coupon.refunded events of a batch inside persist_batch's
 * transaction, after its orders (so that a coupon issued earlier in the batch exists),
 * judged one by one in arrival order: a use takes a user coupon UNUSED -> USED with its
 * order reference, discount, payable amount and time (used_count + 1); a refund by the
 * order that used it takes it back USED -> UNUSED with those cleared and the reference
 * kept as refunded_ref (used_count - 1). An event whose seq is not above the row's
 * event_seq was applied before (a replay) and changes nothing; one above it takes the row
 * to the state it names, used_count following the row's change. Each row touched is then
 * written once, in the state its last event left it in. */

/* A user coupon row as the events of this batch find it, locked (FOR UPDATE) until the
 * COMMIT, and changed as each event is applied so that the next one of the same coupon
 * is judged against what the previous left. */
struct couponuse_row {
    int64_t id;
    int64_t user_id;
    int64_t coupon_id;
    char status[USERCOUPON_STATUS_LEN];
    char order_ref[USERCOUPON_REF_LEN];      /* "" when NULL */
    char refunded_ref[USERCOUPON_REF_LEN];   /* "" when NULL */
    int64_t seq;                             /* event_seq */
    /* Set by the events applied in this batch: */
    const struct redeemevent *use;      /* the use its USED state comes from */
    const struct redeemevent *refund;   /* the last refund */
    size_t last;                        /* index of the last event applied to it */
    bool changed;
};

/* A derived table of one SELECT per row: fewer than for a plain multi-row INSERT. */
#define COUPONUSE_PER_STATEMENT 1000

/* Judges events[i] one by one in arrival order against the locked rows, writes results[i]
 * and the stats, adds used_count changes to tx, then writes the rows changed. Returns 0
 * or -1 with tx->err set. */
int couponuse_apply(struct sqltx *tx, const struct redeemevent *events, size_t count,
                    struct batch_use_result *results, struct sqltx_stats *stats);

/* Decides, without writing, what one event means for the row as it stands now (u NULL:
 * there is no such row). Returns BATCH_USE_APPLIED when it is to be applied; reason is
 * set for BATCH_USE_INCONSISTENT. */
enum batch_use_verdict couponuse_judge(const struct redeemevent *ev, const struct couponuse_row *u,
                                       char *reason, size_t len);
/* Applies an event judged BATCH_USE_APPLIED to the row in memory; index is the event's.
 * Returns the change of used_count: +1, -1 or 0 (a use of a row used already). */
int couponuse_step(struct couponuse_row *u, const struct redeemevent *ev, size_t index);

/* The statements, built without I/O (db only quotes): */
/* SELECT ... FOR UPDATE of the rows ids[0, count) name (sorted, distinct). */
void couponuse_lock_sql(struct sqltext *s, const int64_t *ids, size_t count);
/* The UPDATE of count changed rows: a join with a derived table of their new values
 * (portable: no VALUES constructor). */
void couponuse_update_sql(struct sqltext *s, MYSQL *db, const struct couponuse_row *const *rows,
                          size_t count);
/* Sorts ids and drops repeats; returns how many distinct ones are left at the front. */
size_t couponuse_distinct_ids(int64_t *ids, size_t count);

#endif
