#ifndef SK_PERSIST_H
#define SK_PERSIST_H

#include <mysql.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "consumer/batch.h"
#include "store/sqltext.h"
#include "consumer/sqltx.h"

/* The MySQL side of the order consumer: one batch of claimed orders and coupon.used
 * events, one transaction. Idempotent: replaying a batch adds no row, changes no row and
 * leaves the counters as they were, so a crash between the COMMIT and the Kafka offset
 * commit costs nothing but the replay. */


enum persist_result {
    PERSIST_OK = 0,
    PERSIST_FAILED = -1,        /* rolled back; the connection is still usable */
    PERSIST_DISCONNECTED = -2,  /* the connection is gone: close it and connect again */
};

/* DATETIME(3) ends with the year 9999: an order accepted later cannot be stored. */
#define PERSIST_MAX_ACCEPTED_MS SQLTEXT_MAX_DATETIME_MS


/* Writes one sealed batch in one transaction: for b->accepted (sorted as batch_seal
 * leaves them) seckill_order rows and one user_coupon per order; then, in arrival order,
 * b->uses (user_coupon UNUSED -> USED with its order reference, discount, payable amount
 * and time); then sold_count / issued_count / used_count raised by what was really
 * changed, counter rows locked in id order. Any order or use may be a replay; created_ms
 * must not pass PERSIST_MAX_ACCEPTED_MS. With outcomes, each transaction also writes the
 * outcome events of what it changed (outbox.h): its orders' order.succeeded, its applied
 * uses' coupon.used.
 * When MySQL refuses the transaction with a deterministic error (sqlerror: a CHECK such
 * as activity_sold_within_stock, a value out of range, ...), the batch is split (split.c):
 * orders then uses, in halves, each in its own transaction, down to the single orders
 * and uses it refuses, which are set aside (b->refused and b->refusals, or
 * BATCH_USE_REFUSED) with MySQL's error; the rest is written.
 * On PERSIST_OK, for each accepted[i]: in_db[i] says whether it has its row in
 * seckill_order now (only those may be shown as SUCCESS), coupons[i] the user coupon it
 * issued, refused[i] whether MySQL refused it; use_results[i] what became of uses[i].
 * Otherwise (a transient error, at once or in the middle of a split) err is set and those
 * results are all cleared; halves of a split committed before stay committed, which a
 * retry of the whole batch replays idempotently, finding the same refusals again. */
enum persist_result persist_batch(MYSQL *db, struct batch *b, bool outcomes,
                                  struct sqltx_stats *stats, char *err, size_t errlen);

/* True for client and server error codes meaning the session is lost. */
int persist_connection_lost(unsigned int mysql_error_code);

#endif
