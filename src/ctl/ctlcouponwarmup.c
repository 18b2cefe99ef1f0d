#include "ctl/ctlcouponwarmup.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <mysqld_error.h>
#include <stdio.h>
#include <string.h>

#include "ctl/ctlargs.h"
#include "ctl/ctlcoupon.h"
#include "ctl/ctldb.h"
#include "ctl/ctlout.h"
#include "ctl/ctlredis.h"
#include "store/couponsync.h"
#include "common/parse.h"
#include "store/sqltime.h"

/* The :used value of a USED row. user_coupon keeps order_ref, discount and used_at but
 * (schema/mysql.sql as of now) no payable amount; when a `payable` column exists it is
 * used, else 0 is written: the record must say USED (use.lua then refuses any other
 * orderRef), and only the repeat of the same orderRef reads the payable back. */
static void ctlcouponwarmup_used_fields(MYSQL_ROW r, bool has_payable, struct usercoupon *uc,
                                        struct ctlcouponwarmup_published *out, bool *payable_unknown)
{
    strcpy(uc->status, "USED");
    out->used++;
    if (r[3] && usercoupon_valid_ref(r[3]))
        snprintf(uc->order_ref, sizeof(uc->order_ref), "%s", r[3]);
    else
        strcpy(uc->order_ref, "unknown");   /* still USED: never usable again */
    if (parse_cents(r[4], &uc->discount) != 0)
        uc->discount = 0;
    uc->used_ms = ctldb_int(r[5]);
    if (!has_payable || parse_cents(r[6], &uc->payable) != 0) {
        uc->payable = 0;
        *payable_unknown = true;
    }
}

int ctlcouponwarmup_publish(struct ctlrun *ctl, const struct usercoupon *tmpl, const char *where,
                            struct ctlcouponwarmup_published *out)
{
    memset(out, 0, sizeof(*out));
    MYSQL *db = ctldb_conn(ctl);
    if (!db || !ctlredis_conn(ctl))
        return CTLRUN_FAIL;
    char sql[512];
    bool has_payable = true;
    for (;;) {
        snprintf(sql, sizeof(sql),
                 "SELECT id, user_id, status, order_ref, discount, " SQLTIME_MS("used_at") "%s "
                 "FROM user_coupon WHERE coupon_id = %" PRId64 " AND %s ORDER BY id",
                 has_payable ? ", payable" : "", tmpl->coupon_id, where);
        if (mysql_query(db, sql) == 0)
            break;
        if (!has_payable || mysql_errno(db) != ER_BAD_FIELD_ERROR)
            return ctlout_fail(ctl, "mysql: %s", mysql_error(db));
        has_payable = false;
    }
    MYSQL_RES *res = mysql_use_result(db);
    if (!res)
        return ctlout_fail(ctl, "mysql: %s", mysql_errno(db) ? mysql_error(db) : "no result");
    int rc = CTLRUN_OK;
    MYSQL_ROW r;
    while ((r = mysql_fetch_row(res))) {
        struct usercoupon uc = *tmpl;
        uc.id = ctldb_int(r[0]);
        uc.user_id = ctldb_int(r[1]);
        bool payable_unknown = false;
        if (r[2] && strcmp(r[2], "USED") == 0)
            ctlcouponwarmup_used_fields(r, has_payable, &uc, out, &payable_unknown);
        else if (r[2] && strcmp(r[2], "REVOKED") == 0)
            strcpy(uc.status, "REVOKED");   /* its revoked mark comes back with it */
        char err[256], key[64];
        usercoupon_key(key, sizeof(key), uc.user_id);
        redisContext *redis = ctlredis_for_key(ctl, key);
        if (!redis) {
            rc = CTLRUN_FAIL;
            break;
        }
        int written = couponsync_publish(redis, &uc, err, sizeof(err));
        if (written < 0) {
            rc = ctlout_fail(ctl, "user coupon %" PRId64 ": %s", uc.id, err);
            break;
        }
        out->rows++;
        if (written > 0)
            out->missing++;
        if (written > 0 && payable_unknown)
            out->payable_unknown++;
    }
    /* A stream must be read to its end before the connection can be used again. */
    while (rc != CTLRUN_OK && mysql_fetch_row(res))
        ;
    if (rc == CTLRUN_OK && mysql_errno(db))
        rc = ctlout_fail(ctl, "mysql: %s", mysql_error(db));
    mysql_free_result(res);
    return rc;
}

void ctlcouponwarmup_note_payable(struct ctlrun *ctl, const struct ctlcouponwarmup_published *p)
{
    if (p->payable_unknown > 0)
        ctlout_note(ctl, "%" PRId64 " used coupon(s) republished with payable 0.00: user_coupon keeps "
                    "no payable amount (a repeat of their orderRef answers 0.00)", p->payable_unknown);
}

/* ---- the command ---------------------------------------------------------------------- */

/* HSETNX (couponsync_publish), so a record still there is never overwritten. */
int ctlcouponwarmup_run(struct ctlrun *ctl, int argc, char **argv)
{
    int64_t id;
    int rc = ctlargs_single_id(ctl, argc, argv, "coupon id", &id);
    if (rc != CTLRUN_OK)
        return rc;
    if (!ctldb_conn(ctl) || !ctlredis_conn(ctl))
        return CTLRUN_FAIL;
    struct usercoupon tmpl;
    if (ctlcoupon_terms(ctl, id, &tmpl) != CTLRUN_OK)
        return CTLRUN_FAIL;
    struct ctlcoupon_row row;
    if (ctlcoupon_load(ctl, id, false, &row) != CTLRUN_OK)
        return CTLRUN_FAIL;
    if (row.archived_ms > 0)
        return ctlout_fail(ctl, "coupon %" PRId64 " is archived: its user coupons are in MySQL only, and "
                           "warmup writes none of them back to Redis; nothing was changed", id);
    struct ctlcouponwarmup_published pub;
    rc = ctlcouponwarmup_publish(ctl, &tmpl, "1 = 1", &pub);
    if (rc != CTLRUN_OK) {
        ctlout_note(ctl, "%" PRId64 " user coupon(s) were published before the error; warmup can be "
                    "run again", pub.rows);
        return rc;
    }
    ctlcouponwarmup_note_payable(ctl, &pub);
    if (ctl->json) {
        cJSON *obj = cJSON_CreateObject();
        cJSON_AddNumberToObject(obj, "couponId", (double)id);
        cJSON_AddNumberToObject(obj, "published", (double)pub.rows);
        cJSON_AddNumberToObject(obj, "missing", (double)pub.missing);
        cJSON_AddNumberToObject(obj, "used", (double)pub.used);
        return ctlout_json(ctl, obj);
    }
    printf("coupon %" PRId64 ": %" PRId64 " user coupons published to Redis (%" PRId64
           " were missing, %" PRId64 " used)\n", id, pub.rows, pub.missing, pub.used);
    return CTLRUN_OK;
}

