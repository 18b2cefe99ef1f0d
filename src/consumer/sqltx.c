#include "consumer/sqltx.h"

#include <stdio.h>

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
