#ifndef SK_ORDERBULK_H
#define SK_ORDERBULK_H

#include <mysql.h>
#include <stddef.h>
#include <stdint.h>

#include "common/orderno.h"
#include "consumer/orderrun.h"

struct sqltx;

/* The INSERTs of orderrows as prepared statements executed with array binding (MariaDB's
 * bulk execution: one round trip and one parse for up to SQLTX_ROWS_PER_STATEMENT rows,
 * values sent binary). Still INSERT ... ON DUPLICATE KEY UPDATE id=id without
 * CLIENT_FOUND_ROWS: the server sums the affected rows of the array, a new row 1, a
 * duplicate 0, which is what orderrows counts as added. */

/* One seckill_order row as bound (row-wise: STMT_ATTR_ROW_SIZE is its size). */
struct orderbulk_order {
    char order_no[ORDERNO_LEN];
    unsigned long order_no_len;
    int64_t user_id;
    int64_t activity_id;
    int64_t user_slot;
    int64_t coupon_id;
    MYSQL_TIME accepted_at;
};

/* One user_coupon row as bound. */
struct orderbulk_coupon {
    int64_t user_id;
    int64_t coupon_id;
    char source_ref[ORDERNO_LEN];
    unsigned long source_ref_len;
};

/* The statements of one connection and the rows bound to them. Ownership: everything,
 * released by orderbulk_free; db is the caller's. Prepared on first use; a statement
 * whose connection was lost is closed and prepared again on the next use. */
struct orderbulk {
    MYSQL *db;                  /* the connection the statements were prepared on */
    unsigned long thread_id;    /* its server thread: another one after a reconnect */
    MYSQL_STMT *orders;
    MYSQL_STMT *coupons;
    struct orderbulk_order *order_rows;
    struct orderbulk_coupon *coupon_rows;
    size_t order_cap, coupon_cap;
};

/* A UTC DATETIME(3) value. Returns 0, or -1 beyond SQLTEXT_MAX_DATETIME_MS or before 1970. */
int orderbulk_datetime(int64_t ms, MYSQL_TIME *t);
/* The seckill_order rows of orders[start, end) of the run. Returns 0, or -1 for an order
 * accepted beyond DATETIME. */
int orderbulk_order_rows(const struct orderrun *r, size_t start, size_t end,
                         struct orderbulk_order *rows);
/* The user_coupon rows of the orders from *next on that have their row, at most
 * SQLTX_ROWS_PER_STATEMENT; *next moves past them. Returns the rows (0: nothing left). */
size_t orderbulk_coupon_rows(const struct orderrun *r, size_t *next,
                             struct orderbulk_coupon *rows);

/* Inserts the run's orders / the user coupons of the orders marked in_db, idempotently,
 * inside tx's transaction. *added: the rows created. Returns 0, or -1 with tx->err set. */
int orderbulk_insert_orders(struct sqltx *tx, const struct orderrun *r, uint64_t *added);
int orderbulk_insert_coupons(struct sqltx *tx, const struct orderrun *r, uint64_t *added);

void orderbulk_free(struct orderbulk *b);

#endif
