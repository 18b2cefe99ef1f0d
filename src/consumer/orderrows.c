#include "consumer/orderrows.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "consumer/orderbulk.h"
#include "store/outbox.h"
#include "consumer/sqltx.h"

int orderrows_resolve_coupon(struct sqltx *tx, int64_t activity_id, int64_t *coupon_id)
{
    sqltext_reset(&tx->sql);
    sqltext_printf(&tx->sql, "SELECT coupon_id FROM seckill_activity WHERE id = %" PRId64,
                   activity_id);
    MYSQL_RES *res = sqltx_select(tx, "select seckill_activity");
    if (!res)
        return -1;
    MYSQL_ROW row = mysql_fetch_row(res);
    if (row && row[0])
        *coupon_id = strtoll(row[0], NULL, 10);
    mysql_free_result(res);
    return 0;
}

static size_t chunk_end(size_t start, size_t count)
{
    return count - start < SQLTX_ROWS_PER_STATEMENT ? count : start + SQLTX_ROWS_PER_STATEMENT;
}

int orderrows_find(const struct orderrun *r, const char *order_no, size_t *pos)
{
    size_t lo = 0, hi = r->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(r->orders[mid].order_no, order_no);
        if (c == 0) {
            *pos = mid;
            return 0;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

void orderrows_present_sql(struct sqltext *s, MYSQL *db, const struct orderrun *r,
                           size_t start, size_t end)
{
    sqltext_reset(s);
    sqltext_printf(s, "SELECT order_no, user_id FROM seckill_order WHERE order_no IN (");
    for (size_t i = start; i < end; i++) {
        if (i > start)
            sqltext_printf(s, ",");
        sqltext_quoted(s, db, r->orders[i].order_no);
    }
    sqltext_printf(s, ") LOCK IN SHARE MODE");
}

/* Fewer rows added than orders: a replay, a row the upsert lost (below), or an order
 * refused by UNIQUE(user, activity) or UNIQUE(order_no). Asks which orders have their row,
 * so that only those are shown as SUCCESS: with a locking read, which like the upsert reads
 * what is committed now (a snapshot read would miss a row another consumer committed after
 * this transaction's first read, and call its order a conflict). A row of the same number
 * and another user is not this order's: two gateways that held one node id at once (a
 * lease Redis lost) can issue one number to two users, in two buckets of a sale. */
static int mark_present(struct sqltx *tx, const struct orderrun *r)
{
    for (size_t start = 0; start < r->count; start += SQLTX_ROWS_PER_STATEMENT) {
        orderrows_present_sql(&tx->sql, tx->db, r, start, chunk_end(start, r->count));
        MYSQL_RES *res = sqltx_select(tx, "select seckill_order");
        if (!res)
            return -1;
        MYSQL_ROW row;
        while ((row = mysql_fetch_row(res)) != NULL) {
            size_t pos;
            if (row[0] && row[1] && orderrows_find(r, row[0], &pos) == 0 &&
                strtoll(row[1], NULL, 10) == r->orders[pos].user_id)
                r->in_db[pos] = 1;
        }
        mysql_free_result(res);
    }
    return 0;
}

size_t orderrows_coupon_select_sql(struct sqltext *s, MYSQL *db, const struct orderrun *r,
                                   size_t *next, int locking)
{
    sqltext_reset(s);
    sqltext_printf(s, "SELECT id, source_ref FROM user_coupon WHERE source_ref IN (");
    size_t rows = 0, i = *next;
    for (; i < r->count && rows < SQLTX_ROWS_PER_STATEMENT; i++) {
        if (!r->in_db[i])
            continue;
        if (rows++)
            sqltext_printf(s, ",");
        sqltext_quoted(s, db, r->orders[i].order_no);
    }
    sqltext_printf(s, locking ? ") LOCK IN SHARE MODE" : ")");
    *next = i;
    return rows;
}

/* The ids of the user coupons of this run, new or replayed, for the Redis record; locking
 * to see what other transactions committed since this one's first read. */
static int find_user_coupons(struct sqltx *tx, const struct orderrun *r, int locking)
{
    size_t next = 0;
    while (orderrows_coupon_select_sql(&tx->sql, tx->db, r, &next, locking) > 0) {
        MYSQL_RES *res = sqltx_select(tx, "select user_coupon");
        if (!res)
            return -1;
        MYSQL_ROW row;
        while ((row = mysql_fetch_row(res)) != NULL) {
            size_t pos;
            if (row[0] && row[1] && orderrows_find(r, row[1], &pos) == 0) {
                r->coupons[pos].id = strtoll(row[0], NULL, 10);
                r->coupons[pos].coupon_id = r->coupon_id;
            }
        }
        mysql_free_result(res);
    }
    return 0;
}

/* Why existence is asked again after an upsert that added fewer rows than it sent, and what
 * is missing sent again: MariaDB's array-bound INSERT ... ON DUPLICATE KEY UPDATE id=id can
 * lose rows without an error. A duplicate row that opens a new auto-increment interval
 * gives the statement back the end of the previous one; when another transaction took those
 * ids meanwhile, every later row of the array gets an id that exists, and "id=id" turns its
 * PRIMARY KEY collision into a no-op (docs/chaos.md, finding 9). A second statement of only the missing rows
 * holds no duplicate of theirs; it repeats while it adds rows. */
static void note_lost(const struct orderrun *r, const char *table, uint64_t rows)
{
    LOG_WARN("activity %" PRId64 ": MariaDB's array insert into %s lost %" PRIu64 " row(s) "
             "(auto-increment ids taken meanwhile); inserted again", r->activity_id, table, rows);
}

/* The orders still without their row after the upsert, inserted again. Those a pass cannot
 * add are held by another order of their user. */
static int insert_absent_orders(struct sqltx *tx, const struct orderrun *r, uint64_t *added)
{
    struct orderevent *again = NULL;
    int rc = 0;
    for (;;) {
        size_t absent = 0;
        for (size_t i = 0; i < r->count; i++)
            absent += !r->in_db[i];
        if (absent == 0)
            break;
        if (!again && !(again = malloc(r->count * sizeof(*again)))) {
            snprintf(tx->err, tx->errlen, "out of memory");
            rc = -1;
            break;
        }
        size_t n = 0;
        for (size_t i = 0; i < r->count; i++)
            if (!r->in_db[i])
                again[n++] = r->orders[i];
        struct orderrun a = { again, NULL, NULL, n, r->activity_id, r->coupon_id };
        uint64_t more = 0;
        if ((rc = orderbulk_insert_orders(tx, &a, &more)) != 0 || more == 0)
            break;
        note_lost(r, "seckill_order", more);
        *added += more;
        if ((rc = mark_present(tx, r)) != 0)
            break;
    }
    free(again);
    return rc;
}

/* One user coupon for each order that has its row: upserted, then looked up. When the
 * upsert added fewer rows than it sent (replays, or rows lost), the lookup is a locking read
 * and the ones it does not find are inserted again. An order can hold no other user coupon
 * (UNIQUE(source_ref) is its order number), so one that stays missing is an error (the
 * transaction is retried). */
static int issue_coupons(struct sqltx *tx, const struct orderrun *r, uint64_t *added)
{
    uint64_t sent = 0;
    for (size_t i = 0; i < r->count; i++)
        sent += r->in_db[i];
    if (orderbulk_insert_coupons(tx, r, added) != 0)
        return -1;
    /* Every row added: its own rows, which even a snapshot read sees. */
    if (*added == sent)
        return find_user_coupons(tx, r, 0);
    if (find_user_coupons(tx, r, 1) != 0)
        return -1;
    unsigned char *missing = NULL;
    int rc = 0;
    for (;;) {
        size_t n = 0;
        for (size_t i = 0; i < r->count; i++)
            n += r->in_db[i] && r->coupons[i].id == 0;
        if (n == 0)
            break;
        if (!missing && !(missing = malloc(r->count))) {
            snprintf(tx->err, tx->errlen, "out of memory");
            rc = -1;
            break;
        }
        for (size_t i = 0; i < r->count; i++)
            missing[i] = r->in_db[i] && r->coupons[i].id == 0;
        struct orderrun m = *r;
        m.in_db = missing;
        uint64_t more = 0;
        if ((rc = orderbulk_insert_coupons(tx, &m, &more)) != 0)
            break;
        if (more == 0) {
            snprintf(tx->err, tx->errlen, "insert user_coupon: %zu order(s) of activity %" PRId64
                     " still without their user coupon", n, r->activity_id);
            rc = -1;
            break;
        }
        note_lost(r, "user_coupon", more);
        *added += more;
        if ((rc = find_user_coupons(tx, r, 1)) != 0)
            break;
    }
    free(missing);
    return rc;
}

/* An order.succeeded for each order with its row. When the insert added every row they are
 * all new; otherwise some may be replays whose events were published already, and are
 * published again under the same id (outbox.h). */
static int add_events(struct sqltx *tx, const struct orderrun *r)
{
    struct outbox_event ev = { .type = OUTBOX_ORDER_SUCCEEDED, .at_ms = clock_wall_ms(),
                               .activity_id = r->activity_id, .coupon_id = r->coupon_id };
    for (size_t i = 0; i < r->count; i++) {
        if (!r->in_db[i])
            continue;
        const struct orderevent *o = &r->orders[i];
        ev.user_id = o->user_id;
        ev.accepted_ms = o->created_ms;
        ev.user_coupon_id = r->coupons[i].id;
        memcpy(ev.order_no, o->order_no, sizeof(ev.order_no));
        if (outbox_add(tx->outbox, &ev) != 0) {
            snprintf(tx->err, tx->errlen, "out of memory");
            return -1;
        }
    }
    return 0;
}

int orderrows_write(struct sqltx *tx, const struct orderrun *r, struct sqltx_stats *stats)
{
    uint64_t orders_added, coupons_added;
    if (orderbulk_insert_orders(tx, r, &orders_added) != 0)
        return -1;
    if (orders_added == r->count) {
        memset(r->in_db, 1, r->count);
    } else if (mark_present(tx, r) != 0 || insert_absent_orders(tx, r, &orders_added) != 0) {
        return -1;
    }
    for (size_t i = 0; i < r->count; i++) {
        if (r->in_db[i])
            continue;
        const struct orderevent *ev = &r->orders[i];
        LOG_ORDER_ERROR(ev->order_no, "user %" PRId64 " already holds another order of activity %" PRId64
                  " in MySQL, or this number is another user's there; not persisted", ev->user_id,
                  r->activity_id);
        stats->conflicts++;
    }
    coupons_added = 0;
    if (r->coupon_id == 0)
        LOG_WARN("activity %" PRId64 " has no coupon: no user coupon issued", r->activity_id);
    else if (issue_coupons(tx, r, &coupons_added) != 0)
        return -1;
    if (tx->outbox && add_events(tx, r) != 0)
        return -1;
    if (counters_add(&tx->activities, r->activity_id, orders_added, 0) != 0 ||
        counters_add(&tx->coupons, r->coupon_id, coupons_added, 0) != 0) {
        snprintf(tx->err, tx->errlen, "out of memory");
        return -1;
    }
    stats->orders_added += orders_added;
    stats->coupons_added += coupons_added;
    return 0;
}
