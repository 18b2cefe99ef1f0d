#ifndef SK_ORDERROWS_H
#define SK_ORDERROWS_H

#include <mysql.h>
#include <stddef.h>
#include <stdint.h>

#include "common/orderevent.h"
#include "consumer/batch.h"
#include "consumer/persist.h"
#include "consumer/sqltext.h"

struct sqltx;

/* The rows one run of orders writes inside persist_batch's transaction: seckill_order,
 * then one user_coupon per order that has its row. */

/* Orders sharing activity and coupon, sorted by order number: a slice of the batch's
 * accepted orders, with the slices of their results (written by orderrows_write). */
struct orderrows_run {
    const struct orderevent *orders;
    unsigned char *in_db;           /* parallel to orders */
    struct batch_coupon *coupons;   /* parallel to orders */
    size_t count;
    int64_t activity_id;
    int64_t coupon_id;              /* resolved: never 0 unless the activity has none */
};

/* An order without a coupon id (an activity warmed without one) takes its activity's:
 * *coupon_id is left as it is when the activity has no row. Returns 0 or -1. */
int orderrows_resolve_coupon(struct sqltx *tx, int64_t activity_id, int64_t *coupon_id);

/* Inserts the run's orders and user coupons, idempotently, marks in_db and coupons, and
 * adds its sold_count / issued_count increments to tx. Returns 0 or -1 with tx->err set. */
int orderrows_write(struct sqltx *tx, const struct orderrows_run *r, struct persist_stats *stats);

/* The SELECTs, built without I/O (db only quotes); the INSERTs are orderbulk's. */
/* SELECT order_no of orders[start, end) that have their row (a locking read). */
void orderrows_present_sql(struct sqltext *s, MYSQL *db, const struct orderrows_run *r,
                           size_t start, size_t end);
/* SELECT of the ids of the user coupons of the orders from *next on that have their row,
 * at most PERSIST_ROWS_PER_STATEMENT, LOCK IN SHARE MODE when locking; *next moves past
 * them. Returns the rows (0: nothing left). */
size_t orderrows_coupon_select_sql(struct sqltext *s, MYSQL *db, const struct orderrows_run *r,
                                   size_t *next, int locking);
/* Binary search of order_no in the run. Returns 0 with its index in *pos, or -1. */
int orderrows_find(const struct orderrows_run *r, const char *order_no, size_t *pos);

#endif
