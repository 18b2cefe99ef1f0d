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

struct persist_stats {
    uint64_t orders_added;   /* seckill_order rows this transaction created */
    uint64_t coupons_added;  /* user_coupon rows it created */
    size_t conflicts;        /* orders refused: their user already holds another order of
                              * the activity (UNIQUE(user_id, activity_id)) */
};

/* Writes the orders in one transaction: seckill_order rows, one user_coupon per order, and
 * sold_count / issued_count raised by what was really added. Any order may be a replay.
 * On PERSIST_OK, in_db[i] (count entries, caller's array) says whether orders[i] has its
 * row in seckill_order now; only those may be shown as SUCCESS. Otherwise err is set. */
enum persist_result persist_batch(MYSQL *db, const struct orderevent *orders, size_t count,
                                  unsigned char *in_db, struct persist_stats *stats, char *err,
                                  size_t errlen);

/* True for client and server error codes meaning the session is lost. */
int persist_connection_lost(unsigned int mysql_error_code);

#endif
