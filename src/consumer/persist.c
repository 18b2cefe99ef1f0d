#include "consumer/persist.h"

#include <errmsg.h>
#include <mysqld_error.h>
#include <stdio.h>
#include <string.h>

#include "consumer/couponuse.h"
#include "consumer/orderbulk.h"
#include "consumer/orderrows.h"
#include "consumer/sqltx.h"

/* The accepted orders come sorted by batch_seal (activity, coupon, order number): each
 * (activity, coupon) is one contiguous run, whose order numbers orderrows binary-searches.
 * Nothing is sorted again here. */
static int write_all(struct sqltx *tx, struct batch *b, struct persist_stats *stats)
{
    if (sqltx_simple(tx, "START TRANSACTION") != 0)
        return -1;
    for (size_t start = 0; start < b->accepted_count;) {
        size_t end = batch_coupon_run_end(b->accepted, b->accepted_count, start);
        const struct orderevent *first = &b->accepted[start];
        struct orderrows_run r = { first, b->in_db + start, b->coupons + start, end - start,
                                   first->activity_id, first->coupon_id };
        if (r.coupon_id == 0 && orderrows_resolve_coupon(tx, r.activity_id, &r.coupon_id) != 0)
            return -1;
        if (orderrows_write(tx, &r, stats) != 0)
            return -1;
        start = end;
    }
    if (couponuse_apply(tx, b->uses, b->use_count, b->use_results, stats) != 0 ||
        counters_apply(tx) != 0)
        return -1;
    return sqltx_simple(tx, "COMMIT");
}

int persist_connection_lost(unsigned int code)
{
    switch (code) {
    case CR_CONNECTION_ERROR:
    case CR_CONN_HOST_ERROR:
    case CR_SERVER_GONE_ERROR:
    case CR_SERVER_LOST:
    case CR_COMMANDS_OUT_OF_SYNC:
    case CR_SERVER_LOST_EXTENDED:
    case ER_SERVER_SHUTDOWN:
    case ER_CONNECTION_KILLED:
        return 1;
    default:
        return 0;
    }
}

static void clear_results(struct batch *b, struct persist_stats *stats)
{
    memset(stats, 0, sizeof(*stats));
    if (b->accepted_count > 0) {
        memset(b->in_db, 0, b->accepted_count);
        memset(b->coupons, 0, b->accepted_count * sizeof(*b->coupons));
    }
    if (b->use_count > 0)
        memset(b->use_results, 0, b->use_count * sizeof(*b->use_results));
}

/* The consumer has one MySQL session at a time: its prepared INSERTs are kept from batch to
 * batch (orderbulk prepares them again when the session is another one). */
static struct orderbulk bulk;

enum persist_result persist_batch(MYSQL *db, struct batch *b, struct persist_stats *stats,
                                  char *err, size_t errlen)
{
    clear_results(b, stats);
    if (b->accepted_count == 0 && b->use_count == 0)
        return PERSIST_OK;
    struct sqltx tx = { .db = db, .bulk = &bulk, .err = err, .errlen = errlen };
    enum persist_result result = PERSIST_OK;
    if (write_all(&tx, b, stats) != 0) {
        unsigned int code = tx.errcode ? tx.errcode : mysql_errno(db);
        result = PERSIST_FAILED;
        /* A session that cannot even roll back is beyond use. */
        if (persist_connection_lost(code) || mysql_query(db, "ROLLBACK") != 0)
            result = PERSIST_DISCONNECTED;
        clear_results(b, stats);
    }
    sqltx_free(&tx);
    return result;
}
