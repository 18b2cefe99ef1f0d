#include "consumer/archived.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/orderno.h"
#include "consumer/backend.h"
#include "consumer/consumer.h"
#include "store/sqltext.h"

static int archived_query_failed(struct consumer *c, char *err, size_t errlen)
{
    snprintf(err, errlen, "archived orders: mysql: %s", mysql_error(c->db));
    if (mysql_errno(c->db) == 0 || mysql_errno(c->db) >= 2000)
        backend_db_drop(c);
    return -1;
}

/* The order numbers among the archived orders of the batch that MySQL knows, as flags
 * parallel to the batch's orders. */
static int archived_known(struct consumer *c, unsigned char *known, char *err, size_t errlen)
{
    struct batch *b = &c->batch;
    struct sqltext s = { 0 };
    sqltext_printf(&s, "SELECT order_no FROM seckill_order WHERE order_no IN (");
    size_t n = 0;
    for (size_t i = 0; i < b->count; i++) {
        if (b->verdicts[i] != BATCH_ARCHIVED)
            continue;
        sqltext_printf(&s, "%s", n++ ? ", " : "");
        sqltext_quoted(&s, c->db, b->orders[i].order_no);
    }
    /* The same list once more, for the table of FAILED orders. */
    sqltext_printf(&s, ") UNION ALL SELECT order_no FROM seckill_order_failed WHERE order_no IN (");
    n = 0;
    for (size_t i = 0; i < b->count; i++) {
        if (b->verdicts[i] != BATCH_ARCHIVED)
            continue;
        sqltext_printf(&s, "%s", n++ ? ", " : "");
        sqltext_quoted(&s, c->db, b->orders[i].order_no);
    }
    sqltext_printf(&s, ")");
    if (s.failed) {
        sqltext_free(&s);
        snprintf(err, errlen, "archived orders: out of memory");
        return -1;
    }
    int rc = mysql_query(c->db, s.data);
    sqltext_free(&s);
    if (rc != 0)
        return archived_query_failed(c, err, errlen);
    MYSQL_RES *res = mysql_store_result(c->db);
    if (!res)
        return archived_query_failed(c, err, errlen);
    MYSQL_ROW row;
    while ((row = mysql_fetch_row(res)))
        for (size_t i = 0; row[0] && i < b->count; i++)
            if (b->verdicts[i] == BATCH_ARCHIVED && strcmp(b->orders[i].order_no, row[0]) == 0)
                known[i] = 1;
    mysql_free_result(res);
    return 0;
}

int archived_settle(struct consumer *c, char *err, size_t errlen)
{
    struct batch *b = &c->batch;
    size_t archived = 0;
    for (size_t i = 0; i < b->count; i++)
        archived += b->verdicts[i] == BATCH_ARCHIVED;
    if (archived == 0)
        return 0;
    if (backend_db(c, err, errlen) != 0)
        return -1;
    unsigned char *known = calloc(b->count, 1);
    if (!known) {
        snprintf(err, errlen, "archived orders: out of memory");
        return -1;
    }
    int rc = archived_known(c, known, err, errlen);
    struct sqltext s = { 0 };
    sqltext_printf(&s, "INSERT INTO seckill_order_failed "
                       "(order_no, user_id, activity_id, reason, accepted_at, failed_at) VALUES ");
    size_t rows = 0;
    int64_t now = clock_wall_ms();
    for (size_t i = 0; rc == 0 && i < b->count; i++) {
        const struct orderevent *ev = &b->orders[i];
        if (b->verdicts[i] != BATCH_ARCHIVED)
            continue;
        if (known[i]) {
            LOG_ORDER_INFO(ev->order_no, "activity %" PRId64 " is archived: the order is final in MySQL "
                           "already", ev->activity_id);
            continue;
        }
        uint64_t id;
        int64_t order_activity;
        int64_t accepted = ev->created_ms;
        if (orderno_parse(ev->order_no, &id, &order_activity) == 0)
            accepted = (int64_t)(id >> (ORDERNO_NODE_BITS + ORDERNO_SEQ_BITS)) + ORDERNO_EPOCH_MS;
        sqltext_printf(&s, "%s(", rows++ ? ", " : "");
        sqltext_quoted(&s, c->db, ev->order_no);
        sqltext_printf(&s, ", %" PRId64 ", %" PRId64 ", 'REJECTED', ", ev->user_id, ev->activity_id);
        sqltext_datetime(&s, accepted);
        sqltext_printf(&s, ", ");
        sqltext_datetime(&s, now);
        sqltext_printf(&s, ")");
        LOG_ORDER_WARN(ev->order_no, "activity %" PRId64 " is archived and MySQL has no outcome of this "
                       "order: recorded FAILED (REJECTED)", ev->activity_id);
    }
    sqltext_printf(&s, " ON DUPLICATE KEY UPDATE id = id");
    if (rc == 0 && rows > 0) {
        if (s.failed) {
            snprintf(err, errlen, "archived orders: out of memory");
            rc = -1;
        } else if (mysql_query(c->db, s.data) != 0) {
            rc = archived_query_failed(c, err, errlen);
        }
    }
    sqltext_free(&s);
    free(known);
    return rc;
}
