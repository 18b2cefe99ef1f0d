#ifndef SK_ORDERROWS_H
#define SK_ORDERROWS_H

#include <mysql.h>
#include <stddef.h>
#include <stdint.h>

#include "common/orderevent.h"
#include "consumer/batch.h"
#include "consumer/orderrun.h"
#include "consumer/sqltx.h"
#include "store/sqltext.h"

/* The rows one run of orders writes inside persist_batch's transaction: seckill_order,
 * then one user_coupon per order that has its row. */

/* An order without a coupon id (an activity warmed without one) takes its activity's:
 * *coupon_id is left as it is when the activity has no row. Returns 0 or -1. */
int orderrows_resolve_coupon(struct sqltx *tx, int64_t activity_id, int64_t *coupon_id);

/* Inserts the run's orders and user coupons, idempotently, marks in_db and coupons, and
 * adds its sold_count / issued_count increments to tx. Returns 0 or -1 with tx->err set. */
int orderrows_write(struct sqltx *tx, const struct orderrun *r, struct sqltx_stats *stats);

/* The SELECTs, built without I/O (db only quotes); the INSERTs are orderbulk's. */
/* SELECT order_no of orders[start, end) that have their row (a locking read). */
void orderrows_present_sql(struct sqltext *s, MYSQL *db, const struct orderrun *r,
                           size_t start, size_t end);
/* SELECT of the ids of the user coupons of the orders from *next on that have their row,
 * at most SQLTX_ROWS_PER_STATEMENT, LOCK IN SHARE MODE when locking; *next moves past
 * them. Returns the rows (0: nothing left). */
size_t orderrows_coupon_select_sql(struct sqltext *s, MYSQL *db, const struct orderrun *r,
                                   size_t *next, int locking);
/* Binary search of order_no in the run. Returns 0 with its index in *pos, or -1. */
int orderrows_find(const struct orderrun *r, const char *order_no, size_t *pos);

#endif
