#include "consumer/persist.h"

#include <errmsg.h>
#include <mysqld_error.h>
#include <stdio.h>
#include <string.h>

#include "consumer/couponuse.h"
#include "consumer/orderbulk.h"
#include "consumer/orderrows.h"
#include "store/outbox.h"
#include "consumer/split.h"
#include "consumer/sqlerror.h"
#include "consumer/sqltx.h"

/* The items of a batch as split numbers them: accepted[0, A) then uses[0, U). A range of
 * items is a slice of the sorted accepted orders and a slice of the uses in arrival
 * order, so each keeps the order the code below relies on. */
struct slice {
    size_t order_lo, order_hi;
    size_t use_lo, use_hi;
};

static struct slice slice_of(const struct batch *b, size_t lo, size_t hi)
{
    size_t a = b->accepted_count;
    return (struct slice){ lo < a ? lo : a, hi < a ? hi : a, lo > a ? lo - a : 0,
                           hi > a ? hi - a : 0 };
}

/* The accepted orders come sorted by batch_seal (activity, coupon, order number): each
 * (activity, coupon) is one contiguous run, whose order numbers orderrows binary-searches.
 * Nothing is sorted again here. */
static int write_slice(struct sqltx *tx, struct batch *b, struct slice s,
                       struct sqltx_stats *stats)
{
    if (sqltx_simple(tx, "START TRANSACTION") != 0)
        return -1;
    const struct orderevent *orders = b->accepted + s.order_lo;
    size_t count = s.order_hi - s.order_lo;
    for (size_t start = 0; start < count;) {
        size_t end = batch_coupon_run_end(orders, count, start);
        const struct orderevent *first = &orders[start];
        size_t at = s.order_lo + start;
        struct orderrun r = { first, b->in_db + at, b->coupons + at, end - start,
                                   first->activity_id, first->coupon_id };
        if (r.coupon_id == 0 && orderrows_resolve_coupon(tx, r.activity_id, &r.coupon_id) != 0)
            return -1;
        if (orderrows_write(tx, &r, stats) != 0)
            return -1;
        start = end;
    }
    size_t uses = s.use_hi - s.use_lo;
    if ((uses > 0 && couponuse_apply(tx, b->uses + s.use_lo, uses, b->use_results + s.use_lo,
                                     stats) != 0) ||
        (tx->outbox && outbox_write(tx->db, tx->outbox, tx->err, tx->errlen) != 0) ||
        sqltx_apply_counters(tx) != 0)
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

static void clear_slice(struct batch *b, struct slice s)
{
    size_t orders = s.order_hi - s.order_lo, uses = s.use_hi - s.use_lo;
    if (orders > 0) {
        memset(b->in_db + s.order_lo, 0, orders);
        memset(b->coupons + s.order_lo, 0, orders * sizeof(*b->coupons));
    }
    if (uses > 0)
        memset(b->use_results + s.use_lo, 0, uses * sizeof(*b->use_results));
}

/* Everything but what earlier attempts carried. */
static void clear_results(struct batch *b, struct sqltx_stats *stats)
{
    struct sqltx_stats keep = { .carried = stats->carried };
    *stats = keep;
    if (b->accepted_count > 0 || b->use_count > 0)
        clear_slice(b, slice_of(b, 0, b->accepted_count + b->use_count));
    batch_clear_refusals(b);
}

static void add_stats(struct sqltx_stats *to, const struct sqltx_stats *s)
{
    to->orders_added += s->orders_added;
    to->coupons_added += s->coupons_added;
    to->conflicts += s->conflicts;
    to->uses_applied += s->uses_applied;
    to->uses_repeated += s->uses_repeated;
    to->uses_inconsistent += s->uses_inconsistent;
}

/* The consumer has one MySQL session at a time: its prepared INSERTs are kept from batch to
 * batch (orderbulk prepares them again when the session is another one). */
static struct orderbulk bulk;
/* The outcome events of the transaction being written, kept for its allocation. */
static struct outbox events;

/* One persist_batch call, as the context of split's callbacks. */
struct attempt {
    MYSQL *db;
    struct batch *b;
    bool outcomes;
    struct sqltx_stats *stats;    /* of the transactions committed */
    enum persist_result failure;    /* what the write that FAILED says */
    char why[512];                  /* the last failed write's error */
    unsigned int code;              /* and its MySQL error code */
};

static enum split_outcome write_items(void *ctx, size_t lo, size_t hi)
{
    struct attempt *a = ctx;
    struct slice s = slice_of(a->b, lo, hi);
    struct sqltx_stats st;
    memset(&st, 0, sizeof(st));
    struct sqltx tx = { .db = a->db, .bulk = &bulk, .err = a->why, .errlen = sizeof(a->why),
                        .outbox = a->outcomes ? &events : NULL };
    outbox_reset(&events);
    enum split_outcome out = SPLIT_WRITTEN;
    if (write_slice(&tx, a->b, s, &st) == 0) {
        add_stats(a->stats, &st);
    } else {
        a->code = tx.errcode ? tx.errcode : mysql_errno(a->db);
        clear_slice(a->b, s);
        /* A session that cannot even roll back is beyond use. */
        if (persist_connection_lost(a->code) || mysql_query(a->db, "ROLLBACK") != 0) {
            a->failure = PERSIST_DISCONNECTED;
            out = SPLIT_FAILED;
        } else if (sqlerror_deterministic(a->code)) {
            out = SPLIT_REFUSED;
        } else {
            a->failure = PERSIST_FAILED;
            out = SPLIT_FAILED;
        }
    }
    sqltx_free(&tx);
    return out;
}

static int set_aside(void *ctx, size_t i)
{
    struct attempt *a = ctx;
    struct batch *b = a->b;
    char reason[BATCH_ERROR_LEN];
    snprintf(reason, sizeof(reason), "refused by MySQL (error %u): %.210s", a->code,
             a->why);
    if (i < b->accepted_count) {
        if (batch_refuse_order(b, i, reason) != 0) {
            snprintf(a->why, sizeof(a->why), "out of memory");
            a->failure = PERSIST_FAILED;
            return -1;
        }
        /* The sale's every unit is in MySQL: after a Redis failover that lost writes,
         * this order's unit is one a forgotten order already holds. */
        if (strstr(a->why, "activity_sold_within_stock"))
            b->refused[i] = BATCH_REFUSED_SOLD_OUT;
        a->stats->orders_refused++;
        return 0;
    }
    struct batch_use_result *r = &b->use_results[i - b->accepted_count];
    r->verdict = BATCH_USE_REFUSED;
    snprintf(r->reason, sizeof(r->reason), "%s", reason);
    a->stats->uses_refused++;
    return 0;
}

enum persist_result persist_batch(MYSQL *db, struct batch *b, bool outcomes,
                                  struct sqltx_stats *stats, char *err, size_t errlen)
{
    clear_results(b, stats);
    if (b->accepted_count == 0 && b->use_count == 0)
        return PERSIST_OK;
    struct attempt a = { .db = db, .b = b, .outcomes = outcomes, .stats = stats,
                         .failure = PERSIST_OK };
    a.why[0] = '\0';
    struct split_stats sp;
    if (split_run(b->accepted_count + b->use_count, write_items, set_aside, &a, &sp) != 0) {
        snprintf(err, errlen, "%s", a.why);
        stats->carried.orders_added += stats->orders_added;
        stats->carried.coupons_added += stats->coupons_added;
        stats->carried.uses_applied += stats->uses_applied;
        clear_results(b, stats);
        return a.failure == PERSIST_OK ? PERSIST_FAILED : a.failure;
    }
    stats->transactions = sp.transactions;
    /* The carried uses were found applied already by the same order reference. */
    size_t again = stats->carried.uses_applied;
    stats->uses_repeated -= again < stats->uses_repeated ? again : stats->uses_repeated;
    stats->orders_added += stats->carried.orders_added;
    stats->coupons_added += stats->carried.coupons_added;
    stats->uses_applied += again;
    memset(&stats->carried, 0, sizeof(stats->carried));
    return PERSIST_OK;
}
