#include "consumer/sqltx.h"

#include <inttypes.h>
#include <stdio.h>

#include "common/log.h"

int sqltx_run(struct sqltx *tx, const char *what, uint64_t *affected)
{
    if (tx->sql.failed) {
        snprintf(tx->err, tx->errlen, "%s: statement not built (out of memory, or a time "
                 "beyond DATETIME)", what);
        return -1;
    }
    if (mysql_real_query(tx->db, tx->sql.data, (unsigned long)tx->sql.len) != 0) {
        tx->errcode = mysql_errno(tx->db);
        snprintf(tx->err, tx->errlen, "%s: %s (%u)", what, mysql_error(tx->db),
                 mysql_errno(tx->db));
        return -1;
    }
    if (affected)
        *affected = (uint64_t)mysql_affected_rows(tx->db);
    return 0;
}

MYSQL_RES *sqltx_select(struct sqltx *tx, const char *what)
{
    if (sqltx_run(tx, what, NULL) != 0)
        return NULL;
    MYSQL_RES *res = mysql_store_result(tx->db);
    if (!res) {
        tx->errcode = mysql_errno(tx->db);
        snprintf(tx->err, tx->errlen, "%s: %s (%u)", what, mysql_error(tx->db), mysql_errno(tx->db));
    }
    return res;
}

int sqltx_simple(struct sqltx *tx, const char *stmt)
{
    sqltext_reset(&tx->sql);
    sqltext_printf(&tx->sql, "%s", stmt);
    return sqltx_run(tx, stmt, NULL);
}

void sqltx_free(struct sqltx *tx)
{
    sqltext_free(&tx->sql);
    counters_free(&tx->activities);
    counters_free(&tx->coupons);
}

int sqltx_apply_counters(struct sqltx *tx)
{
    uint64_t n;
    counters_coalesce(&tx->activities);
    counters_coalesce(&tx->coupons);
    for (size_t i = 0; i < tx->activities.count; i++) {
        const struct counters_delta *d = &tx->activities.v[i];
        sqltext_reset(&tx->sql);
        sqltext_printf(&tx->sql,
                       "UPDATE seckill_activity SET sold_count = sold_count + %" PRId64
                       " WHERE id = %" PRId64,
                       d->first, d->id);
        if (sqltx_run(tx, "update seckill_activity", &n) != 0)
            return -1;
        if (n == 0)
            LOG_WARN("activity %" PRId64 " has no seckill_activity row: sold_count not kept",
                     d->id);
    }
    for (size_t i = 0; i < tx->coupons.count; i++) {
        const struct counters_delta *d = &tx->coupons.v[i];
        if (d->first == 0 && d->second == 0)
            continue;   /* a use and its refund in one batch */
        sqltext_reset(&tx->sql);
        sqltext_printf(&tx->sql,
                       "UPDATE coupon SET issued_count = issued_count + %" PRId64
                       ", used_count = used_count %c %" PRId64 " WHERE id = %" PRId64,
                       d->first, d->second < 0 ? '-' : '+', d->second < 0 ? -d->second : d->second,
                       d->id);
        if (sqltx_run(tx, "update coupon", &n) != 0)
            return -1;
        if (n == 0)
            LOG_WARN("coupon %" PRId64 " has no coupon row: issued_count / used_count not kept",
                     d->id);
    }
    return 0;
}
