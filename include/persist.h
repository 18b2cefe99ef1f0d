#ifndef SK_PERSIST_H
#define SK_PERSIST_H

#include <mysql.h>
#include <stddef.h>
#include <stdint.h>

#include "orderevent.h"

/* The MySQL side of the order consumer: one batch of claimed orders, one transaction.
 * Idempotent: replaying a batch adds no row and leaves the counters as they were, so a
 * crash between the COMMIT and the Kafka offset commit costs nothing but the replay. */

/* Rows per INSERT: keeps each statement far below max_allowed_packet. */
#define PERSIST_ROWS_PER_STATEMENT 1000

enum persist_result {
    PERSIST_OK = 0,
    PERSIST_FAILED = -1,        /* rolled back; the connection is still usable */
    PERSIST_DISCONNECTED = -2,  /* the connection is gone: close it and connect again */
};

/* DATETIME(3) ends with the year 9999: an order accepted later cannot be stored. */
#define PERSIST_MAX_ACCEPTED_MS 253402300799999LL

/* The user coupon an order issued, for publishing it to Redis after the commit. */
struct persist_coupon {
    int64_t id;         /* user_coupon.id; 0 when none was issued */
    int64_t coupon_id;
};

struct persist_stats {
    uint64_t orders_added;   /* seckill_order rows this transaction created */
    uint64_t coupons_added;  /* user_coupon rows it created */
    size_t conflicts;        /* orders refused: their user already holds another order of
                              * the activity (UNIQUE(user_id, activity_id)) */
};

/* Writes the orders in one transaction: seckill_order rows, one user_coupon per order, and
 * sold_count / issued_count raised by what was really added. Any order may be a replay;
 * created_ms must not pass PERSIST_MAX_ACCEPTED_MS. On PERSIST_OK, for each orders[i]
 * (caller's arrays of count entries): in_db[i] says whether it has its row in
 * seckill_order now (only those may be shown as SUCCESS), coupons[i] the user coupon it
 * issued. Otherwise err is set. */
enum persist_result persist_batch(MYSQL *db, const struct orderevent *orders, size_t count,
                                  unsigned char *in_db, struct persist_coupon *coupons,
                                  struct persist_stats *stats, char *err, size_t errlen);

/* True for client and server error codes meaning the session is lost. */
int persist_connection_lost(unsigned int mysql_error_code);

#endif
