#include "ctl/ctlordercancel.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/bucket.h"
#include "common/clock.h"
#include "common/json.h"
#include "common/orderno.h"
#include "ctl/ctlactivity.h"
#include "ctl/ctlargs.h"
#include "ctl/ctlbuckets.h"
#include "ctl/ctlcouponrevoke.h"
#include "ctl/ctldb.h"
#include "ctl/ctlout.h"
#include "ctl/ctlredis.h"
#include "store/db.h"
#include "store/outbox.h"

struct ctlordercancel {
    char no[ORDERNO_LEN];
    int64_t activity_id, user_id, coupon_id;
    char status[16];                /* seckill_order.status: SUCCESS or CANCELLED */
    struct ctlcouponrevoke coupon;  /* the user coupon the order issued; id 0: none */
    bool sale_archived;             /* its sale's keys have left Redis */
    bool cancelled;                 /* by this run; false: cancelled before */
    const char *reason;
};

/* The order's row and the user coupon it issued; FOR UPDATE inside the transaction. */
static int ctlordercancel_read(struct ctlrun *ctl, struct ctlordercancel *o, bool lock)
{
    char *qno = ctldb_quote(ctl, o->no);
    if (!qno)
        return CTLRUN_FAIL;
    char sql[384];
    snprintf(sql, sizeof(sql), "SELECT o.user_id, o.coupon_id, o.status, uc.id FROM seckill_order o "
             "LEFT JOIN user_coupon uc ON uc.source_ref = o.order_no WHERE o.order_no = %s%s", qno,
             lock ? " FOR UPDATE" : "");
    free(qno);
    MYSQL_RES *res = ctldb_query(ctl, sql);
    if (!res)
        return CTLRUN_FAIL;
    MYSQL_ROW row = mysql_fetch_row(res);
    if (row) {
        o->user_id = ctldb_int(row[0]);
        o->coupon_id = ctldb_int(row[1]);
        snprintf(o->status, sizeof(o->status), "%s", row[2] ? row[2] : "");
        o->coupon.id = row[3] ? ctldb_int(row[3]) : 0;
    }
    mysql_free_result(res);
    if (!row)
        return ctlout_missing(ctl, "order %s has no row in MySQL: only a SUCCESS order can be cancelled "
                              "(one still PROCESSING once it is SUCCESS; a FAILED one sold nothing)", o->no);
    return CTLRUN_OK;
}

/* ordercancel.lua on the bucket of the order's user. */
static int ctlordercancel_redis(struct ctlrun *ctl, struct ctlordercancel *o)
{
    struct ctlactivity_row row;
    struct bucket_list list;
    int rc = ctlactivity_load(ctl, o->activity_id, &row);
    if (rc != CTLRUN_OK)
        return rc;
    if ((o->sale_archived = row.archived))
        return CTLRUN_OK;
    if ((rc = ctlactivity_buckets(ctl, &row, &list)) != CTLRUN_OK)
        return rc;
    struct keys_set k;
    if (ctlbuckets_keys(ctl, o->activity_id, &list, bucket_of_user(o->user_id, list.count), &k) != CTLRUN_OK)
        return CTLRUN_FAIL;
    const char *keys[] = { k.name[KEYS_ACTIVITY], k.name[KEYS_STOCK], k.name[KEYS_ORDERS] };
    const char *args[] = { o->no };
    redisReply *v = ctlredis_script(ctl, LUASCRIPT_ORDERCANCEL, 3, keys, 1, args);
    if (!v)
        return CTLRUN_FAIL;
    const char *verdict = v->type == REDIS_REPLY_ARRAY && v->elements > 0 &&
                          v->element[0]->type == REDIS_REPLY_STRING ? v->element[0]->str : "";
    const char *status = v->type == REDIS_REPLY_ARRAY && v->elements > 1 &&
                         v->element[1]->type == REDIS_REPLY_STRING ? v->element[1]->str : "";
    if (strcmp(verdict, "OK") == 0 || strcmp(verdict, "CANCELLED") == 0) {
        rc = CTLRUN_OK;
    } else if (strcmp(verdict, "ARCHIVED") == 0) {
        o->sale_archived = true;
        rc = CTLRUN_OK;
    } else if (strcmp(verdict, "NOT_SUCCESS") == 0) {
        rc = ctlout_fail(ctl, "order %s is %s in Redis, not SUCCESS: run this again once it is (its user "
                         "coupon is revoked already)", o->no, status[0] ? status : "unknown");
    } else {
        rc = ctlout_fail(ctl, "ordercancel.lua: unexpected answer");
    }
    freeReplyObject(v);
    return rc;
}

/* The MySQL half, in one transaction: the row CANCELLED, the sale's sold_count down, the
 * user coupon REVOKED with its unit back to the coupon, and their outcome events; nothing
 * when the row is CANCELLED already. */
static int ctlordercancel_tx(struct ctlrun *ctl, struct ctlordercancel *o)
{
    int rc = ctlordercancel_read(ctl, o, true);
    if (rc != CTLRUN_OK || strcmp(o->status, "CANCELLED") == 0)
        return rc;
    char *qno = ctldb_quote(ctl, o->no), *qreason = ctldb_quote(ctl, o->reason);
    if (!qno || !qreason) {
        free(qno);
        free(qreason);
        return CTLRUN_FAIL;
    }
    char sql[512];
    snprintf(sql, sizeof(sql), "UPDATE seckill_order SET status = 'CANCELLED', cancelled_at = "
             "UTC_TIMESTAMP(3), cancel_reason = %s WHERE order_no = %s", qreason, qno);
    free(qno);
    free(qreason);
    if ((rc = ctldb_exec(ctl, sql)) != CTLRUN_OK)
        return rc;
    snprintf(sql, sizeof(sql), "UPDATE seckill_activity SET sold_count = sold_count - 1 WHERE id = %" PRId64,
             o->activity_id);
    if ((rc = ctldb_exec(ctl, sql)) != CTLRUN_OK)
        return rc;
    if (o->coupon.id && (rc = ctlcouponrevoke_apply(ctl, &o->coupon)) != CTLRUN_OK)
        return rc;
    struct outbox_event ev = { .type = OUTBOX_ORDER_CANCELLED, .at_ms = clock_wall_ms(),
                               .user_id = o->user_id, .activity_id = o->activity_id,
                               .coupon_id = o->coupon_id, .user_coupon_id = o->coupon.id,
                               .note = o->reason };
    snprintf(ev.order_no, sizeof(ev.order_no), "%s", o->no);
    if ((rc = ctldb_outcomes(ctl, &ev, 1)) != CTLRUN_OK)
        return rc;
    o->cancelled = true;
    return CTLRUN_OK;
}

static int ctlordercancel_print(struct ctlrun *ctl, const struct ctlordercancel *o)
{
    if (!o->cancelled && !ctl->json)
        ctlout_note(ctl, "order %s was cancelled before: nothing changed", o->no);
    if (ctl->json) {
        cJSON *obj = cJSON_CreateObject();
        cJSON_AddStringToObject(obj, "orderNo", o->no);
        cJSON_AddNumberToObject(obj, "activityId", (double)o->activity_id);
        json_add_int(obj, "userId", o->user_id);
        cJSON_AddStringToObject(obj, "status", "CANCELLED");
        cJSON_AddBoolToObject(obj, "cancelled", o->cancelled);
        if (o->coupon.id)
            cJSON_AddNumberToObject(obj, "userCouponId", (double)o->coupon.id);
        else
            cJSON_AddNullToObject(obj, "userCouponId");
        return ctlout_json(ctl, obj);
    }
    printf("%s CANCELLED\n", o->no);
    return CTLRUN_OK;
}

int ctlordercancel_run(struct ctlrun *ctl, int argc, char **argv)
{
    struct ctlordercancel o;
    memset(&o, 0, sizeof(o));
    const char *arg;
    int rc = ctlargs_reasoned(ctl, argc, argv, &arg, &o.reason);
    if (rc != CTLRUN_OK)
        return rc;
    uint64_t id;
    if ((rc = ctlargs_order_no(ctl, arg, o.no, &id, &o.activity_id)) != CTLRUN_OK)
        return rc;
    o.coupon.reason = o.reason;
    if (!ctldb_conn(ctl) || !ctlredis_conn(ctl))
        return CTLRUN_FAIL;
    if ((rc = ctlordercancel_read(ctl, &o, false)) != CTLRUN_OK)
        return rc;
    /* Redis first, coupon then order, even for a row CANCELLED already (that run may have
     * been the one interrupted; both scripts are idempotent): once the coupon is revoked
     * there, nobody can redeem what MySQL is about to call REVOKED, and once the order is
     * CANCELLED there, no replay can turn it SUCCESS again. */
    if (o.coupon.id && ((rc = ctlcouponrevoke_load(ctl, &o.coupon)) != CTLRUN_OK ||
                        (rc = ctlcouponrevoke_mark(ctl, &o.coupon)) != CTLRUN_OK))
        return rc;
    if ((rc = ctlordercancel_redis(ctl, &o)) != CTLRUN_OK)
        return rc;
    char err[256];
    if ((rc = ctldb_exec(ctl, "START TRANSACTION")) != CTLRUN_OK)
        return rc;
    if ((rc = ctlordercancel_tx(ctl, &o)) != CTLRUN_OK || (rc = ctldb_exec(ctl, "COMMIT")) != CTLRUN_OK) {
        db_exec(ctl->db, "ROLLBACK", err, sizeof(err));
        ctlout_note(ctl, "Redis has order %s cancelled and its coupon revoked; MySQL does not yet: run this "
                    "again to finish", o.no);
        return rc;
    }
    return ctlordercancel_print(ctl, &o);
}
