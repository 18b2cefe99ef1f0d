#include "ctl/ctlcoupon.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ctl/ctldb.h"
#include "ctl/ctlout.h"
#include "store/couponsync.h"
#include "store/sqltime.h"

int ctlcoupon_load(struct ctlrun *ctl, int64_t id, bool for_update, struct ctlcoupon_row *row)
{
    char sql[512];
    snprintf(sql, sizeof(sql),
             "SELECT name, type, status, total_count, issued_count, used_count, "
             SQLTIME_MS("start_time") ", " SQLTIME_MS("end_time") ", "
             SQLTIME_MS("archived_at") " FROM coupon WHERE id = %" PRId64
             "%s", id, for_update ? " FOR UPDATE" : "");
    MYSQL_RES *res = ctldb_query(ctl, sql);
    if (!res)
        return CTLRUN_FAIL;
    MYSQL_ROW r = mysql_fetch_row(res);
    if (!r) {
        mysql_free_result(res);
        return ctlout_missing(ctl, "coupon %" PRId64 " does not exist", id);
    }
    memset(row, 0, sizeof(*row));
    row->id = id;
    snprintf(row->name, sizeof(row->name), "%s", r[0] ? r[0] : "");
    snprintf(row->type, sizeof(row->type), "%s", r[1] ? r[1] : "");
    snprintf(row->status, sizeof(row->status), "%s", r[2] ? r[2] : "");
    row->total = ctldb_int(r[3]);
    row->issued = ctldb_int(r[4]);
    row->used = ctldb_int(r[5]);
    row->start_ms = ctldb_int(r[6]);
    row->end_ms = ctldb_int(r[7]);
    row->archived_ms = r[8] ? ctldb_int(r[8]) : 0;
    mysql_free_result(res);
    return CTLRUN_OK;
}

void ctlcoupon_rate_text(int64_t rate, char *buf, size_t len)
{
    snprintf(buf, len, "%" PRId64 ".%04" PRId64, rate / CTLCOUPON_RATE_ONE, rate % CTLCOUPON_RATE_ONE);
}

int ctlcoupon_terms(struct ctlrun *ctl, int64_t id, struct usercoupon *tmpl)
{
    MYSQL *db = ctldb_conn(ctl);
    if (!db)
        return CTLRUN_FAIL;
    char err[512];
    int rc = couponsync_load(db, id, tmpl, err, sizeof(err));
    if (rc == COUPONSYNC_NOT_FOUND)
        return ctlout_missing(ctl, "%s", err);
    if (rc != 0)
        return ctlout_fail(ctl, "%s", err);
    return CTLRUN_OK;
}
